"""params.npz (`xrelay.runtime.params_archive`): every array starts 64-byte aligned in the file,
the archive stays one numpy reads, and a loaded artifact's params are read-only views of the
one buffer the file was read into (the bug: `np.load` of the file's bytes copied each array,
and a run's peak memory was twice the weights)."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import xrelay
from xrelay.runtime import params_archive
from xrelay.runtime.artifact import load
from xrelay.runtime.executor import immutable

RNG = np.random.default_rng(0)
PARAMS = {
    "w": RNG.standard_normal((3, 5)).astype(np.float32),
    "odd_name.with.dots": RNG.standard_normal(7).astype(np.float32),  # lengths that misalign a plain zip
    "ids": np.arange(11, dtype=np.int64),
    "mask": np.array([True, False, True]),
    "fortran": np.asfortranarray(RNG.standard_normal((4, 3)).astype(np.float32)),
    "scalar": np.array(2.5, np.float32),
    "empty": np.zeros((0, 3), np.float32),
}


def written(tmp_path: Path, data: bytes) -> np.ndarray:
    (tmp_path / "params.npz").write_bytes(data)
    return params_archive.read(tmp_path / "params.npz")


def test_each_array_starts_aligned_in_the_file_and_numpy_reads_the_archive() -> None:
    data = params_archive.to_npz(PARAMS)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            start = data.index(b"\x93NUMPY", info.header_offset)
            header = len(np.lib.format.magic(1, 0)) + 2 + int.from_bytes(data[start + 8 : start + 10], "little")
            assert (start + header) % params_archive.ALIGNMENT == 0, info.filename
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(PARAMS)
        for name, value in PARAMS.items():
            np.testing.assert_array_equal(npz[name], value)
    assert params_archive.to_npz(PARAMS) == data  # the same params, the same bytes


def test_arrays_are_read_only_views_of_the_one_buffer(tmp_path: Path) -> None:
    buffer = written(tmp_path, params_archive.to_npz(PARAMS))
    assert buffer.ctypes.data % params_archive.ALIGNMENT == 0
    arrays = params_archive.arrays(buffer)
    for name, value in PARAMS.items():
        np.testing.assert_array_equal(arrays[name], value)
        assert arrays[name].dtype == value.dtype and arrays[name].shape == value.shape
        assert immutable(arrays[name]), name
        if value.size:
            assert np.shares_memory(arrays[name], buffer), f"{name} was copied out of the buffer"
    assert arrays["fortran"].flags.f_contiguous


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed], ids=["savez", "savez_compressed"])
def test_an_archive_numpy_wrote_still_loads_its_misaligned_arrays_copied(tmp_path: Path, save: object) -> None:
    """Artifacts saved before the aligned archive were np.savez's; any member out of line (or
    compressed) is copied out alone, read-only and aligned."""
    out = io.BytesIO()
    save(out, **PARAMS)  # type: ignore[operator]
    arrays = params_archive.arrays(written(tmp_path, out.getvalue()))
    for name, value in PARAMS.items():
        np.testing.assert_array_equal(arrays[name], value)
        assert immutable(arrays[name]) and arrays[name].ctypes.data % 4 == 0


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda data: data[: len(data) // 2],  # truncated: no central directory
        lambda data: data.replace(b"\x93NUMPY", b"\x93NUMPX", 1),  # not an .npy member
        lambda data: data.replace(b"'shape': (3, 5)", b"'shape': (9, 5)", 1),  # more than the member holds
    ],
    ids=["truncated", "bad magic", "shape beyond the member"],
)
def test_a_malformed_archive_is_an_error_not_a_wrong_array(tmp_path: Path, corrupt: object) -> None:
    data = corrupt(params_archive.to_npz(PARAMS))  # type: ignore[operator]
    with pytest.raises((ValueError, zipfile.BadZipFile)):
        params_archive.arrays(written(tmp_path, data))


def test_a_loaded_executable_runs_on_its_params_in_place(tmp_path: Path) -> None:
    """A saved and loaded dense runs as built, and its weight is a view of params.npz's buffer
    that the host device shares as it is (no copy of the weights in the process)."""
    module = xrelay.parse(
        """
        func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
          %y = relay.nn.dense %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
          func.return %y : tensor<4x16xf32>
        }
        """
    )
    w = RNG.standard_normal((16, 8)).astype(np.float32)
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    xrelay.build(module, params={"w": w}).save(tmp_path / "dense.xrelay")
    (weight,) = load(tmp_path / "dense.xrelay").params.values()
    assert immutable(weight) and weight.ctypes.data % params_archive.ALIGNMENT == 0
    owner = weight
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    assert owner.nbytes >= (tmp_path / "dense.xrelay" / "params.npz").stat().st_size, "the weight was copied"
    np.testing.assert_allclose(xrelay.runtime.load(tmp_path / "dense.xrelay").run(x=x), x @ w.T, rtol=1e-5, atol=1e-5)


PEAK_OF_A_RUN = """
import sys
from pathlib import Path
import numpy as np
import xrelay.runtime


def status_mb(field):
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field + ":"))
    return int(line.split()[1]) / 1024


before = status_mb("VmRSS")
xrelay.runtime.load(sys.argv[1]).run(x=np.ones((4, 1024), np.float32))
print(status_mb("VmHWM") - before)
"""


def test_a_run_in_a_fresh_process_holds_the_weights_once(tmp_path: Path) -> None:
    """The peak resident memory a load and a run add (as bench/zoo.py --rss measures it) is
    the weight's 32 MB once and little more: a copy of the params on load (or a float64 one)
    would add another 32 MB or more."""
    module = xrelay.parse(
        """
        func.func @main(%x: tensor<4x1024xf32>, %w: tensor<8192x1024xf32>) -> tensor<4x8192xf32> {
          %y = relay.nn.dense %x, %w : (tensor<4x1024xf32>, tensor<8192x1024xf32>) -> tensor<4x8192xf32>
          func.return %y : tensor<4x8192xf32>
        }
        """
    )
    w = RNG.standard_normal((8192, 1024)).astype(np.float32)
    xrelay.build(module, params={"w": w}).save(tmp_path / "dense.xrelay")
    command = [sys.executable, "-c", PEAK_OF_A_RUN, str(tmp_path / "dense.xrelay")]
    grown = float(subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()[-1])
    weights = w.nbytes / 2**20
    assert weights <= grown + 1 < 1.5 * weights, (
        f"a load and run grew the peak RSS by {grown:.0f} MB for {weights:.0f} MB of weights"
    )
