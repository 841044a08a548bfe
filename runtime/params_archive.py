"""
params.npz, the params of a saved executable, read without a second copy of the weights.

The archive is an ordinary uncompressed `.npz` (numpy reads it, and `np.savez` wrote the
older ones), but `to_npz` pads each member's local header (an extra field, as Android's
zipalign does) so that every array's data starts on a 64-byte boundary of the file. `read`
then reads the whole file once into a 64-byte-aligned buffer, whose hash the caller checks,
and `arrays` answers read-only views of that buffer: the weights live once in the process.
Reading the file as bytes and letting `np.load` copy each array out of it held them twice,
and a run's peak memory was twice the weights (BERT-base: 830 MB against onnxruntime's 637).
A member that is not aligned (an archive `np.savez` wrote) or not stored is copied out alone.
"""

from __future__ import annotations

import io
import math
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

ALIGNMENT = 64  # bytes: a cache line, and the widest vector (AVX-512) a kernel loads
PADDING_ID = 0xD935  # the extra field's header id (zipalign's)
LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a zip local file header, up to its name
FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # the same params, the same bytes: no time of saving
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def to_npz(params: Mapping[str, np.ndarray]) -> bytes:
    """The params as an uncompressed .npz whose arrays each start `ALIGNMENT`-aligned."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, array in params.items():
            member = io.BytesIO()
            # Explicit, so that no parameter can be taken for the flag; `arrays` refuses pickles too.
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", FIXED_DATE)
            header = LOCAL_HEADER.size + len(info.filename.encode()) + 4
            padding = -(out.tell() + header) % ALIGNMENT
            info.extra = struct.pack("<HH", PADDING_ID, padding) + bytes(padding)
            archive.writestr(info, member.getvalue())
    return out.getvalue()


def read(path: Path) -> np.ndarray:
    """The file's bytes in one read-only buffer (uint8) that starts `ALIGNMENT`-aligned."""
    with open(path, "rb") as file:
        size = file.seek(0, io.SEEK_END)
        file.seek(0)
        raw = np.empty(size + ALIGNMENT, np.uint8)
        start = -raw.ctypes.data % ALIGNMENT
        buffer = raw[start : start + size]
        if file.readinto(buffer.data) != size:
            raise OSError(f"{path} changed size while it was read")
    buffer.flags.writeable = raw.flags.writeable = False
    return buffer


def arrays(buffer: np.ndarray) -> dict[str, np.ndarray]:
    """The archive's arrays, by name, read-only: views of `buffer` where a member is stored
    aligned, else copies. Raises ValueError (or zipfile.BadZipFile) on a malformed archive or
    an array of Python objects."""
    with zipfile.ZipFile(_Reader(buffer)) as archive:
        return {info.filename.removesuffix(".npy"): _array(archive, info, buffer) for info in archive.infolist()}


def _array(archive: zipfile.ZipFile, info: zipfile.ZipInfo, buffer: np.ndarray) -> np.ndarray:
    if info.compress_type != zipfile.ZIP_STORED:
        return _owned(np.lib.format.read_array(io.BytesIO(archive.read(info)), allow_pickle=False))
    fields = LOCAL_HEADER.unpack_from(buffer.data, info.header_offset)
    if fields[0] != b"PK\x03\x04":
        raise ValueError(f"member {info.filename} has no local header")
    start = info.header_offset + LOCAL_HEADER.size + fields[-2] + fields[-1]
    stream = io.BytesIO(buffer[start : start + min(info.file_size, 1 << 16)].tobytes())
    header = _HEADER_READERS.get(np.lib.format.read_magic(stream))
    if header is None:
        raise ValueError(f"member {info.filename} is of an .npy version this numpy does not write")
    shape, fortran, dtype = header(stream)
    if dtype.hasobject:
        raise ValueError(f"member {info.filename} holds Python objects")
    count, offset = math.prod(shape), start + stream.tell()
    if offset - start + count * dtype.itemsize != info.file_size:
        raise ValueError(f"member {info.filename} is {info.file_size} bytes, not a {shape} {dtype} array")
    array = np.frombuffer(buffer, dtype, count, offset).reshape(shape, order="F" if fortran else "C")
    return array if array.ctypes.data % ALIGNMENT == 0 else _owned(array)


def _owned(array: np.ndarray) -> np.ndarray:
    """A read-only copy of `array` that owns its memory (aligned as numpy allocates)."""
    copy = array.copy(order="K")
    copy.flags.writeable = False
    return copy


class _Reader(io.RawIOBase):
    """A read-only file over `buffer`'s bytes, uncopied: what zipfile reads the directory from."""

    def __init__(self, buffer: np.ndarray) -> None:
        self._view, self._position = buffer.data, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self._view)}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position

    def readinto(self, buffer: WriteableBuffer, /) -> int:
        out = memoryview(buffer).cast("B")
        chunk = self._view[self._position : self._position + len(out)]
        out[: len(chunk)] = chunk
        self._position += len(chunk)
        return len(chunk)
