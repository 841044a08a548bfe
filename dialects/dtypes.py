"""
The element types a relay tensor may hold, one row each: the table every stage asks.

    dtype_of(TensorType(i64, [4]))     # INT64: the row of a tensor type's element type
    dtype_named("bool").element        # i1: the builtin element type of a dtype name

As in TVM, a tensor's element type is part of its type (`tensor<1x128xi64>`), each relay op
declares the dtypes it accepts (`RelayOp.ACCEPTS`, checked by its verifier), and
`relay.cast {dtype = "float32"}` converts between them. The names are numpy's (and the graph
JSON's `dltype`): `float32` is `f32`, `int64` is `i64`, `bool` is `i1` (stored one byte per
element, 0 or 1, as numpy's bool).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType, f32, i1, i64
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type: its name, builtin type, numpy dtype and what arithmetic it has."""

    name: str  # numpy's and the graph JSON's name: "float32", "int64", "bool"
    element: Attribute  # the builtin element type: f32, i64, i1
    numpy: np.dtype
    kind: str  # "float", "int" or "bool"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"


FLOAT32 = DType("float32", f32, np.dtype(np.float32), "float")
INT64 = DType("int64", i64, np.dtype(np.int64), "int")
BOOL = DType("bool", i1, np.dtype(np.bool_), "bool")

DTYPES: tuple[DType, ...] = (FLOAT32, INT64, BOOL)
DTYPE_NAMES: tuple[str, ...] = tuple(d.name for d in DTYPES)

# Sets of dtype names an op accepts (its `ACCEPTS`).
FLOATS = frozenset({FLOAT32.name})
NUMBERS = frozenset({FLOAT32.name, INT64.name})
ALL = frozenset(DTYPE_NAMES)
BOOLS = frozenset({BOOL.name})

_BY_NAME = {d.name: d for d in DTYPES}


def dtype_named(name: str) -> DType | None:
    """The row named `name` ("float32", "int64", "bool"), or None."""
    return _BY_NAME.get(name)


def dtype_of_element(element: Attribute) -> DType | None:
    """The row of a builtin element type, or None for one relay tensors do not hold."""
    return next((d for d in DTYPES if d.element == element), None)


def dtype_of_numpy(dtype: np.dtype) -> DType | None:
    """The row of a numpy dtype, or None."""
    return next((d for d in DTYPES if d.numpy == dtype), None)


def dtype_of(ty: Attribute) -> DType | None:
    """The row of a tensor (or memref) type's element type, or None."""
    element = getattr(ty, "element_type", None)
    return None if element is None else dtype_of_element(element)


def tensor_of(dtype: DType, shape: tuple[int, ...] | list[int]) -> TensorType[Attribute]:
    return TensorType(dtype.element, list(shape))
