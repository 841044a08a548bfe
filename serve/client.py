"""A small client for `python -m xrelay.serve` (the standard library's urllib and numpy only).

from xrelay.serve.client import infer
out = infer("http://127.0.0.1:8000/", x=x)          # {"output_0": array, ...}
out = infer(url, **{"input.1": x})                  # an input whose name is no identifier
"""

from __future__ import annotations

import io
import urllib.error
import urllib.request
from typing import Any, cast

import numpy as np

from xrelay.errors import Error, InputError


def infer(url: str, timeout: float = 60.0, **inputs: Any) -> dict[str, np.ndarray]:
    """The outputs of one request with `inputs` (arrays by the program's input names, batch
    axis first). The server's 4xx is an `InputError` with its message, any other failure an
    `xrelay.Error`."""
    buffer = io.BytesIO()
    np.savez(buffer, **{name: cast(Any, np.asarray(value)) for name, value in inputs.items()})
    request = urllib.request.Request(
        url, data=buffer.getvalue(), method="POST", headers={"Content-Type": "application/octet-stream"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body: bytes = response.read()
    except urllib.error.HTTPError as error:
        message = error.read().decode(errors="replace")
        kind = InputError if 400 <= error.code < 500 else Error
        raise kind(f"{url} answered {error.code}: {message}") from None
    except (urllib.error.URLError, OSError) as error:
        raise Error(f"cannot reach {url}: {error}") from error
    with np.load(io.BytesIO(body), allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}
