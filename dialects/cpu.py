"""
The `cpu` dialect: hints for the C target's kernels that change no value.

    cpu.prefetch %panels[%p, %k, %j] : memref<32x784x16xf32>

`cpu.prefetch` asks for the cache line holding an element to be brought into the caches
(read, high locality), as MLIR's `memref.prefetch read, locality<3>, data` does: the C target
prints gcc's `__builtin_prefetch` of its address (`prefetcht0`), the OpenCL target nothing. It
never faults, so the index may lie past the memref's end (the schedules prefetch a fixed
distance ahead of a stream and do not clamp it at the stream's end); the op has no result and
is never hoisted or dropped as dead.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, var_operand_def
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class PrefetchOp(IRDLOperation):
    """A read prefetch of the cache line of `memref[indices]`."""

    name = "cpu.prefetch"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)

    assembly_format = "$memref `[` $indices `]` attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue, indices: list[SSAValue]):
        super().__init__(operands=[memref, indices])

    def verify_(self) -> None:
        ty = self.memref.type
        assert isinstance(ty, MemRefType)
        if len(self.indices) != ty.get_num_dims():
            raise VerifyException(
                f"expected {ty.get_num_dims()} indices for '{self.name}' of a {ty}, but found {len(self.indices)}"
            )


CPU = Dialect("cpu", [PrefetchOp], [])
