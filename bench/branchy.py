"""A branchy model: two towers of convolutions on one input, joined at the end.

    text, params = branchy_module()                            # no annotations: for placement
    text, params = branchy_module(devices=("cpu", "opencl"))   # tower a on cpu, tower b on opencl
    exe = xrelay.build(text, targets=("c", "opencl"), params=params)
    exe.run(x=branchy_input())

%x (batch 1, `channels` x `size` x `size`) feeds two towers of `depth` conv3x3 (padding 1) +
bias + relu each; the towers do not read each other, so on two devices they can run at the
same time. The join (`join="add"`) adds the two towers' results and applies relu: fuse-ops
makes it one kernel with tower a's last conv, which then waits for tower b; `join="concat"`
concatenates them on the channel axis, a kernel of its own, so each tower's convs are
independent of the other's to the end (on the host's device unless
the towers' scopes say otherwise: plan-devices puts an unannotated op where its inputs are, or
on the default device). `devices[i]` pins every op of tower i with `relay.on_device` (None:
no annotation, left to the default device or to a placement pass).

Used by bench/concurrent_devices.py (devices at the same time) and by the placement bench.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from models import Relay, random_inputs, tensor_type

CHANNELS, SIZE, DEPTH = 64, 28, 3
TOWERS = ("a", "b")


def branchy_relay(
    devices: tuple[str | None, str | None] = (None, None),
    channels: int = CHANNELS,
    size: int = SIZE,
    depth: int = DEPTH,
    join: str = "add",
) -> str:
    """The relay text of the model (see the module docstring)."""
    g = Relay()
    x = g.param("x", 1, channels, size, size)
    outs: list[str] = []
    for tower, device in zip(TOWERS, devices):
        h = x if device is None else device_copy(g, x, device)
        for i in range(1, depth + 1):
            w, b = g.param(f"w{tower}{i}", channels, channels, 3, 3), g.param(f"b{tower}{i}", channels)
            h = g.op("relay.nn.relu", g.conv3x3(h, w, b))
            if device is not None:
                h = on_device(g, h, device)
        outs.append(h)
    if join == "concat":
        shape = (1, 2 * channels, size, size)
        return g.text(g.op("relay.concatenate", *outs, shape=shape, attrs="axis = 1 : i64"))
    return g.text(g.op("relay.nn.relu", g.op("relay.add", *outs)))


def on_device(g: Relay, value: str, device: str) -> str:
    """`relay.on_device` of `value` (its op on `device`): printed here, as the op's syntax
    has one type, which `Relay.op` prints only for its unary ops."""
    result = f"%{len(g.body)}"
    scope = f"se_scope = #relay.se_scope<device = {device}>"
    g.body.append(f"  {result} = relay.on_device {value} {{{scope}}} : {tensor_type(g.shapes[value])}")
    g.shapes[result] = g.shapes[value]
    return result


def device_copy(g: Relay, value: str, device: str) -> str:
    """`relay.device_copy` of `value` to `device` (from wherever it is)."""
    result = f"%{len(g.body)}"
    scope = f"src_se_scope = #relay.se_scope<>, dst_se_scope = #relay.se_scope<device = {device}>"
    g.body.append(f"  {result} = relay.device_copy {value} {{{scope}}} : {tensor_type(g.shapes[value])}")
    g.shapes[result] = g.shapes[value]
    return result


def branchy_module(
    devices: tuple[str | None, str | None] = (None, None),
    channels: int = CHANNELS,
    size: int = SIZE,
    depth: int = DEPTH,
    seed: int = 0,
    join: str = "add",
) -> tuple[str, dict[str, np.ndarray]]:
    """The relay text and its params (every argument of @main but %x: weights scaled like a
    trained layer's), to bind with `xrelay.build(text, params=params)`."""
    text = branchy_relay(devices, channels, size, depth, join)
    arrays = random_inputs(text, seed)
    del arrays["x"]
    return text, arrays


def branchy_input(channels: int = CHANNELS, size: int = SIZE, seed: int = 1) -> np.ndarray:
    """A random %x for the model."""
    return np.random.default_rng(seed).standard_normal((1, channels, size, size)).astype(np.float32)
