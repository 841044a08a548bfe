"""
Run lowered xrelay modules (the output of convert-relay-to-loops) in xDSL's interpreter.

xDSL 0.74 interprets scf.for/if/yield, memref.load/store and most of arith, but not
scf.parallel/scf.reduce, memref.alloca, a few arith float ops or most of math; they are added
here. `relay.launch` calls its kernel on fresh buffers, so a whole lowered @main runs:

    out = run_lowered(module, {"a": a})     # compare with xrelay.interpret(fused_module, ...)

Floats are Python floats (double precision); compare with a float32 tolerance.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.math import MathFunctions
from xdsl.interpreters.memref import MemRefFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr

from xrelay.dialects import relay
from xrelay.interpreter import RelayFunctions, bind_inputs, entry_function


def _powf(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except (ValueError, OverflowError):
        return float(np.power(np.float64(x), np.float64(y)))


UNARY = {
    mathd.TanhOp: math.tanh,
    mathd.RsqrtOp: lambda x: 1.0 / math.sqrt(x) if x > 0 else (math.inf if x == 0 else math.nan),
    mathd.ErfOp: math.erf,
    mathd.AbsFOp: abs,
    arith.NegfOp: lambda x: -x,
}


@register_impls
class LoopFunctions(InterpreterFunctions):
    """What xDSL 0.74's interpreter lacks for our kernels."""

    @impl(scf.ParallelOp)
    def run_parallel(self, interp: Interpreter, op: scf.ParallelOp, args: PythonValues) -> PythonValues:
        n = len(op.lowerBound)  # operands: lower bounds, upper bounds, steps
        for ivs in itertools.product(*map(range, args[:n], args[n : 2 * n], args[2 * n : 3 * n])):
            interp.run_ssacfg_region(op.body, ivs, "scf.parallel")
        return ()

    @impl_terminator(scf.ReduceOp)
    def run_reduce(self, interp: Interpreter, op: scf.ReduceOp, args: PythonValues):
        return ReturnedValues(()), ()

    @impl(memref.AllocaOp)
    def run_alloca(self, interp: Interpreter, op: memref.AllocaOp, args: PythonValues) -> PythonValues:
        shape = op.memref.type.get_shape()
        return (ShapedArray(TypedPtr.new_float32([0.0] * math.prod(shape)), list(shape)),)

    @impl(arith.DivfOp)
    def run_divf(self, interp: Interpreter, op: arith.DivfOp, args: PythonValues) -> PythonValues:
        x, y = args
        if y == 0:
            return (math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y),)
        return (x / y,)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interp: Interpreter, op: arith.SIToFPOp, args: PythonValues) -> PythonValues:
        return (float(args[0]),)

    @impl(mathd.PowFOp)
    def run_powf(self, interp: Interpreter, op: mathd.PowFOp, args: PythonValues) -> PythonValues:
        return (_powf(*args),)

    @impl(mathd.ExpOp)
    def run_exp(self, interp: Interpreter, op: mathd.ExpOp, args: PythonValues) -> PythonValues:
        try:
            return (math.exp(args[0]),)
        except OverflowError:
            return (math.inf,)

    def run_unary(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (UNARY[type(op)](args[0]),)

    @impl(relay.LaunchOp)
    def run_launch(self, interp: Interpreter, op: relay.LaunchOp, args: PythonValues) -> PythonValues:
        out = np.zeros(op.res.type.get_shape(), np.float32)
        # reshape: the reference interpreter turns rank-0 inputs into shape (1,) (ascontiguousarray)
        arrays = [np.asarray(a, np.float32).reshape(v.type.get_shape()) for a, v in zip(args, op.inputs)]
        buffers = [as_shaped(a) for a in (*arrays, out)]
        interp.call_op(op.callee.string_value(), tuple(buffers))
        return (from_shaped(buffers[-1]),)


for _op_type in UNARY:
    setattr(LoopFunctions, f"run_{_op_type.__name__}", impl(_op_type)(LoopFunctions.run_unary))
register_impls(LoopFunctions)


def as_shaped(x: np.ndarray) -> ShapedArray:
    """A numpy array as the interpreter's memref value."""
    return ShapedArray(TypedPtr.new_float32([float(v) for v in x.ravel()]), list(x.shape))


def from_shaped(x: ShapedArray) -> np.ndarray:
    return np.array(x.data, np.float32).reshape(x.shape)


def interpreter(module: ModuleOp) -> Interpreter:
    interp = Interpreter(module)
    for functions in (ArithFunctions(), FuncFunctions(), MathFunctions(), MemRefFunctions(), ScfFunctions()):
        interp.register_implementations(functions)
    interp.register_implementations(RelayFunctions())
    interp.register_implementations(LoopFunctions(), override=True)
    return interp


def run_kernel(module: ModuleOp, name: str, inputs: list[np.ndarray], out_shape: tuple[int, ...]) -> np.ndarray:
    """Calls kernel @name on `inputs` and a fresh output buffer; returns the output."""
    buffers = [as_shaped(np.asarray(a, np.float32)) for a in inputs]
    out = as_shaped(np.zeros(out_shape, np.float32))
    interpreter(module).call_op(name, (*buffers, out))
    return from_shaped(out)


def run_lowered(module: ModuleOp, inputs: Mapping[str, np.ndarray], entry: str = "main") -> np.ndarray:
    """Runs @entry of a lowered module, each relay.launch through its loop kernel."""
    fn = entry_function(module, entry)
    results = interpreter(module).call_op(fn, tuple(bind_inputs(fn, inputs)))
    return results[0] if len(results) == 1 else tuple(results)
