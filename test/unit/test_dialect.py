"""The relay dialect from Python: construction, helpers, pattern kinds, and the `xrelay.parse`
API (DESIGN.md §2, §5)."""

from pathlib import Path

import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, MemRefType, ModuleOp, f32, i64
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import DiagnosticException

import xrelay
from xrelay.diagnostics import location_of
from xrelay.dialects import relay
from xrelay.dialects.relay import OpPatternKind as K
from xrelay.dialects.se_scope import SEScopeAttr

TEST_DIR = Path(__file__).resolve().parents[1]


def tensor(*shape):
    return relay.tensor(shape)


def single(text: str, op_type):
    module = xrelay.parse(text)
    return next(op for op in module.walk() if isinstance(op, op_type))


def body(params: str, line: str, result: str) -> str:
    return f"func.func @f({params}) -> {result} {{\n  {line}\n  func.return %0 : {result}\n}}"


# --- coverage and pattern kinds ---------------------------------------------------------------


def test_every_op_has_a_round_trip_test():
    text = (TEST_DIR / "dialects" / "relay" / "ops.mlir").read_text()
    missing = [op.name for op in relay.Relay.operations if f"{op.name} " not in text and f"{op.name}(" not in text]
    assert missing == []


def test_dialect_lists_every_op_once():
    names = [op.name for op in relay.Relay.operations]
    assert len(names) == len(set(names))
    extra = {"relay.constant", "relay.on_device", "relay.device_copy", "relay.fused", "relay.yield", "relay.launch"}
    assert set(names) == {op.name for op in relay.PRIMITIVE_OPS} | extra
    assert list(relay.Relay.attributes) == [SEScopeAttr]


# The design table, and the ops imported models need (nn.leaky_relu, nn.pad, take,
# nn.layer_norm, nn.matmul; issue 15).
PATTERNS = {
    K.ELEMWISE: "negative exp log sqrt rsqrt tanh sigmoid abs erf nn.relu clip nn.leaky_relu cast logical_not",
    K.BROADCAST: "add subtract multiply divide maximum minimum power nn.bias_add expand_dims broadcast_to "
    "equal not_equal less less_equal greater greater_equal logical_and logical_or where",
    K.INJECTIVE: "reshape transpose squeeze strided_slice concatenate nn.pad take",
    K.COMM_REDUCE: "sum mean max min nn.layer_norm",
    K.OUT_EWISE_FUSABLE: "nn.dense nn.batch_matmul nn.matmul nn.conv2d nn.max_pool2d nn.avg_pool2d nn.global_avg_pool2d",
    K.OPAQUE: "nn.softmax",
}


def test_pattern_kinds_follow_the_design_table():
    expected = {f"relay.{name}": kind for kind, names in PATTERNS.items() for name in names.split()}
    assert {op.name: op.PATTERN for op in relay.PRIMITIVE_OPS} == expected
    assert relay.DeviceCopyOp.PATTERN == K.OPAQUE
    assert K.ELEMWISE < K.BROADCAST < K.INJECTIVE < K.COMM_REDUCE < K.OUT_EWISE_FUSABLE < K.OPAQUE


# --- building in Python -------------------------------------------------------------------------


def build_module() -> ModuleOp:
    cpu = SEScopeAttr("cpu", 0, "c", "global")
    gpu = SEScopeAttr("opencl", 1)
    fn = func.FuncOp("main", ([tensor(2, 3), tensor(3)], [tensor(2, 3)]))
    x, b = fn.args
    with ImplicitBuilder(fn.body.block):
        k = relay.ConstantOp(DenseIntOrFPElementsAttr.from_list(tensor(3), [1.0, 2.0, 3.0]))
        s = relay.AddOp(x, b, se_scope=cpu)
        e = relay.ExpOp(s.res)
        c = relay.ClipOp(e.res, 0.0, 6.0)
        on = relay.OnDeviceOp(c.res, gpu, constrain_body=False)
        copy = relay.DeviceCopyOp(on.res, cpu, gpu)
        block = Block(arg_types=[tensor(2, 3), tensor(3)])
        with ImplicitBuilder(block) as (u, v):
            relay.YieldOp(relay.MultiplyOp(u, v).res)
        fused = relay.FusedOp(
            [copy.res, k.res], tensor(2, 3), Region(block), se_scope=gpu, kernel_name="fused_multiply"
        )
        launch = relay.LaunchOp("fused_multiply", [fused.res, k.res], tensor(2, 3), gpu)
        func.ReturnOp(launch.res)
    kernel = func.FuncOp("fused_multiply", ([memref(2, 3), memref(3), memref(2, 3)], []))
    with ImplicitBuilder(kernel.body.block):
        func.ReturnOp()
    return ModuleOp([fn, kernel])


def memref(*shape: int) -> MemRefType:
    return MemRefType(f32, shape)


def test_built_module_verifies_prints_and_reparses():
    module = build_module()
    module.verify()
    text = str(module)
    assert (
        'relay.add %0, %1 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}' in text
    )
    assert "relay.on_device %5 {se_scope = #relay.se_scope<device = opencl, id = 1>, constrain_body = false}" in text
    assert "relay.clip %4 {a_min = 0.000000e+00 : f32, a_max = 6.000000e+00 : f32}" in text
    assert (
        'relay.fused(%7, %2) {se_scope = #relay.se_scope<device = opencl, id = 1>, kernel_name = "fused_multiply"}'
        in text
    )
    assert "relay.launch @fused_multiply(%8, %2)" in text
    assert str(xrelay.parse(text)) == text


def test_constructors_infer_result_types():
    fn = func.FuncOp("f", ([tensor(2, 1), tensor(3), tensor(1, 4, 5, 5), tensor(6, 4, 3, 3)], []))
    a, b, x, w = fn.args
    with ImplicitBuilder(fn.body.block):
        assert relay.AddOp(a, b).res.type == tensor(2, 3)
        assert relay.PowerOp(b, a).res.type == tensor(2, 3)
        assert relay.SigmoidOp(a).res.type == tensor(2, 1)
        conv = relay.Conv2DOp(operands=[x, w], result_types=[tensor(1, 6, 3, 3)])
        assert conv.infer_shape() == (1, 6, 3, 3)


def test_on_device_flags():
    x = func.FuncOp("f", ([tensor(2)], [])).args[0]
    default = relay.OnDeviceOp(x, SEScopeAttr("cpu"))
    assert default.constrains_body and not default.constrains_result
    assert "constrain_body" not in default.properties and "constrain_result" not in default.properties
    free = relay.OnDeviceOp(x, SEScopeAttr("cpu"), constrain_body=False)
    assert not free.constrains_body and not free.constrains_result
    pinned = relay.OnDeviceOp(x, SEScopeAttr("cpu"), constrain_result=True)
    assert pinned.constrains_body and pinned.constrains_result


def test_fused_kernel_name_and_scope():
    module = build_module()
    fused = next(op for op in module.walk() if isinstance(op, relay.FusedOp))
    assert fused.kernel == "fused_multiply" and fused.se_scope == SEScopeAttr("opencl", 1)
    launch = next(op for op in module.walk() if isinstance(op, relay.LaunchOp))
    assert launch.callee.string_value() == "fused_multiply"


# --- helper properties ----------------------------------------------------------------------------


def test_conv2d_helpers_and_defaults():
    conv = single(
        body(
            "%x: tensor<1x4x7x7xf32>, %w: tensor<6x2x3x3xf32>",
            "%0 = relay.nn.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x9xf32>",
            "tensor<1x6x4x9xf32>",
        ),
        relay.Conv2DOp,
    )
    assert conv.stride_values == (2, 1) and conv.dilation_values == (1, 1)
    assert conv.padding_values == (1, 2, 1, 2)  # [h, w] pads both sides alike
    assert conv.group_count == 2


def test_pool_helpers():
    pool = single(
        body(
            "%x: tensor<1x1x5x5xf32>",
            "%0 = relay.nn.max_pool2d %x {pool_size = array<i64: 3, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x4xf32>",
            "tensor<1x1x3x4xf32>",
        ),
        relay.MaxPool2DOp,
    )
    assert pool.window == (3, 2) and pool.stride_values == (1, 1) and pool.padding_values == (0, 0, 0, 0)


@pytest.mark.parametrize(
    "attrs, result, axes, keeps",
    [
        ("", "tensor<f32>", (0, 1, 2), False),
        ("{axis = array<i64: -1, 0>}", "tensor<3xf32>", (0, 2), False),
        ("{axis = array<i64: 1>, keepdims = true}", "tensor<2x1x4xf32>", (1,), True),
    ],
)
def test_reduce_helpers(attrs, result, axes, keeps):
    op = single(
        body("%x: tensor<2x3x4xf32>", f"%0 = relay.sum %x {attrs} : (tensor<2x3x4xf32>) -> {result}", result),
        relay.SumOp,
    )
    assert op.reduced_axes == axes and op.keeps_dims == keeps


def test_shape_op_helpers():
    text = """func.func @f(%x: tensor<1x3x1x4xf32>, %v: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %0 = relay.transpose %x {axes = array<i64: -1, 0, 2, 1>} : (tensor<1x3x1x4xf32>) -> tensor<4x1x1x3xf32>
  %1 = relay.transpose %x : (tensor<1x3x1x4xf32>) -> tensor<4x1x3x1xf32>
  %2 = relay.squeeze %x : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  %3 = relay.squeeze %x {axis = array<i64: -2>} : (tensor<1x3x1x4xf32>) -> tensor<1x3x4xf32>
  %4 = relay.strided_slice %x {begin = array<i64: 0, 2>, end = array<i64: 1, 0>, strides = array<i64: 1, -1>} : (tensor<1x3x1x4xf32>) -> tensor<1x2x1x4xf32>
  %5 = relay.concatenate %v, %v {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %6 = relay.nn.softmax %v : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = relay.nn.bias_add %v, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}"""
    ops = list(xrelay.parse(text).body.block.first_op.body.block.ops)
    assert ops[0].permutation == (3, 0, 2, 1)
    assert ops[1].permutation == (3, 2, 1, 0)
    assert ops[2].squeezed_axes == (0, 2)
    assert ops[3].squeezed_axes == (2,)
    assert ops[4].slices() == (slice(0, 1, 1), slice(2, 0, -1), slice(None), slice(None))
    assert ops[5].axis_value == 1
    assert ops[6].axis_value == 1
    assert ops[7].axis_value == 1


# --- the attribute-type contract ----------------------------------------------------------------


def test_generic_attribute_dictionary_becomes_properties():
    op = single(
        body(
            "%x: tensor<2x3xf32>",
            '%0 = "relay.nn.softmax"(%x) {axis = 0 : i64, note = "kept"} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
            "tensor<2x3xf32>",
        ),
        relay.SoftmaxOp,
    )
    assert op.properties["axis"] == IntegerAttr(0, i64)
    assert set(op.attributes) == {"note"}  # an unknown key stays a discardable attribute
    assert op.axis_value == 0


def test_clip_bounds_are_f32():
    x = func.FuncOp("f", ([tensor(2)], [])).args[0]
    clip = relay.ClipOp(x, -1.0, 1.0)
    assert clip.a_min.type == f32 and clip.a_max.value.data == 1.0


# --- xrelay.parse, xrelay.context, errors --------------------------------------------------------


def test_context_loads_relay_and_xdsl_dialects():
    ctx = xrelay.context()
    assert {"relay", "func", "arith", "scf", "memref"} <= set(ctx.registered_dialect_names)
    assert ctx.get_optional_op("relay.nn.conv2d") is relay.Conv2DOp


def test_parse_returns_a_verified_module_with_locations():
    module = xrelay.parse(body("%x: tensor<2xf32>", "%0 = relay.exp %x : tensor<2xf32>", "tensor<2xf32>"), "model.mlir")
    assert isinstance(module, ModuleOp)
    exp = next(op for op in module.walk() if isinstance(op, relay.ExpOp))
    assert xrelay.diagnostics.location_of(exp) == "model.mlir:2:3"
    assert location_of(relay.ExpOp(exp.data)) == "unknown location"


def test_parse_error():
    with pytest.raises(xrelay.ParseError, match=r"model.mlir:2:\d+") as info:
        xrelay.parse("func.func @f() {\n  %0 = relay.nosuch : tensor<2xf32>\n}", "model.mlir")
    assert isinstance(info.value, xrelay.Error) and isinstance(info.value, DiagnosticException)


def test_parse_error_of_custom_syntax_points_at_the_op():
    text = body("%x: tensor<2xf32>", "%0 = relay.exp %x : (tensor<2xf32>) -> tensor<2xf32>", "tensor<2xf32>")
    with pytest.raises(xrelay.ParseError, match=r"m.mlir:2:3(.|\n)*should be of base attribute tensor"):
        xrelay.parse(text, "m.mlir")


def test_verify_error_names_location_and_shows_the_op():
    text = body(
        "%x: tensor<2xf32>", "%0 = relay.sum %x {axis = array<i64: 1>} : (tensor<2xf32>) -> tensor<f32>", "tensor<f32>"
    )
    with pytest.raises(xrelay.VerifyError) as info:
        xrelay.parse(text, "m.mlir")
    message = str(info.value)
    assert message.startswith("m.mlir:2:3: axis 1 is out of range for a tensor of rank 1")
    assert '"relay.sum"(%x)' in message  # the note with the op underlined
    assert isinstance(info.value, xrelay.Error)


def test_error_hierarchy():
    """Every error is an xrelay.Error; the compiler's are also xDSL diagnostics (so
    --verify-diagnostics prints them), the runtime's are plain (the runtime imports no xDSL)."""
    compiler = ("ParseError", "VerifyError", "ConfigError", "PlacementError", "LoweringError")
    runtime = ("CompileError", "DeviceError", "InputError", "ArtifactError")
    for name in (*compiler, *runtime):
        assert issubclass(getattr(xrelay, name), xrelay.Error)
    for name in compiler:
        assert issubclass(getattr(xrelay, name), DiagnosticException)
    assert not issubclass(xrelay.Error, DiagnosticException)
    assert issubclass(xrelay.LoweringError, xrelay.CompileError)


# --- round trips of random programs -----------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_round_trip_and_keep_their_meaning(seed):
    import io

    import numpy as np
    from random_graphs import random_inputs, random_module_text
    from xdsl.printer import Printer

    module = xrelay.parse(random_module_text(seed, num_ops=12))
    custom = str(module)
    generic = io.StringIO()
    Printer(stream=generic, print_generic_format=True).print_op(module)
    assert str(xrelay.parse(custom)) == custom
    reparsed = xrelay.parse(generic.getvalue())
    assert str(reparsed) == custom
    inputs = random_inputs(module, seed)
    expected = xrelay.interpret(module, inputs)
    np.testing.assert_array_equal(xrelay.interpret(reparsed, inputs), expected)


def test_verify_error_of_a_long_module_shows_the_lines_around_the_op():
    lines = [f"  %v{i} = relay.exp %v{i - 1} : tensor<2xf32>" for i in range(1, 80)]
    lines[40] = "  %v41 = relay.reshape %v40 : (tensor<2xf32>) -> tensor<3xf32>"
    lines[41] = "  %v42 = relay.exp %v40 : tensor<2xf32>"
    text = "\n".join(
        ["func.func @main(%v0: tensor<2xf32>) -> tensor<2xf32> {", *lines, "  func.return %v79 : tensor<2xf32>", "}"]
    )
    with pytest.raises(xrelay.VerifyError) as info:
        xrelay.parse(text, "long.mlir")
    message = str(info.value)
    assert message.startswith("long.mlir:42:3: cannot reshape [2] (2 elements) to [3] (3 elements)\n...\n")
    assert '%v41 = "relay.reshape"(%v40)' in message and '"relay.exp"(%v70)' not in message
    assert len(message.splitlines()) < 25


# --- shape inference against numpy (properties) ---------------------------------------------


from hypothesis import given, settings
from hypothesis import strategies as st

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=150, deadline=None)
@given(shapes, shapes)
def test_broadcast_shapes_agree_with_numpy(lhs, rhs):
    import numpy as np
    from xdsl.utils.exceptions import VerifyException

    try:
        expected = np.broadcast_shapes(lhs, rhs)
    except ValueError:
        with pytest.raises(VerifyException, match="are not broadcast-compatible"):
            relay.broadcast_shapes(lhs, rhs)
    else:
        assert relay.broadcast_shapes(lhs, rhs) == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
    st.data(),
)
def test_strided_slice_shape_agrees_with_numpy(shape, data):
    import numpy as np
    from xdsl.dialects.builtin import DenseArrayBase

    count = data.draw(st.integers(1, len(shape)))
    begin = data.draw(st.lists(st.integers(-8, 8), min_size=count, max_size=count))
    end = data.draw(st.lists(st.integers(-8, 8), min_size=count, max_size=count))
    strides = data.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=count, max_size=count))
    x = func.FuncOp("f", ([tensor(*shape)], [])).args[0]
    expected = np.empty(shape)[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))].shape
    props = {
        name: DenseArrayBase.from_list(i64, v) for name, v in (("begin", begin), ("end", end), ("strides", strides))
    }
    op = relay.StridedSliceOp(operands=[x], result_types=[tensor(*expected)], properties=props)
    assert op.infer_shape() == expected
    op.verify()


LAUNCH = """
func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.launch @k(%a) {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
"""


@pytest.mark.parametrize(
    "kernel, message",
    [
        ("", "relay.launch calls @k, which is not a function of the module; kernels come from convert-relay-to-loops"),
        (
            "func.func @k(%in0: memref<3x2xf32>, %out0: memref<2x3xf32>) {\n  func.return\n}",
            "relay.launch calls @k with (memref<2x3xf32>, memref<2x3xf32>), but the kernel takes "
            "(memref<3x2xf32>, memref<2x3xf32>)",
        ),
    ],
)
def test_launch_names_a_kernel_of_matching_signature(kernel: str, message: str):
    with pytest.raises(xrelay.VerifyError) as info:
        xrelay.parse(LAUNCH + kernel)
    assert message in str(info.value)
    xrelay.parse(LAUNCH + "func.func @k(%in0: memref<2x3xf32>, %out0: memref<2x3xf32>) {\n  func.return\n}")
