"""
ONNX's LSTM and GRU, unrolled over their static sequence into relay ops the compiler has
(dense, add, multiply, sigmoid, tanh, strided slices, concatenations).

The input projection of every step is one dense over the whole sequence; each step adds the
recurrent dense of the previous hidden state (one dense for all gates) and applies the gates of
onnx's equations, slicing the step's gates out of both inside the gates' elementwise kernel
(fusion then makes a step one dense and one kernel of gates for GRU, two for LSTM). A
zero initial state (absent, or known zeros as torch exports it) skips the first recurrent
dense. Forward, reverse and bidirectional directions, both layouts, peepholes, `clip` and the
activations Sigmoid, Tanh and Relu are supported; variable sequence lengths and LSTM's
`input_forget` are not (an `OnnxImportError` names them). Registered in `CONVERTERS` on import
(onnx_import.py imports this module).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import SSAValue

from xrelay.frontend.builder import Builder, shape_of
from xrelay.frontend.onnx_ops import NodeImporter, Result, converter

Activation = Callable[[Builder, SSAValue], SSAValue]
_ACTIVATIONS: dict[str, Activation] = {
    "sigmoid": Builder.sigmoid,
    "tanh": Builder.tanh,
    "relu": lambda b, x: b.nn.relu(x),
}


@dataclass
class Recurrence:
    """What an LSTM or GRU node says, with its tensors split per direction."""

    n: NodeImporter
    gates: int  # 4 for LSTM (i, o, f, c), 3 for GRU (z, r, h)
    seq: int
    batch: int
    hidden: int
    directions: list[str]  # "forward" / "reverse", in the order of the direction axis
    activations: list[Activation]  # per direction: f, g (and h for LSTM)
    clip: float | None
    transposed: dict[tuple[int, int, int], SSAValue] = field(default_factory=dict[tuple[int, int, int], SSAValue])

    @property
    def b(self) -> Builder:
        return self.n.b

    def weight(self, index: int, direction: int) -> SSAValue:
        """W or R of `direction`: [gates * hidden, in]."""
        w = self.n.tensor(index)
        ws = shape_of(w)
        return self.b.reshape(self.b.strided_slice(w, [direction], [direction + 1]), ws[1:])

    def recurrent(self, x: SSAValue, direction: int, lo: int, hi: int) -> SSAValue:
        """`x @ R[lo:hi].T` of `direction`'s recurrent weight R. A known R (an initializer) is
        transposed once here into a [hidden, hi - lo] constant that every step's matmul reads
        along its rows (vectorised without a horizontal sum per output, 2-3x faster than the
        dense's dot products at these sizes); an R given at run time stays a dense."""
        name = self.n.node.input[2]
        known = self.n.known_values.get(name)
        if known is None:
            w = self.weight(2, direction)
            return self.b.nn.dense(
                x, w if (lo, hi) == (0, self.gates * self.hidden) else self.b.strided_slice(w, [lo], [hi])
            )
        key = (direction, lo, hi)
        if key not in self.transposed:
            self.transposed[key] = self.b.const(np.ascontiguousarray(known[direction, lo:hi].T), f"{name}.t{direction}")
        return self.b.nn.matmul(x, self.transposed[key])

    def bias(self, direction: int) -> tuple[SSAValue | None, SSAValue | None]:
        """Wb and Rb of `direction` ([gates * hidden] each), or None when B is absent."""
        if not self.n.has(3):
            return None, None
        size = self.gates * self.hidden
        b, bias = self.b, self.n.tensor(3)
        row = b.reshape(b.strided_slice(bias, [direction], [direction + 1]), (2 * size,))
        return b.strided_slice(row, [0], [size]), b.strided_slice(row, [size], [2 * size])

    def initial(self, index: int, direction: int) -> SSAValue | None:
        """initial_h or initial_c of `direction` ([batch, hidden]); None when absent or known zeros."""
        if not self.n.has(index):
            return None
        name = self.n.node.input[index]
        known = self.n.known_values.get(name)
        if known is not None and not known.any():
            return None
        state = self.n.tensor(index)
        if self.layout == 1:
            state = self.b.transpose(state, (1, 0, 2))
        return self.b.reshape(self.b.strided_slice(state, [direction], [direction + 1]), (self.batch, self.hidden))

    @property
    def layout(self) -> int:
        return int(self.n.attr("layout", 0))

    def projected(self, direction: int) -> SSAValue:
        """X @ W.T + Wb (+ Rb where it adds directly) of every step, [seq, batch, gates * hidden]:
        one dense whose steps the gate kernels slice (a slice per step would be a kernel each)."""
        b = self.b
        x = self.n.tensor(0)
        if self.layout == 1:
            x = b.transpose(x, (1, 0, 2))
        flat = b.reshape(x, (self.seq * self.batch, shape_of(x)[2]))
        y = b.nn.dense(flat, self.weight(1, direction))
        wb, rb = self.bias(direction)
        if wb is not None and rb is not None:
            if self.gates == 3:  # GRU's Rb of the candidate h sits inside the reset: added per step
                rb = b.multiply(rb, np.repeat(np.array([1, 1, 0], np.float32), self.hidden))
            y = b.add(y, b.add(wb, rb))
        return b.reshape(y, (self.seq, self.batch, self.gates * self.hidden))

    def step_gate(self, steps: SSAValue, t: int, index: int, recurrent: SSAValue | None) -> SSAValue:
        """Gate `index` of step `t`'s projection ([batch, hidden]), plus that gate of the
        `recurrent` dense ([batch, gates * hidden]) when there is one. Slicing here, after the
        dense, lets fusion put the slices and the add into the elementwise kernel of the gates."""
        b, h = self.b, self.hidden
        x = b.reshape(b.strided_slice(steps, [t, 0, index * h], [t + 1, self.batch, (index + 1) * h]), (self.batch, h))
        return x if recurrent is None else b.add(x, self.gate(recurrent, index))

    def gate(self, values: SSAValue, index: int) -> SSAValue:
        """Gate `index` of [batch, gates * hidden] values."""
        h = self.hidden
        return self.b.strided_slice(values, [0, index * h], [self.batch, (index + 1) * h])

    def act(self, direction: int, which: int, x: SSAValue, clipped: bool = True) -> SSAValue:
        """Activation `which` (f, g, h) of `direction`; `clip` bounds a gate's input (not the
        cell state's, as onnxruntime)."""
        if self.clip is not None and clipped:
            x = self.b.clip(x, -self.clip, self.clip)
        return self.activations[direction * self.per_direction + which](self.b, x)

    @property
    def per_direction(self) -> int:
        return 3 if self.gates == 4 else 2

    def order(self, direction: int) -> list[int]:
        steps = list(range(self.seq))
        return steps if self.directions[direction] == "forward" else steps[::-1]

    def outputs(self, hs: list[list[SSAValue]], finals: Sequence[list[SSAValue]]) -> list[Result]:
        """Y [seq, directions, batch, hidden] (layout 1: [batch, seq, directions, hidden]) from the
        hidden state of each direction at each step, then Y_h (and Y_c) from `finals`."""
        b, used = self.b, list(self.n.node.output)
        dirs = len(self.directions)
        results: list[Result] = []
        if used and used[0]:
            cells = [b.reshape(hs[d][t], (1, 1, self.batch, self.hidden)) for t in range(self.seq) for d in range(dirs)]
            y = b.reshape(b.concatenate(cells, 0), (self.seq, dirs, self.batch, self.hidden))
            results.append(b.transpose(y, (2, 0, 1, 3)) if self.layout == 1 else y)
        else:
            results.append(None)
        for final in finals:
            state = b.concatenate([b.reshape(v, (1, self.batch, self.hidden)) for v in final], 0)
            results.append(b.transpose(state, (1, 0, 2)) if self.layout == 1 else state)
        return results


def _recurrence(n: NodeImporter, gates: int) -> Recurrence:
    x, w = n.shape(0), n.shape(1)
    layout = int(n.attr("layout", 0))
    seq, batch = (x[0], x[1]) if layout == 0 else (x[1], x[0])
    hidden = int(n.attr("hidden_size", w[1] // gates))
    direction = n.only("direction", "forward", "reverse", "bidirectional", default="forward")
    directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
    if w[0] != len(directions) or w[1] != gates * hidden:
        raise n.error(f"expected W of shape [{len(directions)}, {gates * hidden}, input], but found {list(w)}")
    if n.has(4):
        lengths = n.known(4, "sequence_lens")
        if (lengths != seq).any():
            raise n.error(f"variable sequence lengths are not supported (sequence_lens {lengths.tolist()}, seq {seq})")
    per = 3 if gates == 4 else 2
    names = [a.decode() if isinstance(a, bytes) else str(a) for a in n.attr("activations", [])]
    names = names or (["Sigmoid", "Tanh", "Tanh"] if gates == 4 else ["Sigmoid", "Tanh"]) * len(directions)
    unknown = sorted({a for a in names if a.lower() not in _ACTIVATIONS})
    if unknown or len(names) != per * len(directions):
        raise n.error(f"activations {names} are not supported (expected {per} per direction of Sigmoid, Tanh, Relu)")
    clip = n.attr("clip")
    return Recurrence(
        n,
        gates,
        seq,
        batch,
        hidden,
        directions,
        [_ACTIVATIONS[a.lower()] for a in names],
        None if clip is None else float(clip),
    )


@converter("LSTM")
def lstm(n: NodeImporter) -> list[Result]:
    """onnx's LSTM equations (gates i, o, f, c), with peepholes P when given."""
    if n.attr("input_forget", 0):
        raise n.error("attribute input_forget = 1 is not supported")
    r = _recurrence(n, 4)
    b = r.b
    hs: list[list[SSAValue]] = []
    last_h: list[SSAValue] = []
    last_c: list[SSAValue] = []
    for d in range(len(r.directions)):
        steps = r.projected(d)
        peep = _peepholes(r, d)
        h, c = r.initial(5, d), r.initial(6, d)
        outs: dict[int, SSAValue] = {}
        for t in r.order(d):
            rec = None if h is None else r.recurrent(h, d, 0, 4 * r.hidden)
            i_in, f_in, o_in = (r.step_gate(steps, t, k, rec) for k in (0, 2, 1))
            if peep is not None and c is not None:
                i_in, f_in = b.add(i_in, b.multiply(c, peep[0])), b.add(f_in, b.multiply(c, peep[2]))
            i, f, cand = r.act(d, 0, i_in), r.act(d, 0, f_in), r.act(d, 1, r.step_gate(steps, t, 3, rec))
            c = b.multiply(i, cand) if c is None else b.add(b.multiply(f, c), b.multiply(i, cand))
            o = r.act(d, 0, o_in if peep is None else b.add(o_in, b.multiply(c, peep[1])))
            h = outs[t] = b.multiply(o, r.act(d, 2, c, clipped=False))
        assert h is not None and c is not None
        hs.append([outs[t] for t in range(r.seq)])
        last_h.append(h)
        last_c.append(c)
    return r.outputs(hs, [last_h, last_c])


def _peepholes(r: Recurrence, direction: int) -> list[SSAValue] | None:
    """P of `direction` as [hidden] vectors for the gates i, o, f; None when absent."""
    if not r.n.has(7):
        return None
    b, h = r.b, r.hidden
    p = b.reshape(b.strided_slice(r.n.tensor(7), [direction], [direction + 1]), (3 * h,))
    return [b.strided_slice(p, [k * h], [(k + 1) * h]) for k in range(3)]


@converter("GRU")
def gru(n: NodeImporter) -> list[Result]:
    """onnx's GRU equations (gates z, r, h), either form of linear_before_reset."""
    r = _recurrence(n, 3)
    b, hidden = r.b, r.hidden
    before_reset = bool(n.attr("linear_before_reset", 0))
    hs: list[list[SSAValue]] = []
    last_h: list[SSAValue] = []
    for d in range(len(r.directions)):
        steps = r.projected(d)
        rb = r.bias(d)[1]
        rb_h = None if rb is None else b.strided_slice(rb, [2 * hidden], [3 * hidden])
        h = r.initial(5, d)
        outs: dict[int, SSAValue] = {}
        for t in r.order(d):
            # with linear_before_reset, one dense of H gives the recurrent parts of all three gates
            rec = None if h is None else r.recurrent(h, d, 0, (3 if before_reset else 2) * hidden)
            z = r.act(d, 0, r.step_gate(steps, t, 0, rec))
            reset = r.act(d, 0, r.step_gate(steps, t, 1, rec))
            rec_h = None if rec is None or not before_reset else r.gate(rec, 2)
            h_in = _gru_candidate(r, d, r.step_gate(steps, t, 2, None), h, reset, rb_h, before_reset, rec_h)
            cand = r.act(d, 1, h_in)
            # H = (1 - z) * cand + z * H_prev = cand + z * (H_prev - cand)
            h = outs[t] = (
                b.subtract(cand, b.multiply(z, cand)) if h is None else b.add(cand, b.multiply(z, b.subtract(h, cand)))
            )
        assert h is not None
        hs.append([outs[t] for t in range(r.seq)])
        last_h.append(h)
    return r.outputs(hs, [last_h])


def _gru_candidate(
    r: Recurrence,
    direction: int,
    x_h: SSAValue,
    h: SSAValue | None,
    reset: SSAValue,
    rb_h: SSAValue | None,
    before_reset: bool,
    recurrent_h: SSAValue | None = None,
) -> SSAValue:
    """The input of the candidate's activation: `x_h + (r * H) @ Rh.T + Rbh`, or with
    linear_before_reset `x_h + r * (H @ Rh.T + Rbh)`, where `H @ Rh.T` is `recurrent_h` when
    given (the candidate's part of the step's one recurrent dense); H = 0 leaves the bias terms
    alone."""
    b, hidden = r.b, r.hidden
    if h is None:
        if rb_h is None:
            return x_h
        return b.add(x_h, b.multiply(reset, rb_h) if before_reset else rb_h)
    if before_reset:
        recurrent = r.recurrent(h, direction, 2 * hidden, 3 * hidden) if recurrent_h is None else recurrent_h
        if rb_h is not None:
            recurrent = b.add(recurrent, rb_h)
        return b.add(x_h, b.multiply(reset, recurrent))
    recurrent = r.recurrent(b.multiply(reset, h), direction, 2 * hidden, 3 * hidden)
    return b.add(x_h, recurrent if rb_h is None else b.add(recurrent, rb_h))
