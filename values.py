"""
IR values as numpy arrays: a constant's value, and the inputs an entry function takes, checked
against its types. Apart from the interpreter, so that `xrelay.build` (a warm build from the
build cache above all) does not import xDSL's interpreters (0.3-0.6 s) to check a param.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from xrelay.dialects import relay
from xrelay.dialects.dtypes import dtype_of
from xrelay.errors import InputError


def entry_function(module: ModuleOp, name: str = "main") -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise InputError(f"the module has no function @{name} to run")


def check_input(name: str, ty: TensorType, value: np.ndarray, what: str = "input") -> np.ndarray:
    """`value` as a C-contiguous array, if it has the shape and dtype of `ty`."""
    array = np.asarray(value)
    expected = tuple(ty.get_shape())
    if array.shape != expected:
        raise InputError(f"{what} %{name} must have shape {list(expected)} ({ty}), but has shape {list(array.shape)}")
    expected_dtype = dtype_of(ty)
    if expected_dtype is None or array.dtype != expected_dtype.numpy:
        dtype = expected_dtype.name if expected_dtype is not None else ty.element_type
        raise InputError(f"{what} %{name} must be {dtype} ({ty}), but has dtype {array.dtype}")
    return np.require(array, requirements="C")  # not copied when it already is (a model's weights)


def constant_value(op: relay.ConstantOp) -> np.ndarray:
    """The constant's value as an array of the result's shape and dtype (float32, int64, or
    bool from one byte each, nonzero true)."""
    shape = tuple(op.res.type.get_shape())
    found = dtype_of(op.res.type)
    assert found is not None  # verified
    stored = np.dtype(np.uint8) if found.is_bool else found.numpy.newbyteorder("<")
    values = np.frombuffer(op.value.data.data, dtype=stored).astype(found.numpy)  # raw bytes: fast
    if values.size == 1:
        return np.full(shape, values.reshape(()), dtype=found.numpy)
    return values.reshape(shape)
