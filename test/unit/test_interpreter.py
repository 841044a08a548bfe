"""The reference interpreter against independent formulations (Python loops, `math`, list
slicing) on random inputs, one op at a time, plus regions, calls and input errors."""

import itertools
import math

import numpy as np
import pytest

import xrelay

RNG = np.random.default_rng(0)


def ttype(shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def random(*shape, low=-2.0, high=2.0) -> np.ndarray:
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def run_op(op: str, inputs, result_shape, attrs: str = "") -> np.ndarray:
    """Runs one op, written in the generic form with its attributes in `{...}`."""
    params = ", ".join(f"%a{i}: {ttype(x.shape)}" for i, x in enumerate(inputs))
    operands = ", ".join(f"%a{i}" for i in range(len(inputs)))
    in_types = ", ".join(ttype(x.shape) for x in inputs)
    res = ttype(result_shape)
    text = (
        f"func.func @main({params}) -> {res} {{\n"
        f'  %r = "{op}"({operands}) {attrs} : ({in_types}) -> {res}\n'
        f"  func.return %r : {res}\n}}"
    )
    out = xrelay.interpret(xrelay.parse(text), {f"a{i}": x for i, x in enumerate(inputs)})
    assert out.dtype == np.float32 and out.shape == tuple(result_shape)
    return out


def array_attr(values) -> str:
    return "array<i64" + "".join(f"{', ' if i else ': '}{v}" for i, v in enumerate(values)) + ">"


def indices(shape):
    return itertools.product(*(range(d) for d in shape))


# --- elementwise and broadcast ----------------------------------------------------------------

UNARY = {
    "relay.negative": lambda v: -v,
    "relay.exp": math.exp,
    "relay.log": math.log,
    "relay.sqrt": math.sqrt,
    "relay.rsqrt": lambda v: 1 / math.sqrt(v),
    "relay.tanh": math.tanh,
    "relay.sigmoid": lambda v: 1 / (1 + math.exp(-v)),
    "relay.abs": abs,
    "relay.erf": math.erf,
    "relay.nn.relu": lambda v: max(v, 0.0),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    positive = op in ("relay.log", "relay.sqrt", "relay.rsqrt")
    x = random(3, 4, low=0.1 if positive else -3.0, high=3.0)
    expected = np.vectorize(UNARY[op])(x.astype(np.float64))
    np.testing.assert_allclose(run_op(op, [x], x.shape), expected, rtol=1e-5, atol=1e-6)


def test_clip():
    x = random(5, 4, low=-3, high=8)
    out = run_op("relay.clip", [x], x.shape, "{a_min = 0.0 : f32, a_max = 6.0 : f32}")
    np.testing.assert_array_equal(out, [[min(max(v, 0.0), 6.0) for v in row] for row in x])


BINARY = {
    "relay.add": lambda a, b: a + b,
    "relay.subtract": lambda a, b: a - b,
    "relay.multiply": lambda a, b: a * b,
    "relay.divide": lambda a, b: a / b,
    "relay.maximum": max,
    "relay.minimum": min,
    "relay.power": math.pow,
}

BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    ((4, 1, 3), (2, 1)),
    ((1,), (2, 2)),
    ((2, 3, 1), (2, 1, 4)),
]


def broadcast_loops(fn, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    rank = max(a.ndim, b.ndim)
    sa = (1,) * (rank - a.ndim) + a.shape
    sb = (1,) * (rank - b.ndim) + b.shape
    a, b = a.reshape(sa), b.reshape(sb)
    shape = tuple(max(x, y) for x, y in zip(sa, sb))
    out = np.zeros(shape, np.float64)
    for idx in indices(shape):
        ia = tuple(i if d > 1 else 0 for i, d in zip(idx, sa))
        ib = tuple(i if d > 1 else 0 for i, d in zip(idx, sb))
        out[idx] = fn(float(a[ia]), float(b[ib]))
    return out


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_binary_broadcast(op, shapes):
    a = random(*shapes[0], low=0.5, high=2.0)
    b = random(*shapes[1], low=0.5, high=2.0)
    if op in ("relay.add", "relay.subtract", "relay.maximum", "relay.minimum"):
        a, b = a - 1.25, b - 1.25  # both signs
    expected = broadcast_loops(BINARY[op], a, b)
    np.testing.assert_allclose(run_op(op, [a, b], expected.shape), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "axis, shape", [(None, (2, 3, 4)), (1, (2, 3)), (0, (2, 3, 4)), (-1, (2, 3, 4)), (2, (1, 2, 3, 5))]
)
def test_bias_add(axis, shape):
    x = random(*shape)
    a = axis if axis is not None else 1
    b = random(shape[a])
    expected = np.zeros(shape, np.float32)
    for idx in indices(shape):
        expected[idx] = x[idx] + b[idx[a]]
    attrs = "" if axis is None else f"{{axis = {axis} : i64}}"
    np.testing.assert_allclose(run_op("relay.nn.bias_add", [x, b], shape, attrs), expected, rtol=1e-6)


# --- shape ops ----------------------------------------------------------------------------------


def test_reshape():
    x = random(2, 3, 4)
    out = run_op("relay.reshape", [x], (4, 6))
    assert out.flatten().tolist() == x.flatten().tolist()


@pytest.mark.parametrize("axes", [None, (0, 1, 2), (2, 0, 1), (1, 2, 0), (-1, 0, -2)])
def test_transpose(axes):
    x = random(2, 3, 4)
    perm = tuple(a % 3 for a in axes) if axes is not None else (2, 1, 0)
    shape = tuple(x.shape[p] for p in perm)
    expected = np.zeros(shape, np.float32)
    for idx in indices(shape):
        source = [0] * 3
        for out_axis, in_axis in enumerate(perm):
            source[in_axis] = idx[out_axis]
        expected[idx] = x[tuple(source)]
    attrs = "" if axes is None else f"{{axes = {array_attr(axes)}}}"
    np.testing.assert_array_equal(run_op("relay.transpose", [x], shape, attrs), expected)


@pytest.mark.parametrize(
    "shape, axis, result",
    [
        ((1, 3, 1, 2), None, (3, 2)),
        ((1, 3, 1, 2), (0,), (3, 1, 2)),
        ((1, 3, 1, 2), (-2,), (1, 3, 2)),
        ((1, 3, 1, 2), (2, 0), (3, 2)),
        ((3, 2), None, (3, 2)),
    ],
)
def test_squeeze(shape, axis, result):
    x = random(*shape)
    attrs = "" if axis is None else f"{{axis = {array_attr(axis)}}}"
    out = run_op("relay.squeeze", [x], result, attrs)
    assert out.flatten().tolist() == x.flatten().tolist()


@pytest.mark.parametrize(
    "axis, count, result",
    [
        (0, None, (1, 2, 3)),
        (1, None, (2, 1, 3)),
        (2, 2, (2, 3, 1, 1)),
        (-1, 1, (2, 3, 1)),
        (-3, 3, (1, 1, 1, 2, 3)),
        (1, 0, (2, 3)),
    ],
)
def test_expand_dims(axis, count, result):
    x = random(2, 3)
    attrs = f"{{axis = {axis} : i64" + ("" if count is None else f", num_newaxis = {count} : i64") + "}"
    out = run_op("relay.expand_dims", [x], result, attrs)
    assert out.flatten().tolist() == x.flatten().tolist()


@pytest.mark.parametrize("shape, target", [((3,), (2, 3)), ((2, 1), (2, 4)), ((1, 1), (3, 2, 2)), ((2, 3), (2, 3))])
def test_broadcast_to(shape, target):
    x = random(*shape)
    expected = broadcast_loops(lambda a, b: a, x, np.zeros(target, np.float32))
    np.testing.assert_array_equal(run_op("relay.broadcast_to", [x], target), expected)


@pytest.mark.parametrize("shape, target", [((), ()), ((), (2,)), ((), (3, 1))])
def test_rank0_inputs_and_results_keep_their_rank(shape, target):
    """numpy's ascontiguousarray turns rank 0 into rank 1; the interpreter must not."""
    x = np.full(shape, 1.5, np.float32)
    np.testing.assert_array_equal(run_op("relay.broadcast_to", [x], target), np.full(target, 1.5, np.float32))


def list_slice(values, slices):
    """Python list slicing, axis by axis: an implementation independent of numpy."""
    if not slices:
        return values
    return [list_slice(v, slices[1:]) for v in values[slices[0]]]


@pytest.mark.parametrize(
    "begin, end, strides",
    [
        ((0,), (2,), None),
        ((1, 0), (3, 4), (1, 2)),
        ((3, 4), (0, 0), (-1, -2)),
        ((-1,), (-5,), (-1,)),
        ((5, -2), (-10, 10), (-2, 1)),
        ((0, 1, 1), (4, 5, 6), (3, 2, 4)),
        ((-2, 100), (100, -100), (1, -3)),
    ],
)
def test_strided_slice(begin, end, strides):
    x = random(4, 5, 6)
    s = strides or (1,) * len(begin)
    expected = np.array(list_slice(x.tolist(), [slice(b, e, st) for b, e, st in zip(begin, end, s)]), np.float32)
    attrs = f"begin = {array_attr(begin)}, end = {array_attr(end)}"
    if strides is not None:
        attrs += f", strides = {array_attr(strides)}"
    out = run_op("relay.strided_slice", [x], expected.shape, f"{{{attrs}}}")
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concatenate(axis):
    a = axis % 3
    shapes = [tuple(d + k if i == a else d for i, d in enumerate((2, 3, 2))) for k in range(3)]
    xs = [random(*s) for s in shapes]
    result = tuple(sum(s[a] for s in shapes) if i == a else d for i, d in enumerate(shapes[0]))
    expected = np.zeros(result, np.float32)
    offset = 0
    for x in xs:
        for idx in indices(x.shape):
            target = list(idx)
            target[a] += offset
            expected[tuple(target)] = x[idx]
        offset += x.shape[a]
    np.testing.assert_array_equal(run_op("relay.concatenate", xs, result, f"{{axis = {axis} : i64}}"), expected)


# --- reductions ---------------------------------------------------------------------------------

REDUCERS = {
    "relay.sum": math.fsum,
    "relay.mean": lambda vs: math.fsum(vs) / len(vs),
    "relay.max": max,
    "relay.min": min,
}


def reduce_loops(fn, x: np.ndarray, axes, keepdims: bool) -> np.ndarray:
    groups: dict[tuple, list[float]] = {}
    for idx in indices(x.shape):
        key = tuple(0 if i in axes else v for i, v in enumerate(idx))
        groups.setdefault(key, []).append(float(x[idx]))
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    out = np.zeros(kept, np.float64)
    for key, values in groups.items():
        out[key] = fn(values)
    if not keepdims:
        out = out.reshape(tuple(d for i, d in enumerate(x.shape) if i not in axes))
    return out


def axis_spellings():
    """Every subset of the axes of a rank-3 tensor, in positive and negative spellings."""
    for r in range(4):
        for subset in itertools.combinations(range(3), r):
            yield subset
            if subset:
                yield tuple(a - 3 for a in subset)
    yield None  # absent: all axes


@pytest.mark.parametrize("op", sorted(REDUCERS))
@pytest.mark.parametrize("keepdims", [None, False, True])
def test_reductions(op, keepdims):
    x = random(2, 3, 4)
    for spelling in axis_spellings():
        axes = set(range(3)) if spelling is None else {a % 3 for a in spelling}
        expected = reduce_loops(REDUCERS[op], x, axes, bool(keepdims))
        attrs = [] if spelling is None else [f"axis = {array_attr(spelling)}"]
        if keepdims is not None:
            attrs.append(f"keepdims = {str(keepdims).lower()}")
        out = run_op(op, [x], expected.shape, "{" + ", ".join(attrs) + "}")
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6, err_msg=f"axis {spelling}")


# --- anchors ------------------------------------------------------------------------------------


def test_dense():
    x, w = random(3, 5), random(4, 5)
    expected = [[math.fsum(float(x[i, k]) * float(w[j, k]) for k in range(5)) for j in range(4)] for i in range(3)]
    np.testing.assert_allclose(run_op("relay.nn.dense", [x, w], (3, 4)), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lhs_batch, rhs_batch", [(2, 2), (1, 3), (3, 1)])
def test_batch_matmul(lhs_batch, rhs_batch):
    x, y = random(lhs_batch, 3, 4), random(rhs_batch, 2, 4)
    batch = max(lhs_batch, rhs_batch)
    expected = np.zeros((batch, 3, 2))
    for b, i, j in indices((batch, 3, 2)):
        bx, by = min(b, lhs_batch - 1), min(b, rhs_batch - 1)
        expected[b, i, j] = math.fsum(float(x[bx, i, k]) * float(y[by, j, k]) for k in range(4))
    np.testing.assert_allclose(run_op("relay.nn.batch_matmul", [x, y], (batch, 3, 2)), expected, rtol=1e-5, atol=1e-6)


def conv2d_loops(x, w, strides, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilation
    top, left, bottom, right = padding
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for b, oc, i, j in indices(out.shape):
        g = oc // per_group
        terms = []
        for cc, p, q in indices((ci, kh, kw)):
            y, xx = i * sh + p * dh - top, j * sw + q * dw - left
            if 0 <= y < h and 0 <= xx < wd:
                terms.append(float(x[b, g * ci + cc, y, xx]) * float(w[oc, cc, p, q]))
        out[b, oc, i, j] = math.fsum(terms)
    return out


CONV_CASES = [
    # (x shape, w shape, strides, padding, dilation, groups)
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 3, 6, 7), (4, 3, 3, 2), (2, 1), (1, 0, 1, 2), (1, 1), 1),
    ((1, 2, 7, 7), (2, 2, 3, 3), (1, 2), (2, 1, 0, 1), (2, 2), 1),
    ((1, 4, 5, 6), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    ((1, 4, 6, 6), (4, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 2), 4),
    ((2, 1, 4, 4), (2, 1, 1, 1), (3, 3), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("xs, ws, strides, padding, dilation, groups", CONV_CASES)
def test_conv2d(xs, ws, strides, padding, dilation, groups):
    x, w = random(*xs), random(*ws)
    expected = conv2d_loops(x, w, strides, padding, dilation, groups)
    attrs = (
        f"{{strides = {array_attr(strides)}, padding = {array_attr(padding)}, "
        f"dilation = {array_attr(dilation)}, groups = {groups} : i64}}"
    )
    out = run_op("relay.nn.conv2d", [x, w], expected.shape, attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_conv2d_defaults():
    x, w = random(1, 2, 4, 4), random(3, 2, 2, 2)
    expected = conv2d_loops(x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    np.testing.assert_allclose(run_op("relay.nn.conv2d", [x, w], expected.shape), expected, rtol=1e-4, atol=1e-5)


def pool_loops(x, kind, size, strides, padding):
    n, c, h, w = x.shape
    (kh, kw), (sh, sw) = size, strides
    top, left, bottom, right = padding
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out = np.zeros((n, c, oh, ow))
    for b, ch, i, j in indices(out.shape):
        window = [
            float(x[b, ch, y, xx])
            for p, q in indices((kh, kw))
            if 0 <= (y := i * sh + p - top) < h and 0 <= (xx := j * sw + q - left) < w
        ]
        out[b, ch, i, j] = max(window) if kind == "max" else math.fsum(window) / len(window)
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(
    "shape, size, strides, padding",
    [
        ((1, 2, 5, 5), (2, 2), (1, 1), (0, 0, 0, 0)),
        ((2, 1, 6, 5), (3, 3), (2, 2), (1, 1, 1, 1)),
        ((1, 2, 5, 7), (3, 2), (2, 3), (2, 0, 1, 1)),
        ((1, 1, 4, 4), (2, 2), (2, 2), (1, 1, 1, 1)),
    ],
)
def test_pool2d(kind, shape, size, strides, padding):
    x = random(*shape, low=-5.0, high=-1.0)  # all negative: padding with zeros would win a max
    expected = pool_loops(x, kind, size, strides, padding)
    attrs = f"{{pool_size = {array_attr(size)}, strides = {array_attr(strides)}, padding = {array_attr(padding)}}}"
    out = run_op(f"relay.nn.{kind}_pool2d", [x], expected.shape, attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_global_avg_pool2d():
    x = random(2, 3, 4, 5)
    expected = [[[[math.fsum(x[b, c].flatten().tolist()) / 20]] for c in range(3)] for b in range(2)]
    np.testing.assert_allclose(
        run_op("relay.nn.global_avg_pool2d", [x], (2, 3, 1, 1)), expected, rtol=1e-5, atol=1e-6
    )  # a mean near 0 cancels


def softmax_reference(x: np.ndarray, axis: int) -> np.ndarray:
    """exp(v - logsumexp) along `axis`, with the log-sum-exp in Python floats."""
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    out = np.zeros_like(moved)
    for idx in indices(moved.shape[:-1]):
        row = moved[idx].tolist()
        top = max(row)
        lse = top + math.log(math.fsum(math.exp(v - top) for v in row))
        out[idx] = [math.exp(v - lse) for v in row]
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("axis", [None, 0, 1, -2])
def test_softmax_large_inputs(axis):
    x = random(3, 4, 5, low=-1.0, high=1.0) * np.float32(1000.0)  # exp would overflow unshifted
    a = -1 if axis is None else axis
    attrs = "" if axis is None else f"{{axis = {axis} : i64}}"
    out = run_op("relay.nn.softmax", [x], x.shape, attrs)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, softmax_reference(x, a), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.sum(axis=a), 1.0, rtol=1e-5)


def test_batch_matmul_broadcasts_a_batch_of_1_to_0():
    """As numpy does; the verifier once inferred a batch of 1 (found by bench/fuzz.py)."""
    out = run_op("relay.nn.batch_matmul", [random(0, 3, 2), random(1, 4, 2)], (0, 3, 4))
    assert out.shape == (0, 3, 4)


@pytest.mark.parametrize("shape, axis", [((3, 0), -1), ((0,), 0), ((0, 4), 1)])
def test_softmax_of_an_empty_tensor_is_empty(shape, axis):
    """np.max has no identity for an empty axis; found by bench/fuzz.py (ValueError)."""
    x = np.zeros(shape, np.float32)
    out = run_op("relay.nn.softmax", [x], shape, f"{{axis = {axis} : i64}}")
    assert out.shape == shape


# --- constants, placement, regions, calls ---------------------------------------------------


def test_constants_placement_and_fused_region():
    text = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %k = relay.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %h = relay.constant {value = dense<0.5> : tensor<3xf32>} : tensor<3xf32>
  %0 = relay.on_device %x {se_scope = #relay.se_scope<device = cpu>} : tensor<2x3xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<2x3xf32>
  %2 = relay.fused(%1, %k, %h) {kernel_name = "fused_add_multiply"} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<3xf32>):
    %s = relay.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %m = relay.multiply %s, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    relay.yield %m : tensor<2x3xf32>
  }
  func.return %2 : tensor<2x3xf32>
}"""
    x = random(2, 3)
    expected = [[(x[i, j] + (3 * i + j + 1)) * 0.5 for j in range(3)] for i in range(2)]
    np.testing.assert_allclose(xrelay.interpret(xrelay.parse(text), {"x": x}), expected, rtol=1e-6)


def test_on_device_and_device_copy_are_identities():
    text = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.on_device %x {se_scope = #relay.se_scope<device = opencl>, constrain_result = true} : tensor<4xf32>
  %1 = relay.device_copy %x {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
}"""
    x = random(4)
    on_device, copied = xrelay.interpret(xrelay.parse(text), [x])
    assert on_device.tolist() == x.tolist() and copied.tolist() == x.tolist()


def test_func_call_between_functions():
    text = """
func.func @square_plus(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.multiply %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = relay.add %0, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}
func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = func.call @square_plus(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = func.call @square_plus(%0, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}"""
    x, y = random(3), random(3)
    expected = [(a * a + b) ** 2 + a for a, b in zip(x.tolist(), y.tolist())]
    np.testing.assert_allclose(xrelay.interpret(xrelay.parse(text), {"x": x, "y": y}), expected, rtol=1e-5)


def test_entry_other_than_main():
    text = """
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
func.func @negate(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.negative %x : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}"""
    x = random(2)
    assert xrelay.interpret(xrelay.parse(text), [x], entry="negate").tolist() == (-x).tolist()


# --- input errors -------------------------------------------------------------------------------

TWO_INPUTS = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}"""


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"a": np.zeros((2, 3), np.float32)}, "@main takes inputs %a, %b; missing %b"),
        (
            {"a": np.zeros((2, 3), np.float32), "b": np.zeros(3, np.float32), "c": np.zeros(1)},
            "@main takes inputs %a, %b; unknown 'c'",
        ),
        ({"a": np.zeros((2, 3), np.float32), "x": np.zeros(3)}, "missing %b; unknown 'x'"),
        (
            {"a": np.zeros((3, 2), np.float32), "b": np.zeros(3, np.float32)},
            r"input %a must have shape \[2, 3\] \(tensor<2x3xf32>\), but has shape \[3, 2\]",
        ),
        (
            {"a": np.zeros((2, 3), np.float64), "b": np.zeros(3, np.float32)},
            r"input %a must be float32 \(tensor<2x3xf32>\), but has dtype float64",
        ),
        ([np.zeros((2, 3), np.float32)], "@main takes 2 inputs, but 1 were given"),
    ],
)
def test_input_errors(inputs, message):
    module = xrelay.parse(TWO_INPUTS)
    with pytest.raises(xrelay.InputError, match=message) as info:
        xrelay.interpret(module, inputs)
    assert isinstance(info.value, xrelay.Error)


def test_missing_entry_function():
    with pytest.raises(xrelay.InputError, match="the module has no function @forward to run"):
        xrelay.interpret(xrelay.parse(TWO_INPUTS), [], entry="forward")


def test_inputs_by_position_and_results_as_tuple():
    text = """
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = relay.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = relay.subtract %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0, %1 : tensor<2xf32>, tensor<2xf32>
}"""
    a, b = random(2), random(2)
    total, difference = xrelay.interpret(xrelay.parse(text), (a, b))
    np.testing.assert_allclose(total, a + b)
    np.testing.assert_allclose(difference, a - b)


# --- the ops imported models need ------------------------------------------------------------


@pytest.mark.parametrize("a, b", [((3, 4), (4, 2)), ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (3, 4, 2)), ((1, 1), (1, 1))])
def test_matmul(a, b):
    x, y = random(*a), random(*b)
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    expected = np.zeros((*batch, a[-2], b[-1]))
    xb, yb = np.broadcast_to(x, (*batch, *a[-2:])), np.broadcast_to(y, (*batch, *b[-2:]))
    for *n, i, j in indices(expected.shape):
        expected[(*n, i, j)] = math.fsum(float(xb[(*n, i, k)]) * float(yb[(*n, k, j)]) for k in range(a[-1]))
    np.testing.assert_allclose(run_op("relay.nn.matmul", [x, y], expected.shape), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape, axis", [((3, 4), -1), ((2, 3, 4), 1), ((2, 1, 3), 0), ((1, 1), -1)])
def test_layer_norm(shape, axis):
    x, eps = random(*shape), 1e-3
    axis = axis % len(shape)
    gamma, beta = random(*shape[axis:]), random(*shape[axis:])
    expected = np.zeros(shape)
    for row in indices(shape[:axis]):
        values = [float(x[(*row, *k)]) for k in indices(shape[axis:])]
        mean = math.fsum(values) / len(values)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values) + eps)
        for k in indices(shape[axis:]):
            expected[(*row, *k)] = (float(x[(*row, *k)]) - mean) / std * float(gamma[k]) + float(beta[k])
    attrs = f"{{axis = {axis} : i64, epsilon = {eps} : f32}}"
    out = run_op("relay.nn.layer_norm", [x, gamma, beta], shape, attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_layer_norm_of_an_empty_tensor_is_empty():
    x = np.zeros((0, 3), np.float32)
    out = run_op("relay.nn.layer_norm", [x, random(3), random(3)], (0, 3))
    assert out.shape == (0, 3)


def test_leaky_relu():
    x = random(3, 4)
    expected = [[v if v > 0 else 0.2 * v for v in map(float, row)] for row in x]
    out = run_op("relay.nn.leaky_relu", [x], x.shape, "{alpha = 0.2 : f32}")
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    default = run_op("relay.nn.leaky_relu", [x], x.shape)
    np.testing.assert_allclose(default, np.where(x > 0, x, 0.25 * x), rtol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad(mode):
    x = random(3, 4)
    out = run_op("relay.nn.pad", [x], (6, 5), f'{{pad_width = array<i64: 2, 1, 0, 1>, pad_mode = "{mode}"}}')
    # by hand: the row and column of each output element
    rows = {
        "constant": [None, None, 0, 1, 2, None],
        "edge": [0, 0, 0, 1, 2, 2],
        "reflect": [2, 1, 0, 1, 2, 1],
        "wrap": [1, 2, 0, 1, 2, 0],
    }[mode]
    cols = {
        "constant": [0, 1, 2, 3, None],
        "edge": [0, 1, 2, 3, 3],
        "reflect": [0, 1, 2, 3, 2],
        "wrap": [0, 1, 2, 3, 0],
    }[mode]
    expected = [[0.0 if r is None or c is None else float(x[r, c]) for c in cols] for r in rows]
    np.testing.assert_array_equal(out, expected)


def test_pad_negative_widths_crop_after_padding():
    x = random(5)
    reflect = run_op("relay.nn.pad", [x], (4,), '{pad_width = array<i64: -3, 2>, pad_mode = "reflect"}')
    np.testing.assert_array_equal(reflect, [x[3], x[4], x[3], x[2]])
    constant = run_op("relay.nn.pad", [x], (5,), "{pad_width = array<i64: 1, -1>, pad_value = 7.0 : f32}")
    np.testing.assert_array_equal(constant, [7.0, *x[:4]])


def test_take():
    x = random(4, 3)
    out = run_op("relay.take", [x], (4, 2, 2), "{indices = dense<[[2, 0], [-1, 1]]> : tensor<2x2xi64>, axis = 1 : i64}")
    expected = [[[x[n, 2], x[n, 0]], [x[n, 2], x[n, 1]]] for n in range(4)]
    np.testing.assert_array_equal(out, expected)
    row = run_op("relay.take", [x], (3,), "{indices = dense<-4> : tensor<i64>, axis = 0 : i64}")
    np.testing.assert_array_equal(row, x[0])


# ONNX's backend cases for the pooling attributes (onnx.backend.test.case.node.averagepool, maxpool)
GRID = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
ONNX_POOLS = [
    ("relay.nn.max_pool2d", GRID, "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true", [[11, 12], [15, 16]]),
    ("relay.nn.max_pool2d", GRID[:, :, :2, :2], "pool_size = array<i64: 1, 1>, strides = array<i64: 2, 2>, ceil_mode = true", [[1]]),
    ("relay.nn.max_pool2d", GRID, "pool_size = array<i64: 2, 2>, dilation = array<i64: 2, 2>", [[11, 12], [15, 16]]),
    ("relay.nn.avg_pool2d", GRID, "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true", [[6, 7.5], [12, 13.5]]),
    ("relay.nn.avg_pool2d", GRID, "pool_size = array<i64: 2, 2>, dilation = array<i64: 2, 2>, ceil_mode = true", [[6, 7], [10, 11]]),
    ("relay.nn.avg_pool2d", GRID[:, :, :2, :2] / 10, "pool_size = array<i64: 3, 3>, strides = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true", [[1.4 / 9]]),
    ("relay.nn.avg_pool2d", GRID[:, :, :3, :3], "pool_size = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>, count_include_pad = true", [[0.25, 0.75, 1.25], [1.5, 3.5, 4.5], [3.5, 7.5, 8.5]]),
]  # fmt: skip


@pytest.mark.parametrize("op, x, attrs, expected", ONNX_POOLS)
def test_pool2d_ceil_mode_dilation_and_count_include_pad(op, x, attrs, expected):
    expected = np.array(expected, np.float32)[None, None]
    np.testing.assert_allclose(run_op(op, [x], expected.shape, "{" + attrs + "}"), expected, rtol=1e-6)
