"""
Random relay programs for differential tests.

    text = random_module_text(seed, num_ops=12, devices=("cpu", "opencl"))
    inputs = random_inputs(xrelay.parse(text), seed)

The generator keeps the program conflict-free by construction. Each op is given a device
first; its operands are values that are *free* (constants and `on_device` results, whose uses
are planned apart), *open* (parameters not used yet: they take the device of their first use)
or *bound* to that same device; the op is pinned with an `on_device` unless a bound operand
already forces its device. A value crosses devices only through an `on_device` result or an
explicit `device_copy`. So plan-devices must succeed on every generated module.

Devices are names like "cpu", "opencl" or "opencl:1" (virtual device id 1). Values stay small
(at most a few dozen elements) so the interpreter and kernel builds stay fast, and ops that can
produce NaN or overflow on random inputs (exp, log, sqrt, rsqrt, divide, power) are left out.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

UNARY = ["relay.negative", "relay.tanh", "relay.sigmoid", "relay.abs", "relay.nn.relu", "relay.erf"]
BINARY = ["relay.add", "relay.subtract", "relay.multiply", "relay.maximum", "relay.minimum"]
REDUCE = ["relay.sum", "relay.mean", "relay.max", "relay.min"]
SHAPES = [(6,), (2, 3), (3, 4), (2, 3, 4), (1, 2, 3, 3), (2, 1, 4)]


def scope_text(device: str) -> str:
    name, _, vid = device.partition(":")
    return f"#relay.se_scope<device = {name}, id = {vid}>" if vid else f"#relay.se_scope<device = {name}>"


def tensor_type(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    bound: str | None  # the device this value is planned on; None while open or when free
    free: bool = False  # each use planned apart (constants, on_device results)


@dataclass
class Builder:
    rng: random.Random
    devices: Sequence[str]
    annotate: bool
    params: list[Value] = field(default_factory=list)
    pool: list[Value] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    counter: int = 0
    last_operands: list[Value] = field(default_factory=list)

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def param(self, shape: tuple[int, ...]) -> Value:
        value = Value(f"%p{len(self.params)}", shape, None)
        self.params.append(value)
        self.pool.append(value)
        return value

    def emit(self, text: str, shape: tuple[int, ...], bound: str | None, operands: Sequence[Value] = ()) -> Value:
        value = Value(self.fresh(), shape, bound)
        self.lines.append(f"  {value.name} = {text}")
        self.pool.append(value)
        self.last_operands = list(operands)
        return value

    def constant(self, shape: tuple[int, ...]) -> Value:
        values = ", ".join(f"{self.rng.uniform(-1, 1):.3f}" for _ in range(int(np.prod(shape))))
        dense = f"dense<[{values}]>" if len(shape) == 1 else f"dense<{self.rng.uniform(-1, 1):.3f}>"
        ty = tensor_type(shape)
        value = self.emit(f"relay.constant {{value = {dense} : {ty}}} : {ty}", shape, None)
        value.free = True
        return value

    # --- placement ---------------------------------------------------------------------------

    def pin(self, value: Value, device: str) -> None:
        """Pins an op result to `device`; the on_device result is free unless it constrains
        the result too."""
        value.bound = device
        flags = ", constrain_result = true" if self.rng.random() < 0.2 else ""
        ty = tensor_type(value.shape)
        pinned = self.emit(
            f"relay.on_device {value.name} {{se_scope = {scope_text(device)}{flags}}} : {ty}",
            value.shape,
            device if flags else None,
        )
        pinned.free = not flags

    def maybe_annotate(self, value: Value) -> None:
        if not self.annotate or value.bound is None:
            return
        roll = self.rng.random()
        ty = tensor_type(value.shape)
        if roll < 0.15:
            others = [d for d in self.devices if d != value.bound] or list(self.devices)
            dst = self.rng.choice(others)
            self.emit(
                f"relay.device_copy {value.name} {{src_se_scope = {scope_text(value.bound)}, "
                f"dst_se_scope = {scope_text(dst)}}} : {ty}",
                value.shape,
                dst,
            )
        elif roll < 0.3:
            self.emit(
                f"relay.on_device {value.name} {{se_scope = {scope_text(value.bound)}}} : {ty}",
                value.shape,
                None,
            ).free = True
        elif roll < 0.4:
            device = self.rng.choice(self.devices)
            self.emit(
                f"relay.on_device {value.name} {{se_scope = {scope_text(device)}, "
                f"constrain_body = false, constrain_result = false}} : {ty}",
                value.shape,
                None,
            ).free = True

    # --- operand choice ---------------------------------------------------------------------

    def pick(self, pred=lambda v: True, device: str | None = None) -> Value | None:
        """A pool value satisfying `pred` usable on `device`: free, open or bound to it."""
        candidates = [v for v in self.pool if pred(v) and (v.bound is None or device is None or v.bound == device)]
        if not candidates:
            return None
        recent = candidates[-4:]  # prefer recent values: deeper graphs
        return self.rng.choice(recent if self.rng.random() < 0.7 else candidates)

    def operand_for(self, shape: tuple[int, ...], device: str | None) -> Value:
        found = self.pick(lambda v: v.shape == shape, device)
        if found is not None and self.rng.random() < 0.8:
            return found
        return self.constant(shape) if self.rng.random() < 0.4 else self.param(shape)

    # --- ops ----------------------------------------------------------------------------------

    def step(self) -> None:
        device = self.rng.choice(self.devices) if self.annotate else None
        x = self.pick(device=device) or self.param(self.rng.choice(SHAPES))
        kind = self.rng.choice(
            ["unary"] * 4
            + ["binary"] * 4
            + ["reduce", "softmax", "transpose", "reshape", "dense", "concat", "slice", "bias", "expand", "clip"]
        )
        result = getattr(self, f"op_{kind}")(x, device)
        if result is None or device is None:
            return
        self.place(result, self.last_operands, device)
        self.maybe_annotate(result)

    def place(self, result: Value, operands: Sequence[Value], device: str) -> None:
        """Binds the op's open operands to `device` and pins the op unless an operand that is
        already bound forces it there."""
        forced = any(v.bound == device and not v.free for v in operands)
        for v in operands:
            if v.bound is None and not v.free:
                v.bound = device
        if not forced:
            self.pin(result, device)
        result.bound = device

    def op_unary(self, x: Value, device: str | None) -> Value:
        op = self.rng.choice(UNARY)
        return self.emit(f"{op} {x.name} : {tensor_type(x.shape)}", x.shape, device, [x])

    def op_clip(self, x: Value, device: str | None) -> Value:
        lo = round(self.rng.uniform(-1, 0), 2)
        hi = round(self.rng.uniform(0, 1), 2)
        return self.emit(
            f"relay.clip {x.name} {{a_min = {lo} : f32, a_max = {hi} : f32}} : {tensor_type(x.shape)}",
            x.shape,
            device,
            [x],
        )

    def op_binary(self, x: Value, device: str | None) -> Value:
        op = self.rng.choice(BINARY)
        roll = self.rng.random()
        if roll < 0.5:
            y = self.operand_for(x.shape, device)
        elif roll < 0.8:
            y = self.operand_for(x.shape[-1:], device)
        else:
            y = self.operand_for((1,) * len(x.shape), device)
        if self.rng.random() < 0.3:
            x, y = y, x
        out = tuple(np.broadcast_shapes(x.shape, y.shape))
        return self.emit(
            f"{op} {x.name}, {y.name} : ({tensor_type(x.shape)}, {tensor_type(y.shape)}) -> {tensor_type(out)}",
            out,
            device,
            [x, y],
        )

    def op_bias(self, x: Value, device: str | None) -> Value | None:
        if len(x.shape) < 2:
            return None
        b = self.operand_for((x.shape[1],), device)
        return self.emit(
            f"relay.nn.bias_add {x.name}, {b.name} : ({tensor_type(x.shape)}, {tensor_type(b.shape)}) -> {tensor_type(x.shape)}",
            x.shape,
            device,
            [x, b],
        )

    def one_operand(self, op: str, x: Value, attrs: str, out: tuple[int, ...], device: str | None) -> Value:
        attr_text = f" {{{attrs}}}" if attrs else ""
        return self.emit(f"{op} {x.name}{attr_text} : ({tensor_type(x.shape)}) -> {tensor_type(out)}", out, device, [x])

    def op_reduce(self, x: Value, device: str | None) -> Value | None:
        if len(x.shape) < 2:
            return None
        rank = len(x.shape)
        axes = sorted(self.rng.sample(range(rank), self.rng.randint(1, rank - 1)))
        axes_text = [a - rank if self.rng.random() < 0.3 else a for a in axes]
        keep = self.rng.random() < 0.5
        out = (
            tuple(1 if i in axes else d for i, d in enumerate(x.shape))
            if keep
            else tuple(d for i, d in enumerate(x.shape) if i not in axes)
        )
        attrs = f"axis = array<i64: {', '.join(map(str, axes_text))}>" + (", keepdims = true" if keep else "")
        return self.one_operand(self.rng.choice(REDUCE), x, attrs, out, device)

    def op_softmax(self, x: Value, device: str | None) -> Value:
        axis = self.rng.randrange(-len(x.shape), len(x.shape))
        return self.one_operand("relay.nn.softmax", x, f"axis = {axis} : i64", x.shape, device)

    def op_transpose(self, x: Value, device: str | None) -> Value | None:
        if len(x.shape) < 2:
            return None
        perm = list(range(len(x.shape)))
        self.rng.shuffle(perm)
        out = tuple(x.shape[p] for p in perm)
        return self.one_operand("relay.transpose", x, f"axes = array<i64: {', '.join(map(str, perm))}>", out, device)

    def op_reshape(self, x: Value, device: str | None) -> Value:
        size = int(np.prod(x.shape))
        options = [s for s in SHAPES if int(np.prod(s)) == size and s != x.shape] + [(size,)]
        out = self.rng.choice(options)
        return self.one_operand("relay.reshape", x, "", out, device)

    def op_expand(self, x: Value, device: str | None) -> Value:
        axis = self.rng.randint(0, len(x.shape))
        out = x.shape[:axis] + (1,) + x.shape[axis:]
        return self.one_operand("relay.expand_dims", x, f"axis = {axis} : i64", out, device)

    def op_slice(self, x: Value, device: str | None) -> Value:
        dim = x.shape[0]
        begin = self.rng.randrange(dim)
        if self.rng.random() < 0.3:
            attrs = f"begin = array<i64: {dim - 1}>, end = array<i64: -{dim + 1}>, strides = array<i64: -1>"
            out = (dim,) + x.shape[1:]
        else:
            attrs = f"begin = array<i64: {begin}>, end = array<i64: {dim}>"
            out = (dim - begin,) + x.shape[1:]
        return self.one_operand("relay.strided_slice", x, attrs, out, device)

    def op_concat(self, x: Value, device: str | None) -> Value:
        y = self.operand_for(x.shape, device)
        axis = self.rng.randrange(len(x.shape))
        out = tuple(d * 2 if i == axis else d for i, d in enumerate(x.shape))
        ty = tensor_type(x.shape)
        return self.emit(
            f"relay.concatenate {x.name}, {y.name} {{axis = {axis} : i64}} : ({ty}, {ty}) -> {tensor_type(out)}",
            out,
            device,
            [x, y],
        )

    def op_dense(self, x: Value, device: str | None) -> Value | None:
        if len(x.shape) != 2:
            return None
        units = self.rng.choice([2, 3, 5])
        w = self.operand_for((units, x.shape[1]), device)
        out = (x.shape[0], units)
        return self.emit(
            f"relay.nn.dense {x.name}, {w.name} : ({tensor_type(x.shape)}, {tensor_type(w.shape)}) -> {tensor_type(out)}",
            out,
            device,
            [x, w],
        )


def random_module_text(
    rng: random.Random | int,
    *,
    num_ops: int = 10,
    devices: Sequence[str] = ("cpu", "opencl"),
    annotate: bool = True,
) -> str:
    """A verified relay module with `@main`: about `num_ops` primitive ops on random shapes,
    with random placement annotations on `devices` (none when `annotate` is false)."""
    if not isinstance(rng, random.Random):
        rng = random.Random(rng)
    b = Builder(rng, tuple(devices), annotate)
    b.param(rng.choice(SHAPES))
    for _ in range(num_ops):
        b.step()
    result = b.pool[-1]
    params = ", ".join(f"{p.name}: {tensor_type(p.shape)}" for p in b.params)
    ty = tensor_type(result.shape)
    body = "\n".join(b.lines)
    return f"func.func @main({params}) -> {ty} {{\n{body}\n  func.return {result.name} : {ty}\n}}\n"


def random_inputs(module: ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal float32 arrays for @main's parameters, by name."""
    rng = np.random.default_rng(seed)
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    return {arg.name_hint: rng.standard_normal(arg.type.get_shape()).astype(np.float32) for arg in main.args}
