"""What travels over HTTP, and how requests of a batch are put together and taken apart.

A request body is an `.npz` of the program's named inputs, batch axis first; an answer is an
`.npz` of its outputs, named `output_0`, `output_1`, ... in the program's result order (an
executor graph keeps no names for its results). Numpy and the standard library only: the
server's replicas and the client both use it, and neither imports Ray or the compiler here.

Each request is checked on its own (`decode`) before it joins a batch, so one bad request is
answered 400 with the reason and never fails the good requests batched with it.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from xrelay.errors import InputError

if TYPE_CHECKING:
    from xrelay.runtime import Executable

# A request's arrays, unpacked, may take at most this many bytes (a compressed .npz of zeros is
# tiny on the wire and huge in memory).
MAX_REQUEST_BYTES = 1 << 30
OUTPUT_PREFIX = "output_"
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first entry, or an empty zip


@dataclass(frozen=True)
class InputSpec:
    """One input of the program: its name, the shape it was built with (batch axis first) and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[np.generic]


@dataclass(frozen=True)
class Model:
    """What a server needs to know of an executable to check and batch requests.

    `batch_sizes` are the executable's (empty when it was built for its static batch only: then
    every request must have exactly the shapes it was built with, and runs alone); `check`
    raises the runtime's `InputError` for inputs its `run` would refuse."""

    inputs: tuple[InputSpec, ...]
    batch_sizes: tuple[int, ...]
    check: Callable[[Mapping[str, np.ndarray]], object]

    @property
    def batched(self) -> bool:
        return bool(self.batch_sizes)

    @property
    def largest_batch(self) -> int:
        """The most rows one run takes without running in pieces."""
        if self.batched:
            return max(self.batch_sizes)
        return self.inputs[0].shape[0] if self.inputs and self.inputs[0].shape else 1


def describe(exe: Executable) -> Model:
    """The inputs, batch sizes and input check of `exe` (the graph of its largest batch size
    has the inputs' per-sample shapes and dtypes)."""
    executor = exe.executor
    specs = tuple(
        InputSpec(name, executor.entries[index].shape, np.dtype(executor.entries[index].dtype))
        for name, index in executor.inputs.items()
    )
    return Model(specs, exe.batch_sizes, (exe.batched or executor).check_inputs)


def decode(body: bytes, model: Model) -> dict[str, np.ndarray]:
    """The inputs of one request, checked as the runtime checks them: an `InputError` naming
    what is wrong (not an .npz, a missing or unknown input, a wrong shape, dtype or batch)."""
    arrays = _unpack(body, model)
    model.check(arrays)
    return arrays


def _unpack(body: bytes, model: Model) -> dict[str, np.ndarray]:
    names = [spec.name for spec in model.inputs]
    if not body.startswith(ZIP_MAGIC):
        found = "a single .npy" if body.startswith(b"\x93NUMPY") else f"{len(body)} bytes that are no zip file"
        raise InputError(f"the request body must be an .npz of the inputs {', '.join(names)} (np.savez), not {found}")
    try:
        with np.load(io.BytesIO(body), allow_pickle=False) as npz:
            unpacked = sum(info.file_size for info in npz.zip.infolist())
            if unpacked > MAX_REQUEST_BYTES:
                raise InputError(f"the request's arrays take {unpacked} bytes, more than {MAX_REQUEST_BYTES}")
            return {name: npz[name] for name in npz.files}  # (`check` names a missing or unknown one)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as error:
        raise InputError(
            f"the request body must be an .npz of the inputs {', '.join(names)} (np.savez): {error}"
        ) from error


def rows(inputs: Mapping[str, np.ndarray]) -> int:
    """The batch of one checked request (1 for a program without inputs)."""
    return next((array.shape[0] for array in inputs.values() if array.ndim), 1)


def concat(requests: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Checked requests as one batch, along axis 0 in their order."""
    if len(requests) == 1:
        return dict(requests[0])
    return {name: np.concatenate([r[name] for r in requests]) for name in requests[0]}


def split(outputs: Sequence[np.ndarray], sizes: Sequence[int]) -> list[list[np.ndarray]]:
    """A batch's outputs back into each request's rows (`sizes` as `concat` joined them)."""
    if len(sizes) == 1:
        return [list(outputs)]
    bounds = np.cumsum(sizes)[:-1]
    pieces = [np.split(output, bounds) for output in outputs]
    return [[piece[i] for piece in pieces] for i in range(len(sizes))]


def encode(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Arrays as an uncompressed .npz."""
    buffer = io.BytesIO()
    np.savez(buffer, **cast(dict[str, Any], arrays))
    return buffer.getvalue()


def named_outputs(outputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """A run's results by their names in an answer."""
    return {f"{OUTPUT_PREFIX}{i}": output for i, output in enumerate(outputs)}
