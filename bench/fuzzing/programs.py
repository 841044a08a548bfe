"""
Seeded random relay programs for the fuzzer (`bench/fuzz.py`).

    program = generate(random.Random("7:program:12"))
    program.text                       # a module: helper functions and @main
    program.inputs()                   # numpy inputs for @main, by parameter name
    program.targets, program.default_device

Every op of DESIGN.md section 2 appears, and the ops imported models need (matmul,
layer_norm, leaky_relu, pad, take), on shapes of rank 0 to 4 with odd sizes, size 1
and (in some programs) size 0, with numpy broadcasting, in the custom syntax or the generic
form (properties as `<{...}>` or as attributes). Placement uses `relay.on_device` with every
flag combination, `relay.device_copy` (also with an unconstrained scope), `se_scope` on ops and
constants, and `relay.se_scope` on function arguments and results, spelled in full or in part
(`id = 1` alone, `target = "opencl"` alone, ...), over cpu, opencl (id 0) and opencl id 1.
Helper functions are called from @main and from each other with `func.call`. Targets are
c and opencl (either first), or one of them; the C target sometimes carries options
(`c -O0`, `c -Os`, ...). One program in seven is big enough for the kernels' schedules
(dot products of 256 and more, convolution rows of 16 and more, long reductions).
Inputs are standard-normal; in some programs some inputs also hold NaN, inf, zeros and huge
values (`make_input`).

Programs are conflict-free by construction: the generator keeps its own union-find of the
placement domains that plan-devices will solve (`Domain`), binds a domain to a device only
where the program says so (an annotation, a pinned op, an explicit copy, an attribute), and
uses a value only where its domain allows. A few programs (`expect_conflict`) break this on
purpose once, to exercise the conflict error.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

Shape = tuple[int, ...]
Device = tuple[str, int]  # ("opencl", 1)

TARGET_OF = {"cpu": "c", "opencl": "opencl"}

UNARY = [
    "relay.negative", "relay.exp", "relay.log", "relay.sqrt", "relay.rsqrt", "relay.tanh",
    "relay.sigmoid", "relay.abs", "relay.erf", "relay.nn.relu",
]  # fmt: skip
FINITE_UNARY = {"relay.negative", "relay.tanh", "relay.sigmoid", "relay.abs", "relay.erf", "relay.nn.relu"}
BINARY = [
    "relay.add", "relay.subtract", "relay.multiply", "relay.divide", "relay.maximum",
    "relay.minimum", "relay.power",
]  # fmt: skip
FINITE_BINARY = {"relay.add", "relay.subtract", "relay.multiply", "relay.maximum", "relay.minimum"}
REDUCE = ["relay.sum", "relay.mean", "relay.max", "relay.min"]
COMPARE = ["relay.equal", "relay.not_equal", "relay.less", "relay.less_equal", "relay.greater", "relay.greater_equal"]
INT_BINARY = ["relay.add", "relay.subtract", "relay.multiply", "relay.maximum", "relay.minimum", "relay.divide"]

MAX_ELEMENTS = 240
# Some programs are big enough for the kernels' schedules (convert_relay_to_loops.py): rows of
# at least 16 for blocked convolutions, dot products of at least 256, OpenCL's vector lanes.
BIG_DIMS = [8, 16, 17, 32, 33, 64, 256, 260]
BIG_MAX_ELEMENTS = 40000

# C target strings with options from the allow-list (not -ffast-math: it changes what NaN does)
C_TARGETS = ["c -O0", "c -O1", "c -O2", "c -O3", "c -Os", "c -O2 -fno-tree-vectorize", "c -g", "c -O3 -march=native"]


def tensor_type(shape: Sequence[int], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def i64_array(values: Sequence[int]) -> str:
    return f"array<i64: {', '.join(map(str, values))}>" if values else "array<i64>"


def size(shape: Shape) -> int:
    return math.prod(shape)


# --- placement domains ----------------------------------------------------------------------


class Domain:
    """A union-find class of values that plan-devices puts on one scope; `device` is set once
    the program constrains it (None: still open)."""

    def __init__(self, device: Device | None = None):
        self.parent: Domain | None = None
        self.device = device

    def root(self) -> Domain:
        node = self
        while node.parent is not None:
            node = node.parent
        return node


def unify(a: Domain, b: Domain) -> bool:
    """Joins two classes; False (and no change) when both are bound to different devices."""
    ra, rb = a.root(), b.root()
    if ra is rb:
        return True
    if ra.device is not None and rb.device is not None and ra.device != rb.device:
        return False
    rb.parent = ra
    ra.device = ra.device or rb.device
    return True


@dataclass
class Value:
    name: str
    shape: Shape
    domain: Domain | None  # None: free (an unpinned constant or an on_device result); each use planned apart
    finite: bool = True  # holds no NaN or inf
    returned_scope: Device | None = None  # an on_device(constrain_body) result: returning it fixes the result scope

    def usable_on(self, device: Device | None) -> bool:
        if self.domain is None or device is None:
            return True
        bound = self.domain.root().device
        return bound is None or bound == device


@dataclass
class Function:
    name: str
    params: list[Value]
    param_domains: list[Domain]
    result_shapes: list[Shape]
    result_domains: list[Domain]
    result_finite: list[bool]


# --- spelling scopes ------------------------------------------------------------------------


def spell_scope(rng: random.Random, device: Device, default_kind: str, c_target: str = "c") -> str:
    """`#relay.se_scope<...>` naming `device`, in full or with fields left out where the
    default completes them (id 0, the default device type, a device implied by its target)."""
    kind, vid = device
    with_target = rng.random() < 0.15
    with_device = rng.random() < 0.85 or (kind != default_kind and not with_target)
    with_id = vid != 0 or rng.random() < 0.3
    fields = []
    if with_device:
        fields.append(f"device = {kind}")
    if with_id:
        fields.append(f"id = {vid}")
    if with_target:
        fields.append(f'target = "{c_target if kind == "cpu" else TARGET_OF[kind]}"')
    if rng.random() < 0.15:
        fields.append('memory = "global"')
    return f"#relay.se_scope<{', '.join(fields)}>"


# --- lines ------------------------------------------------------------------------------------


@dataclass
class Line:
    """One op, rendered in its custom syntax or in the generic form."""

    result: str
    op: str
    operands: list[str]
    attrs: dict[str, str]
    operand_types: list[str]
    result_type: str
    syntax: str  # "unary" (`op %x : T`), "functional" (`: (T...) -> T`), "constant", "call"

    def render(self, rng: random.Random) -> str:
        if self.syntax == "call":
            types = ", ".join(self.operand_types)
            return f"{self.result} = func.call {self.op}({', '.join(self.operands)}) : ({types}) -> {self.result_type}"
        if rng.random() < 0.2:
            return self.render_generic(rng)
        attrs = f" {{{', '.join(f'{k} = {v}' for k, v in self.attrs.items())}}}" if self.attrs else ""
        operands = ", ".join(self.operands)
        if self.syntax == "constant":
            return f"{self.result} = {self.op}{attrs} : {self.result_type}"
        if self.syntax == "unary":
            return f"{self.result} = {self.op} {operands}{attrs} : {self.result_type}"
        types = ", ".join(self.operand_types)
        return f"{self.result} = {self.op} {operands}{attrs} : ({types}) -> {self.result_type}"

    def render_generic(self, rng: random.Random) -> str:
        body = ", ".join(f"{k} = {v}" for k, v in self.attrs.items())
        attrs = "" if not self.attrs else (f" <{{{body}}}>" if rng.random() < 0.5 else f" {{{body}}}")
        types = ", ".join(self.operand_types)
        return f'{self.result} = "{self.op}"({", ".join(self.operands)}){attrs} : ({types}) -> {self.result_type}'


# --- the program ------------------------------------------------------------------------------


@dataclass
class Program:
    text: str
    targets: tuple[str, ...]
    default_device: str
    seed: int  # of the inputs
    special_inputs: frozenset[str]  # parameters whose inputs hold NaN, inf, zeros or huge values
    expect_conflict: bool = False

    def inputs(self, names_and_shapes: Sequence[tuple[str, Shape]]) -> dict[str, np.ndarray]:
        return {
            name: make_input(self.seed, name, shape, name in self.special_inputs) for name, shape in names_and_shapes
        }


def make_input(seed: int, name: str, shape: Shape, special: bool) -> np.ndarray:
    """Standard-normal float32 values for parameter `name`, the same for the same seed and
    name (so a shrunk program keeps its inputs); `special` mixes in NaN, inf, zeros, huge."""
    rng = np.random.default_rng(zlib.crc32(f"{seed}:{name}".encode()))
    x = rng.standard_normal(shape).astype(np.float32)
    if special and x.size:
        picks = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e-30], size=x.shape)
        mask = rng.random(x.shape) < 0.3
        x = np.where(mask, picks, x).astype(np.float32)
    return x


@dataclass
class Options:
    known_issues: bool = False  # also generate the open issues 13.3 and 13.9
    conflict_rate: float = 0.03


@dataclass
class Builder:
    """The body of one function under construction."""

    rng: random.Random
    prog: ProgramBuilder
    annotate: bool
    pool: list[Value] = field(default_factory=list)
    params: list[Value] = field(default_factory=list)
    param_domains: list[Domain] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    fixed_params: bool = False  # no new parameters (a helper's signature is fixed once made)

    # --- values ------------------------------------------------------------------------------

    def fresh(self) -> str:
        return self.prog.fresh()

    def add_line(self, line: Line) -> None:
        self.lines.append("  " + line.render(self.rng))

    def param(self, shape: Shape, device: Device | None = None, finite: bool = False) -> Value:
        """A new parameter; `finite` keeps NaN and inf out of its input (a helper's parameters
        may be passed anything, so they count as non-finite)."""
        name = f"%p{len(self.params)}"
        domain = Domain(device)
        if self.prog.input_prefix:
            finite = False
        elif not finite and self.rng.random() < self.prog.special_rate:
            self.prog.special_inputs.add(name[1:])
            finite = False
        else:
            finite = True
        value = Value(name, shape, domain, finite)
        self.params.append(value)
        self.param_domains.append(domain)
        self.pool.append(value)
        return value

    def constant(self, shape: Shape, device: Device | None = None) -> Value:
        ty = tensor_type(shape)
        name = self.fresh()
        attrs = {"value": f"{self.dense(shape)} : {ty}"}
        pinned = device is not None and self.rng.random() < 0.3
        if pinned:
            attrs["se_scope"] = spell_scope(self.rng, device, self.prog.default_kind, self.prog.c_target)
        self.add_line(Line(name, "relay.constant", [], attrs, [], ty, "constant"))
        value = Value(name, shape, Domain(device) if pinned else None)
        self.pool.append(value)
        return value

    def dense(self, shape: Shape) -> str:
        roll = self.rng.random()
        if roll < 0.35 or size(shape) == 0 or len(shape) == 0:
            return f"dense<{self.number()}>"
        values = iter([self.number() for _ in range(size(shape))])

        def nest(dims: Shape) -> str:
            if not dims:
                return next(values)
            return "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"

        return f"dense<{nest(shape)}>"

    def number(self) -> str:
        roll = self.rng.random()
        if roll < 0.1:
            return self.rng.choice(["0.0", "1.0", "-1.0", "2.0", "0.5", "-0.0"])
        if roll < 0.15:
            return self.rng.choice(["1.0e+03", "-2.5e+02", "1.0e-03"])
        return f"{self.rng.uniform(-2, 2):.4f}"

    def operand(self, shape: Shape, device: Device | None, finite: bool = False) -> Value:
        """A value of `shape` usable on `device`: from the pool, or a new parameter or constant."""
        found = self.pick(lambda v: v.shape == shape and (v.finite or not finite), device)
        if found is not None and self.rng.random() < 0.8:
            return found
        if self.fixed_params or self.rng.random() < 0.35 or (finite and self.prog.input_prefix):
            return self.constant(shape, device)
        return self.param(shape, finite=finite)

    def pick(self, pred: Callable[[Value], bool] = lambda v: True, device: Device | None = None) -> Value | None:
        candidates = [v for v in self.pool if pred(v) and v.usable_on(device)]
        if not candidates:
            return None
        recent = candidates[-5:]  # prefer recent values: deeper graphs
        return self.rng.choice(recent if self.rng.random() < 0.7 else candidates)

    def new_operand_shape(self, rank: int | None = None) -> Shape:
        return self.prog.shape(rank)

    # --- placement ---------------------------------------------------------------------------

    def device(self) -> Device | None:
        return self.rng.choice(self.prog.devices) if self.annotate else None

    def scope(self, device: Device) -> str:
        return spell_scope(self.rng, device, self.prog.default_kind, self.prog.c_target)

    def use(self, values: Sequence[Value], device: Device | None) -> None:
        """The op reading `values` runs on `device`: open domains among them are bound there."""
        if device is None:
            return
        for v in values:
            if v.domain is not None and v.domain.root().device is None:
                v.domain.root().device = device

    def place(self, line: Line, operands: Sequence[Value], shape: Shape, device: Device | None, finite: bool) -> Value:
        """Emits a primitive op on `device`; pins it unless a bound operand forces it there."""
        forced = device is not None and any(v.domain is not None and v.domain.root().device == device for v in operands)
        pin_attr = device is not None and not forced and self.rng.random() < 0.3
        if device is not None and (pin_attr or (forced and self.rng.random() < 0.1)):
            line.attrs["se_scope"] = self.scope(device)
            pin_attr = True
        self.add_line(line)
        self.use(operands, device)
        value = Value(line.result, shape, Domain(device) if device is not None else self.prog.default_domain, finite)
        if device is not None:
            for v in operands:
                if v.domain is not None:
                    unify(v.domain, value.domain)
        self.pool.append(value)
        if device is not None and not forced and not pin_attr:
            self.pin(value, device)
        elif device is not None:
            self.maybe_annotate(value)
        return value

    def pin(self, value: Value, device: Device) -> None:
        """`on_device(value)` with constrain_body: the op runs on `device`."""
        result = self.rng.random() < 0.25
        flags = self.flags(True, result)
        ty = tensor_type(value.shape)
        name = self.fresh()
        self.add_line(
            Line(name, "relay.on_device", [value.name], {"se_scope": self.scope(device), **flags}, [ty], ty, "unary")
        )
        pinned = Value(name, value.shape, Domain(device) if result else None, value.finite, device)
        self.pool.append(pinned)
        self.maybe_annotate(pinned if self.rng.random() < 0.5 else value)

    def flags(self, body: bool, result: bool) -> dict[str, str]:
        """The flags, sometimes spelled out where they have their default value."""
        flags = {}
        if not body or self.rng.random() < 0.2:
            flags["constrain_body"] = "true" if body else "false"
        if result or self.rng.random() < 0.2:
            flags["constrain_result"] = "true" if result else "false"
        return flags

    def maybe_annotate(self, value: Value, depth: int = 0) -> None:
        """A chain of copy points after `value`: on_device with any flags, device_copy."""
        if not self.annotate or depth > 3 or self.rng.random() < 0.55:
            return
        ty = tensor_type(value.shape)
        bound = value.domain.root().device if value.domain is not None else None
        roll = self.rng.random()
        name = self.fresh()
        if roll < 0.35:
            src = (
                bound or (value.returned_scope if value.domain is None else None) or self.rng.choice(self.prog.devices)
            )
            if value.domain is not None and bound is None:
                value.domain.root().device = src
            unconstrained_dst = self.rng.random() < 0.1
            dst = self.rng.choice(self.prog.devices)
            src_text = "#relay.se_scope<>" if value.domain is None and self.rng.random() < 0.15 else self.scope(src)
            dst_text = "#relay.se_scope<>" if unconstrained_dst else self.scope(dst)
            attrs = {"src_se_scope": src_text, "dst_se_scope": dst_text}
            self.add_line(Line(name, "relay.device_copy", [value.name], attrs, [ty], ty, "unary"))
            new = Value(name, value.shape, Domain(None if unconstrained_dst else dst), value.finite)
        else:
            body, result = self.rng.choice([(True, False), (True, True), (False, True), (False, False)])
            device: Device | None
            if self.rng.random() < 0.05:
                device = None  # `#relay.se_scope<>`: constrains nothing
            elif body and value.domain is not None and bound is not None:
                device = bound
            else:
                device = self.rng.choice(self.prog.devices)
            if body and value.domain is not None and device is not None:
                value.domain.root().device = device
            scope = self.scope(device) if device is not None else "#relay.se_scope<>"
            attrs = {"se_scope": scope, **self.flags(body, result)}
            self.add_line(Line(name, "relay.on_device", [value.name], attrs, [ty], ty, "unary"))
            new = Value(name, value.shape, Domain(device) if result else None, value.finite, device if body else None)
        self.pool.append(new)
        self.maybe_annotate(new, depth + 1)

    # --- ops ---------------------------------------------------------------------------------

    def step(self) -> None:
        device = self.device()
        kinds = [
            ("unary", 5), ("clip", 1), ("binary", 6), ("bias_add", 1), ("reshape", 1),
            ("transpose", 1), ("squeeze", 1), ("expand_dims", 1), ("broadcast_to", 1),
            ("strided_slice", 1.5), ("concatenate", 1.5), ("reduce", 2.5), ("dense", 1),
            ("batch_matmul", 1), ("conv2d", 1), ("pool2d", 1), ("global_avg_pool2d", 0.5),
            ("softmax", 1), ("matmul", 1), ("layer_norm", 1), ("leaky_relu", 0.7), ("pad", 1),
            ("take", 1), ("int_island", 1.5), ("call", 1.5 if self.prog.functions else 0),
            ("annotate", 1 if self.annotate else 0),
        ]  # fmt: skip
        kind = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        getattr(self, f"op_{kind}")(device)

    def source(
        self, device: Device | None, pred: Callable[[Value], bool] = lambda v: True, rank: int | None = None
    ) -> Value:
        found = self.pick(lambda v: pred(v) and (rank is None or len(v.shape) == rank), device)
        if found is not None:
            return found
        shape = self.new_operand_shape(rank)
        return self.constant(shape, device) if self.fixed_params or self.rng.random() < 0.3 else self.param(shape)

    def new_value(self, shape: Shape, device: Device | None) -> Value:
        """A new parameter or constant of `shape`."""
        return self.constant(shape, device) if self.fixed_params or self.rng.random() < 0.3 else self.param(shape)

    def one(
        self,
        op: str,
        x: Value,
        attrs: dict[str, str],
        out: Shape,
        device: Device | None,
        finite: bool | None = None,
        syntax: str = "functional",
    ) -> Value:
        ty = tensor_type(x.shape)
        line = Line(self.fresh(), op, [x.name], attrs, [ty], tensor_type(out), syntax)
        return self.place(line, [x], out, device, x.finite if finite is None else finite)

    def many(
        self, op: str, xs: Sequence[Value], attrs: dict[str, str], out: Shape, device: Device | None, finite: bool
    ) -> Value:
        line = Line(
            self.fresh(),
            op,
            [x.name for x in xs],
            attrs,
            [tensor_type(x.shape) for x in xs],
            tensor_type(out),
            "functional",
        )
        return self.place(line, xs, out, device, finite)

    def op_annotate(self, device: Device | None) -> None:
        value = self.source(device)
        before = len(self.lines)
        while len(self.lines) == before:
            self.maybe_annotate(value)

    def op_unary(self, device: Device | None) -> None:
        x = self.source(device)
        op = self.rng.choice(UNARY)
        self.one(op, x, {}, x.shape, device, x.finite and op in FINITE_UNARY, syntax="unary")

    def op_clip(self, device: Device | None) -> None:
        x = self.source(device)
        lo = round(self.rng.uniform(-2, 0.5), 2)
        hi = round(lo + self.rng.choice([0.0, self.rng.uniform(0, 2)]), 2)
        attrs = {"a_min": f"{lo} : f32", "a_max": f"{hi} : f32"}
        self.one("relay.clip", x, attrs, x.shape, device, syntax="unary")

    def broadcast_partner(self, shape: Shape) -> Shape:
        """A shape that broadcasts with `shape`: a suffix, with 1s, or with more axes."""
        rank = self.rng.choice([len(shape)] * 3 + list(range(0, len(shape) + 2)))
        rank = min(rank, 4)
        out = []
        for i in range(rank):
            j = len(shape) - rank + i
            if j < 0:
                out.append(self.rng.choice([1, 2, 3]))
            else:
                out.append(1 if self.rng.random() < 0.3 else shape[j])
        partner = tuple(out)
        return partner if size(np.broadcast_shapes(shape, partner)) <= self.prog.max_elements else shape

    def op_binary(self, device: Device | None) -> None:
        op = self.rng.choice(BINARY)
        x = self.source(device)
        y = self.operand(self.broadcast_partner(x.shape), device)
        if self.rng.random() < 0.1:
            y = x
        if self.rng.random() < 0.4:
            x, y = y, x
        out = tuple(np.broadcast_shapes(x.shape, y.shape))
        self.many(op, [x, y], {}, out, device, x.finite and y.finite and op in FINITE_BINARY)

    def op_bias_add(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) >= 1)
        if len(x.shape) == 0:
            return
        attrs: dict[str, str] = {}
        if len(x.shape) >= 2 and self.rng.random() < 0.4:
            axis = 1
        else:
            axis = self.rng.randrange(-len(x.shape), len(x.shape))
            attrs["axis"] = f"{axis} : i64"
        b = self.operand((x.shape[axis],), device)
        self.many("relay.nn.bias_add", [x, b], attrs, x.shape, device, x.finite and b.finite)

    def op_reshape(self, device: Device | None) -> None:
        x = self.source(device)
        out = self.prog.reshaped(x.shape)
        self.one("relay.reshape", x, {}, out, device)

    def op_transpose(self, device: Device | None) -> None:
        x = self.source(device)
        rank = len(x.shape)
        perm = list(range(rank))
        self.rng.shuffle(perm)
        attrs = {}
        if self.rng.random() < 0.2:
            perm = list(reversed(range(rank)))
        else:
            spelled = [p - rank if self.rng.random() < 0.2 else p for p in perm]
            attrs["axes"] = i64_array(spelled)
        self.one("relay.transpose", x, attrs, tuple(x.shape[p] for p in perm), device)

    def op_squeeze(self, device: Device | None) -> None:
        x = self.source(device, lambda v: 1 in v.shape)
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        attrs = {}
        if self.rng.random() < 0.3 or not ones:
            removed = ones
        else:
            removed = sorted(self.rng.sample(ones, self.rng.randint(1, len(ones))))
            rank = len(x.shape)
            attrs["axis"] = i64_array([a - rank if self.rng.random() < 0.3 else a for a in removed])
        out = tuple(d for i, d in enumerate(x.shape) if i not in removed)
        self.one("relay.squeeze", x, attrs, out, device)

    def op_expand_dims(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) < 4)
        rank = len(x.shape)
        axis = self.rng.randint(-rank - 1, rank)
        count = self.rng.choice([1, 1, 1, 0, 2])
        if rank + count > 5:
            count = 1
        attrs = {"axis": f"{axis} : i64"}
        if count != 1 or self.rng.random() < 0.2:
            attrs["num_newaxis"] = f"{count} : i64"
        at = axis + rank + 1 if axis < 0 else axis
        out = x.shape[:at] + (1,) * count + x.shape[at:]
        self.one("relay.expand_dims", x, attrs, out, device)

    def op_broadcast_to(self, device: Device | None) -> None:
        x = self.source(device)
        lead = tuple(
            self.rng.choice([1, 2, 3]) for _ in range(self.rng.choice([0, 0, 1, 2]) if len(x.shape) < 4 else 0)
        )
        body = tuple(self.rng.choice([1, 2, 3, 4]) if d == 1 and self.rng.random() < 0.6 else d for d in x.shape)
        out = lead + body
        if size(out) > self.prog.max_elements:
            out = x.shape
        self.one("relay.broadcast_to", x, {}, out, device)

    def op_strided_slice(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) >= 1)
        if len(x.shape) == 0:
            return
        count = self.rng.randint(1, len(x.shape))
        begins, ends, strides = [], [], []
        for d in x.shape[:count]:
            stride = self.rng.choice([1, 1, 1, 2, 3, -1, -2])
            begins.append(self.rng.randint(-d - 2, d + 2))
            ends.append(
                self.rng.randint(-d - 2, d + 2) if self.rng.random() < 0.8 else self.rng.choice([-(2**40), 2**40])
            )
            strides.append(stride)
        attrs = {"begin": i64_array(begins), "end": i64_array(ends)}
        if any(s != 1 for s in strides) or self.rng.random() < 0.3:
            attrs["strides"] = i64_array(strides)
        out = (
            tuple(len(range(*slice(b, e, s).indices(d))) for b, e, s, d in zip(begins, ends, strides, x.shape))
            + x.shape[count:]
        )
        self.one("relay.strided_slice", x, attrs, out, device)

    def op_concatenate(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) >= 1)
        if len(x.shape) == 0:
            return
        rank = len(x.shape)
        axis = self.rng.randrange(rank)
        inputs = [x]
        for _ in range(self.rng.choice([0, 1, 1, 1, 2, 3])):
            along = x.shape[axis] if self.rng.random() < 0.5 else self.prog.dim()
            inputs.append(self.operand(x.shape[:axis] + (along,) + x.shape[axis + 1 :], device))
        self.rng.shuffle(inputs)
        out = x.shape[:axis] + (sum(v.shape[axis] for v in inputs),) + x.shape[axis + 1 :]
        if size(out) > 2 * self.prog.max_elements:
            inputs, out = [x], x.shape
        spelled = axis - rank if self.rng.random() < 0.3 else axis
        self.many("relay.concatenate", inputs, {"axis": f"{spelled} : i64"}, out, device, all(v.finite for v in inputs))

    def op_reduce(self, device: Device | None) -> None:
        op = self.rng.choice(REDUCE)
        x = self.source(device)
        rank = len(x.shape)
        attrs: dict[str, str] = {}
        if rank == 0 or self.rng.random() < 0.2:
            axes = list(range(rank))
            if rank and self.rng.random() < 0.5:
                attrs["axis"] = i64_array(axes)
        else:
            axes = sorted(self.rng.sample(range(rank), self.rng.randint(1, rank)))
            attrs["axis"] = i64_array([a - rank if self.rng.random() < 0.3 else a for a in axes])
        if (
            op in ("relay.max", "relay.min")
            and any(x.shape[a] == 0 for a in axes)
            and not self.prog.options.known_issues
        ):
            op = "relay.sum"  # issue 13.3: max/min over a zero-length axis
        keep = self.rng.random() < 0.4
        if keep or self.rng.random() < 0.1:
            attrs["keepdims"] = "true" if keep else "false"
        out = tuple((1 if i in axes else d) for i, d in enumerate(x.shape) if keep or i not in axes)
        self.one(op, x, attrs, out, device)

    def op_dense(self, device: Device | None) -> None:
        if self.prog.big and self.rng.random() < 0.5:  # a dot product long enough for row blocks
            x = self.new_value((self.rng.choice([1, 3, 4, 8]), self.rng.choice([256, 260, 300])), device)
        else:
            x = self.source(device, lambda v: 1 <= len(v.shape) <= 3)
        if len(x.shape) == 0:
            return
        units = self.rng.choice([1, 2, 3, 5, 8] if self.prog.big else [1, 2, 3, 5])
        w = self.operand((units, x.shape[-1]), device)
        self.many("relay.nn.dense", [x, w], {}, x.shape[:-1] + (units,), device, x.finite and w.finite)

    def op_batch_matmul(self, device: Device | None) -> None:
        x = self.source(device, rank=3)
        b, _, k = x.shape
        n = self.prog.dim()
        yb = self.rng.choice([b, b, 1])
        y = self.operand((yb, n, k), device)
        if self.rng.random() < 0.3 and b == 1:
            y = self.operand((self.rng.choice([1, 2, 3]), n, k), device)
        out = (y.shape[0] if b == 1 else b, x.shape[1], n)
        self.many("relay.nn.batch_matmul", [x, y], {}, out, device, x.finite and y.finite)

    def op_matmul(self, device: Device | None) -> None:
        if self.prog.big and self.rng.random() < 0.5:  # a dot product long enough for row blocks
            x = self.new_value((self.rng.choice([1, 2]), self.rng.choice([4, 8]), self.rng.choice([256, 260])), device)
        else:
            x = self.source(device, lambda v: 2 <= len(v.shape) <= 4)
        if len(x.shape) < 2:
            return
        batch = self.broadcast_partner(x.shape[:-2]) if self.rng.random() < 0.6 else ()
        n = self.prog.dim()
        y = self.operand((*batch, x.shape[-1], n), device)
        if self.rng.random() < 0.3:
            x, y = (
                self.operand((*batch, self.prog.dim(), x.shape[-1]), device),
                self.operand(x.shape[:-2] + (x.shape[-1], n), device),
            )
        out = (*np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), x.shape[-2], y.shape[-1])
        if size(out) > self.prog.max_elements:
            return
        self.many("relay.nn.matmul", [x, y], {}, out, device, x.finite and y.finite)

    def op_layer_norm(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) >= 1)
        rank = len(x.shape)
        if rank == 0:
            return
        axis = self.rng.randrange(-rank, rank)
        attrs: dict[str, str] = {}
        if axis != -1 or self.rng.random() < 0.3:
            attrs["axis"] = f"{axis} : i64"
        if self.rng.random() < 0.4:
            attrs["epsilon"] = self.rng.choice(["1.0e-05 : f32", "1.0e-03 : f32", "0.1 : f32", "1.0e-12 : f32"])
        inner = x.shape[axis:]
        gamma, beta = self.operand(inner, device), self.operand(inner, device)
        self.many("relay.nn.layer_norm", [x, gamma, beta], attrs, x.shape, device, False)

    def op_leaky_relu(self, device: Device | None) -> None:
        x = self.source(device)
        attrs = (
            {"alpha": f"{self.rng.choice([0.01, 0.1, 0.25, -0.5, 2.0, 0.0])} : f32"} if self.rng.random() < 0.8 else {}
        )
        self.one("relay.nn.leaky_relu", x, attrs, x.shape, device, syntax="unary")

    def op_pad(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) >= 1)
        if len(x.shape) == 0:
            return
        mode = self.rng.choice(["constant", "constant", "edge", "reflect", "wrap"])
        width: list[int] = []
        for d in x.shape:
            for _ in range(2):
                if mode == "reflect":
                    most = d - 1
                elif mode in ("edge", "wrap") and d == 0:
                    most = 0
                else:
                    most = 3
                pad = self.rng.randint(0, max(most, 0)) if self.rng.random() < 0.7 else 0
                if self.rng.random() < 0.15 and d > 0:  # a crop
                    pad = -self.rng.randint(1, max(1, d // 2))
                width.append(pad)
            if d + width[-2] + width[-1] < 0:
                width[-2:] = [0, 0]
        out = tuple(d + width[2 * i] + width[2 * i + 1] for i, d in enumerate(x.shape))
        if size(out) > self.prog.max_elements:
            return
        attrs = {"pad_width": i64_array(width)}
        if mode != "constant" or self.rng.random() < 0.3:
            attrs["pad_mode"] = f'"{mode}"'
        if mode == "constant" and self.rng.random() < 0.5:
            attrs["pad_value"] = f"{self.number()} : f32"
        self.one("relay.nn.pad", x, attrs, out, device)

    def op_take(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) >= 1 and 0 not in v.shape)
        rank = len(x.shape)
        if rank == 0 or 0 in x.shape:
            return
        axis = self.rng.randrange(-rank, rank)
        extent = x.shape[axis]
        shape = tuple(self.rng.choice([1, 2, 3, 4]) for _ in range(self.rng.choice([0, 1, 1, 2])))
        values = [self.rng.randrange(-extent, extent) for _ in range(size(shape))]
        if self.rng.random() < 0.3:  # a range: one arithmetic run
            start = self.rng.randrange(extent)
            values = [(start + i) % extent for i in range(size(shape))]
        out = x.shape[: axis % rank] + shape + x.shape[axis % rank + 1 :]
        if size(out) > self.prog.max_elements:
            return
        flat = iter(values)

        def nest(dims: Shape) -> str:
            return str(next(flat)) if not dims else "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"

        ty = "tensor<" + "".join(f"{d}x" for d in shape) + "i64>"
        attrs = {"indices": f"dense<{nest(shape)}> : {ty}", "axis": f"{axis} : i64"}
        self.one("relay.take", x, attrs, out, device)

    # --- int64 and bool: islands that start and end in float32 ------------------------------

    def typed(self, op: str, xs: Sequence[tuple[str, str]], attrs: dict[str, str], out: str) -> str:
        """Emits an op on int64/bool values (kept out of the float pool); returns its name.
        `xs` are (name, type); plan-devices places it with the float op that reads it."""
        name = self.fresh()
        syntax = "constant" if not xs else "unary" if len(xs) == 1 and out == xs[0][1] else "functional"
        self.add_line(Line(name, op, [n for n, _ in xs], attrs, [t for _, t in xs], out, syntax))
        return name

    def to_int(self, x: Value, scale: float) -> tuple[str, str]:
        """`x * scale`, clipped to [-60, 60] (so no cast overflows), cast to int64."""
        f32 = tensor_type(x.shape)
        one = tensor_type((1,) * len(x.shape))  # broadcasts without growing a rank-0 x
        k = self.typed("relay.constant", [], {"value": f"dense<{scale}> : {one}"}, one)
        scaled = self.typed("relay.multiply", [(x.name, f32), (k, one)], {}, f32)
        clipped = self.typed("relay.clip", [(scaled, f32)], {"a_min": "-60.0 : f32", "a_max": "60.0 : f32"}, f32)
        i64 = tensor_type(x.shape, "i64")
        return self.typed("relay.cast", [(clipped, f32)], {"dtype": '"int64"'}, i64), i64

    def op_int_island(self, device: Device | None) -> None:
        """A float value through int64 or bool ops and back: a comparison choosing with
        where, int64 arithmetic (divide truncates; by zero gives zero) cast back, or take
        with run-time (clipped) indices."""
        x = self.source(device, lambda v: v.finite)
        if not x.finite:
            return
        kind = self.rng.choice(["where", "arith", "take"])
        f32 = tensor_type(x.shape)
        if kind == "where":
            y = self.operand(x.shape, device, finite=True)
            cond = self.typed(self.rng.choice(COMPARE), [(x.name, f32), (y.name, f32)], {}, tensor_type(x.shape, "i1"))
            if self.rng.random() < 0.4:
                cond = self.typed(
                    "relay.logical_not", [(cond, tensor_type(x.shape, "i1"))], {}, tensor_type(x.shape, "i1")
                )
            line = Line(
                self.fresh(),
                "relay.where",
                [cond, x.name, y.name],
                {},
                [tensor_type(x.shape, "i1"), f32, f32],
                f32,
                "functional",
            )
            self.place(line, [x, y], x.shape, device, True)
        elif kind == "arith":
            a, ty = self.to_int(x, self.rng.choice([1.0, 3.0, 10.0]))
            one = tensor_type((1,) * len(x.shape), "i64")
            k = self.typed("relay.constant", [], {"value": f"dense<{self.rng.randrange(-3, 4)}> : {one}"}, one)
            r = self.typed(self.rng.choice(INT_BINARY), [(a, ty), (k, one)], {}, ty)
            r = self.typed(self.rng.choice(INT_BINARY), [(r, ty), (a, ty)], {}, ty)
            line = Line(self.fresh(), "relay.cast", [r], {"dtype": '"float32"'}, [ty], f32, "functional")
            self.place(line, [x], x.shape, device, True)
        else:
            data = self.source(device, lambda v: len(v.shape) >= 1 and 0 not in v.shape)
            rank = len(data.shape)
            if (
                rank == 0
                or 0 in data.shape
                or size(data.shape[:-1]) * size(x.shape) * data.shape[-1] > self.prog.max_elements
            ):
                return
            axis = self.rng.randrange(-rank, rank)
            ids, ity = self.to_int(x, float(data.shape[axis]))
            out = data.shape[: axis % rank] + x.shape + data.shape[axis % rank + 1 :]
            if size(out) > self.prog.max_elements:
                return
            dty = tensor_type(data.shape)
            line = Line(
                self.fresh(),
                "relay.take",
                [data.name, ids],
                {"axis": f"{axis} : i64"},
                [dty, ity],
                tensor_type(out),
                "functional",
            )
            self.place(line, [data, x], out, device, data.finite)

    def op_conv2d(self, device: Device | None) -> None:
        if self.prog.big and self.rng.random() < 0.5:  # rows wide enough for channel blocks
            shape = (
                self.rng.choice([1, 2]),
                self.rng.choice([1, 2, 4, 8]),
                self.rng.randint(2, 6),
                self.rng.choice([16, 17, 20, 33]),
            )
            x = self.new_value(shape, device)
        else:
            x = self.source(device, rank=4)
        n, c, h, w = x.shape
        if h == 0 or w == 0:
            return  # no window fits a size-0 image (the verifier says so)
        groups = self.rng.choice([g for g in (1, 1, 2, 3, c) if g >= 1 and c % g == 0] or [1])
        out_channels = groups * self.rng.choice([1, 1, 2, 4, 4, 8] if self.prog.big else [1, 1, 2])
        kh, kw = self.rng.choice([1, 2, 3]), self.rng.choice([1, 2, 3])
        strides = (self.rng.choice([1, 1, 2]), self.rng.choice([1, 1, 2]))
        dilation = (self.rng.choice([1, 1, 2]), self.rng.choice([1, 1, 2]))
        padding = tuple(self.rng.choice([0, 0, 1, 2]) for _ in range(4))
        two = self.rng.random() < 0.3
        if two:
            padding = padding[:2] * 2
        top, left, bottom, right = padding
        oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (w + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
        if oh <= 0 or ow <= 0:
            kh = kw = 1
            dilation = (1, 1)
            oh = (h + top + bottom - 1) // strides[0] + 1
            ow = (w + left + right - 1) // strides[1] + 1
        # issue 13.9: NaN or inf weights at taps that fall on padding
        finite_weight = any(padding) and not self.prog.options.known_issues
        weight = self.operand((out_channels, c // groups, kh, kw), device, finite=finite_weight)
        attrs: dict[str, str] = {}
        if strides != (1, 1) or self.rng.random() < 0.2:
            attrs["strides"] = i64_array(strides)
        if any(padding) or self.rng.random() < 0.2:
            attrs["padding"] = i64_array(padding[:2] if two else padding)
        if dilation != (1, 1) or self.rng.random() < 0.2:
            attrs["dilation"] = i64_array(dilation)
        if groups != 1 or self.rng.random() < 0.2:
            attrs["groups"] = f"{groups} : i64"
        self.many("relay.nn.conv2d", [x, weight], attrs, (n, out_channels, oh, ow), device, x.finite and weight.finite)

    def op_pool2d(self, device: Device | None) -> None:
        x = self.source(device, rank=4)
        n, c, h, w = x.shape
        if h == 0 or w == 0:
            return  # no window fits a size-0 image (the verifier says so)
        op = self.rng.choice(["relay.nn.max_pool2d", "relay.nn.avg_pool2d"])
        kh, kw = self.rng.choice([1, 2, 3]), self.rng.choice([1, 2, 3])
        strides = (self.rng.choice([1, 1, 2]), self.rng.choice([1, 2]))
        dilation = (self.rng.choice([1, 1, 1, 2]), self.rng.choice([1, 1, 1, 2]))
        ceil = self.rng.random() < 0.25
        padding = (self.rng.randrange(kh), self.rng.randrange(kw), self.rng.randrange(kh), self.rng.randrange(kw))
        oh = pool_out(h, padding[0], padding[2], kh, strides[0], dilation[0], ceil)
        ow = pool_out(w, padding[1], padding[3], kw, strides[1], dilation[1], ceil)
        if oh is None or ow is None:
            kh = kw = 1
            padding, dilation, ceil = (0, 0, 0, 0), (1, 1), False
            oh, ow = (h - 1) // strides[0] + 1, (w - 1) // strides[1] + 1
        attrs = {"pool_size": i64_array((kh, kw))}
        if strides != (1, 1) or self.rng.random() < 0.2:
            attrs["strides"] = i64_array(strides)
        if any(padding) or self.rng.random() < 0.2:
            attrs["padding"] = i64_array(padding)
        if dilation != (1, 1) or self.rng.random() < 0.1:
            attrs["dilation"] = i64_array(dilation)
        if ceil or self.rng.random() < 0.1:
            attrs["ceil_mode"] = "true" if ceil else "false"
        if op == "relay.nn.avg_pool2d" and self.rng.random() < 0.4:
            attrs["count_include_pad"] = self.rng.choice(["true", "false"])
        self.one(op, x, attrs, (n, c, oh, ow), device)

    def op_global_avg_pool2d(self, device: Device | None) -> None:
        x = self.source(device, rank=4)
        self.one("relay.nn.global_avg_pool2d", x, {}, x.shape[:2] + (1, 1), device)

    def op_softmax(self, device: Device | None) -> None:
        x = self.source(device, lambda v: len(v.shape) >= 1)
        if len(x.shape) == 0:
            return
        attrs = {}
        if self.rng.random() < 0.7:
            attrs["axis"] = f"{self.rng.randrange(-len(x.shape), len(x.shape))} : i64"
        self.one("relay.nn.softmax", x, attrs, x.shape, device, finite=False)

    def op_call(self, device: Device | None) -> None:
        fn = self.rng.choice(self.prog.functions)  # those defined so far: no recursion
        args = []
        for shape, domain in zip([p.shape for p in fn.params], fn.param_domains):
            bound = domain.root().device
            found = self.pick(lambda v, shape=shape: v.shape == shape, bound)
            if found is not None and found.domain is not None and not unify_allowed(found.domain, domain):
                found = None
            arg = found or (self.constant(shape) if self.fixed_params or self.rng.random() < 0.4 else self.param(shape))
            if arg.domain is not None:
                unify(arg.domain, domain)
            args.append(arg)
        line = Line(
            self.fresh(),
            f"@{fn.name}",
            [a.name for a in args],
            {},
            [tensor_type(a.shape) for a in args],
            tensor_type(fn.result_shapes[0]),
            "call",
        )
        self.add_line(line)
        value = Value(line.result, fn.result_shapes[0], fn.result_domains[0], fn.result_finite[0])
        self.pool.append(value)
        self.maybe_annotate(value)


def unify_allowed(a: Domain, b: Domain) -> bool:
    da, db = a.root().device, b.root().device
    return da is None or db is None or da == db


@dataclass
class ProgramBuilder:
    rng: random.Random
    options: Options
    devices: list[Device]
    default_kind: str
    zero_sizes: bool
    special_rate: float
    c_target: str = "c"
    big: bool = False
    counter: int = 0
    functions: list[Function] = field(default_factory=list)
    special_inputs: set[str] = field(default_factory=set)
    input_prefix: str = ""
    default_domain: Domain = field(default_factory=Domain)

    def fresh(self) -> str:
        self.counter += 1
        return f"%{self.counter}" if self.rng.random() < 0.5 else f"%v{self.counter}"

    @property
    def max_elements(self) -> int:
        return BIG_MAX_ELEMENTS if self.big else MAX_ELEMENTS

    def dim(self) -> int:
        if self.zero_sizes and self.rng.random() < 0.06:
            return 0
        if self.big and self.rng.random() < 0.35:
            return self.rng.choice(BIG_DIMS)
        return self.rng.choices([1, 2, 3, 4, 5, 7], [25, 22, 22, 10, 12, 9])[0]

    def shape(self, rank: int | None = None) -> Shape:
        for _ in range(20):
            r = rank if rank is not None else self.rng.choices([0, 1, 2, 3, 4], [7, 20, 30, 25, 18])[0]
            shape = tuple(self.dim() for _ in range(r))
            if size(shape) <= self.max_elements:
                return shape
        return (1,) * (rank or 0)

    def reshaped(self, shape: Shape) -> Shape:
        """A random shape with as many elements."""
        n = size(shape)
        rank = self.rng.choice([0, 1, 2, 3, 4]) if n == 1 else self.rng.choice([1, 2, 2, 3, 3, 4])
        if n == 0:
            dims = [self.rng.choice([0, 1, 2, 3]) for _ in range(max(rank, 1))]
            dims[self.rng.randrange(len(dims))] = 0
            return tuple(dims)
        factors = prime_factors(n)
        dims = [1] * rank
        for f in factors:
            dims[self.rng.randrange(rank)] *= f
        return tuple(dims)


def pool_out(size: int, before: int, after: int, window: int, stride: int, dilation: int, ceil: bool) -> int | None:
    """A pooling output size (ceil mode: rounded up, less a last window starting in the padding
    after), or None when some window holds no element of the input (the verifier refuses it)."""
    span = dilation * (window - 1) + 1
    if size + before + after < span:
        return None
    out = (size + before + after - span) // stride + 1
    if ceil and (size + before + after - span) % stride and out * stride < size + before:
        out += 1
    starts = [o * stride - before for o in range(out)]
    if not all(any(0 <= s + t * dilation < size for t in range(window)) for s in starts):
        return None
    return out


def prime_factors(n: int) -> list[int]:
    out, f = [], 2
    while n > 1 and f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    return out + ([n] if n > 1 else [])


# --- functions and the module -----------------------------------------------------------------


def signature_attr(rng: random.Random, prog: ProgramBuilder, device: Device | None) -> str:
    if device is None:
        return ""
    return f" {{relay.se_scope = {spell_scope(rng, device, prog.default_kind, prog.c_target)}}}"


def build_function(
    prog: ProgramBuilder, name: str, annotate: bool, num_ops: int, results: int = 1
) -> tuple[str, Function]:
    rng = prog.rng
    b = Builder(rng, prog, annotate)
    prog.input_prefix = "" if name == "main" else f"{name}."
    attr_params: dict[int, Device] = {}
    for _ in range(rng.choice([1, 1, 2, 3])):
        device = rng.choice(prog.devices) if annotate and rng.random() < 0.25 else None
        if device is not None:
            attr_params[len(b.params)] = device
        b.param(prog.shape(), device)
    if name != "main":
        b.fixed_params = rng.random() < 0.5
    for _ in range(num_ops):
        b.step()
    returned = pick_results(b, results)
    result_domains, attrs = [], []
    for value in returned:
        bound = value.domain.root().device if value.domain is not None else None
        attr_device = None
        if annotate and rng.random() < 0.25:
            attr_device = bound or value.returned_scope or rng.choice(prog.devices)
        if value.domain is not None:
            domain = value.domain
            if attr_device is not None:
                domain.root().device = attr_device
        else:
            domain = Domain(value.returned_scope or attr_device)
        result_domains.append(domain)
        attrs.append(signature_attr(rng, prog, attr_device))
    params = ", ".join(
        f"{p.name}: {tensor_type(p.shape)}{signature_attr(rng, prog, attr_params.get(i))}"
        for i, p in enumerate(b.params)
    )
    result_types = [tensor_type(v.shape) + a for v, a in zip(returned, attrs)]
    results_text = result_types[0] if len(result_types) == 1 and not attrs[0] else f"({', '.join(result_types)})"
    names = ", ".join(v.name for v in returned)
    types = ", ".join(tensor_type(v.shape) for v in returned)
    body = "\n".join(b.lines)
    text = f"func.func @{name}({params}) -> {results_text} {{\n{body}\n  func.return {names} : {types}\n}}\n"
    fn = Function(
        name, b.params, b.param_domains, [v.shape for v in returned], result_domains, [v.finite for v in returned]
    )
    return text, fn


def pick_results(b: Builder, count: int) -> list[Value]:
    """The last value, and for several results earlier ones."""
    out = [b.pool[-1]]
    while len(out) < count:
        out.append(b.rng.choice(b.pool))
    return out


def generate(rng: random.Random, options: Options | None = None) -> Program:
    """A random program (see the module docstring)."""
    options = options or Options()
    roll = rng.random()
    if roll < 0.1:
        targets, devices, kinds = ("c",), [("cpu", 0)], ["cpu"]
    elif roll < 0.17:
        targets, devices, kinds = ("opencl",), [("opencl", 0), ("opencl", 1)], ["opencl"]
    else:
        targets = ("c", "opencl") if rng.random() < 0.8 else ("opencl", "c")
        devices = [("cpu", 0), ("opencl", 0), ("opencl", 1)]
        if rng.random() < 0.05:
            devices.append(("cpu", 1))
        kinds = ["cpu", "opencl"]
    default_kind = rng.choice(kinds)
    if len(targets) == 1 and targets == ("opencl",):
        default_kind = "opencl"
    annotate = len(devices) > 1 and rng.random() < 0.85
    c_target = "c" if rng.random() < 0.7 else rng.choice(C_TARGETS)
    targets = tuple(c_target if t == "c" else t for t in targets)
    prog = ProgramBuilder(
        rng,
        options,
        devices,
        default_kind,
        zero_sizes=rng.random() < 0.2,
        special_rate=0.15 if rng.random() < 0.3 else 0.0,
        c_target=c_target,
        big=rng.random() < 0.15,
    )
    texts = []
    for i in range(rng.choice([0, 0, 0, 1, 1, 2])):
        text, fn = build_function(prog, f"f{i}", annotate, rng.randint(1, 6))
        texts.append(text)
        prog.functions.append(fn)
    results = 2 if rng.random() < 0.1 else 1
    text, _ = build_function(prog, "main", annotate, rng.randint(2, 14), results)
    if texts and rng.random() < 0.3:
        texts.insert(rng.randrange(len(texts) + 1), text)  # @main before some helpers
    else:
        texts.append(text)
    expect_conflict = False
    module = "\n".join(texts)
    if annotate and rng.random() < options.conflict_rate:
        module, expect_conflict = inject_conflict(rng, module, devices, default_kind, prog.c_target)
    return Program(
        module,
        targets,
        default_kind,
        rng.randrange(2**31),
        frozenset(prog.special_inputs),
        expect_conflict,
    )


def inject_conflict(
    rng: random.Random, text: str, devices: list[Device], default_kind: str, c_target: str
) -> tuple[str, bool]:
    """Pins two ops that share an operand on two different devices (a certain conflict when
    that operand is an op result that nothing frees)."""
    lines = text.split("\n")
    candidates = [i for i, line in enumerate(lines) if " = relay.add " in line and "se_scope" not in line]
    if not candidates:
        return text, False
    i = rng.choice(candidates)
    a, b = rng.sample(devices, 2)
    line = lines[i]
    name, rest = line.split(" = relay.add ", 1)
    operands, types = rest.split(" : ", 1)
    first = operands.split(", ")[0]
    types_in = types.split(" -> ")[0].strip("()").split(", ")[0]
    indent = line[: len(line) - len(line.lstrip())]
    new = [
        f"{indent}%conflict_a = relay.negative {first} {{se_scope = {spell_scope(rng, a, default_kind, c_target)}}} : {types_in}",
        f"{indent}%conflict_b = relay.negative {first} {{se_scope = {spell_scope(rng, b, default_kind, c_target)}}} : {types_in}",
    ]
    lines[i:i] = new
    return "\n".join(lines), True


def program_case(seed: int, index: int, options: Options | None = None) -> dict:
    """Program `index` of the run with `seed`, as a case for `checks.check_program`."""
    rng = random.Random(f"{seed}:program:{index}")
    program = generate(rng, options)
    return {
        "text": program.text,
        "targets": list(program.targets),
        "default_device": program.default_device,
        "input_seed": program.seed,
        "special_inputs": sorted(program.special_inputs),
        "may_conflict": program.expect_conflict,
        "stage_checks": rng.random() < 0.3,
        "origin": f"program {index} of seed {seed}",
    }
