"""
What the compiler hands the runtime for each kernel: plain data, no IR.

    KernelSource(name="fused_add", language="c", source="void fused_add(...) {...}",
                 global_size=(1024,), num_inputs=2, device=0)

`device` indexes the executor graph's `devices` list (the compiler decided it from the
kernel's scope); `global_size` is the NDRange, innermost dimension first (C kernels ignore
it: they loop over their whole nest); `local_size` the work-group shape, or None to let the
device choose (in the manifest only when set); `args` the kernel's parameters, its inputs
then its output, each a `TensorArg` (shape and dtype), as the compiler typed them (empty for
a kernel written by hand: an artifact then records the types its graph gives it, or none
for a kernel no node calls), so that a
loaded graph is checked against the kernels it calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xrelay.runtime.device_kinds import generating_kinds

# The kernel languages xrelay generates (the device kinds' table's).
LANGUAGES = tuple(kind.language for kind in generating_kinds() if kind.language is not None)


@dataclass(frozen=True)
class TensorArg:
    """A kernel parameter: the shape and dtype (numpy's name, "float32") of the tensor it takes."""

    shape: tuple[int, ...]
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> TensorArg:
        return cls(tuple(int(n) for n in entry["shape"]), str(entry["dtype"]))


@dataclass(frozen=True)
class KernelSource:
    name: str
    language: str  # one of LANGUAGES: "c" | "opencl"
    source: str  # a complete translation unit for this one kernel
    global_size: tuple[int, ...]
    num_inputs: int
    device: int = 0
    local_size: tuple[int, ...] | None = None
    args: tuple[TensorArg, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The manifest entry of this kernel, without its source."""
        entry: dict[str, Any] = {
            "name": self.name,
            "language": self.language,
            "global_size": list(self.global_size),
            "num_inputs": self.num_inputs,
            "device": self.device,
        }
        if self.local_size is not None:
            entry["local_size"] = list(self.local_size)
        entry["args"] = [a.to_json() for a in self.args]
        return entry

    @classmethod
    def from_json(cls, entry: dict[str, Any], source: str) -> KernelSource:
        return cls(
            str(entry["name"]),
            str(entry["language"]),
            source,
            tuple(int(n) for n in entry["global_size"]),
            int(entry["num_inputs"]),
            int(entry["device"]),
            tuple(int(n) for n in entry["local_size"]) if "local_size" in entry else None,
            tuple(TensorArg.from_json(a) for a in entry.get("args", ())),
        )
