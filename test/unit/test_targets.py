"""The C and OpenCL C emitters: kernels compiled for each target and run against references.

Hand-written loop kernels (convert-relay-to-loops' output form) are checked against numpy;
relay groups lowered by convert-relay-to-loops are checked against `xrelay.interpret`. All
kernels of one language are built together, once per test session (one shared library, one
OpenCL program), as the runtime builds them.
"""

from __future__ import annotations

import functools
import io
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kernel_cases import GROUP_CASES, LOOP_KERNELS, SCOPES, GroupCase, LoopKernel, random_inputs
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

import xrelay
from xrelay.dialects import relay
from xrelay.errors import CompileError
from xrelay.runtime.c_library import CKernel, build_c
from xrelay.runtime.kernels import KernelSource, TensorArg
from xrelay.runtime.opencl import build_opencl, default_opencl_context, run_opencl_kernel
from xrelay.targets.c import CTarget
from xrelay.targets.kernels import kernel_sources
from xrelay.targets.opencl import OpenCLTarget

LANGUAGES = ("c", "opencl")
TARGETS = {"c": CTarget, "opencl": OpenCLTarget}


# The passes `xrelay.build` runs from the lowering to the printers (its PIPELINE).
LOWERING = "convert-relay-to-loops,dce,licm,cse,split-reductions"


def lower(text: str) -> ModuleOp:
    from xdsl.passes import PassPipeline

    from xrelay.driver import all_passes

    module = xrelay.parse(text)
    PassPipeline.parse_spec(all_passes(), LOWERING).apply(xrelay.context(), module)
    module.verify()
    return module


def emit(target: str, module: ModuleOp) -> str:
    out = io.StringIO()
    TARGETS[target]().emit(xrelay.context(), module, out)
    return out.getvalue()


# --- building everything once per language --------------------------------------------------


_lowered: dict[str, dict[str, ModuleOp]] = {}


def lowered_groups(language: str) -> dict[str, ModuleOp]:
    if language not in _lowered:
        _lowered[language] = {c.name: lower(c.module_text(language)) for c in GROUP_CASES}
    return _lowered[language]


def all_sources(language: str) -> list[KernelSource]:
    loops = [xrelay.parse(k.module_text(language)) for k in LOOP_KERNELS]
    modules = [*loops, *lowered_groups(language).values()]
    return [s for m in modules for s in kernel_sources(m)]


@functools.cache
def opencl_queue() -> Any:
    import pyopencl as cl

    return cl.CommandQueue(default_opencl_context())


class Runner:
    """Builds kernels as the runtime does (the C ones into one library, the OpenCL ones into
    one program) and runs them on numpy arrays: one kernel, or @main of a lowered module."""

    def __init__(self, sources: list[KernelSource]):
        self.kernels: dict[str, Any] = {}
        c_sources = [s for s in sources if s.language == "c"]
        cl_sources = [s for s in sources if s.language == "opencl"]
        if c_sources:
            self.kernels |= build_c(c_sources).kernels
        if cl_sources:
            self.kernels |= build_opencl(opencl_queue().context, cl_sources).kernels

    def run(self, name: str, inputs: list[np.ndarray], out_shape: tuple[int, ...]) -> np.ndarray:
        kernel = self.kernels[name]
        if not isinstance(kernel, CKernel):
            return run_opencl_kernel(opencl_queue(), kernel, inputs, out_shape)
        out = np.zeros(out_shape, np.float32)
        kernel(*(np.ascontiguousarray(a) for a in inputs), out)
        return out

    def run_main(self, module: ModuleOp, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Runs @main of a lowered module: launches, constants, copies, return."""
        main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
        env: dict[Any, np.ndarray] = {arg: inputs[arg.name_hint] for arg in main.args}
        for op in main.body.block.ops:
            if isinstance(op, relay.LaunchOp):
                shape = tuple(op.res.type.get_shape())
                env[op.res] = self.run(op.callee.string_value(), [env[v] for v in op.inputs], shape)
            elif isinstance(op, relay.DeviceCopyOp):
                env[op.res] = env[op.data]
            elif isinstance(op, relay.ConstantOp):
                shape = op.res.type.get_shape()
                env[op.res] = np.array(op.value.get_values(), np.float32).reshape(shape)
            elif isinstance(op, func.ReturnOp):
                return env[op.arguments[0]]
            else:
                raise AssertionError(f"unexpected op {op.name} in a lowered @main")
        raise AssertionError("@main has no return")


_runners: dict[str, Runner] = {}


@pytest.fixture(params=LANGUAGES)
def language(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def runner(language: str) -> Runner:
    """Every case's kernels for one language, built once per session."""
    if language not in _runners:
        _runners[language] = Runner(all_sources(language))
    return _runners[language]


# --- hand-written loop kernels vs numpy -----------------------------------------------------


@pytest.mark.parametrize("case", LOOP_KERNELS, ids=lambda k: k.name)
def test_loop_kernel(runner: Runner, case: LoopKernel) -> None:
    for seed in (0, 1):
        inputs = random_inputs(list(case.inputs), seed, positive=False)
        got = runner.run(case.name, inputs, case.output)
        np.testing.assert_allclose(got, case.reference(*inputs), rtol=1e-5, atol=1e-5)


# --- every relay op and the fused patterns, lowered, vs xrelay.interpret --------------------


@pytest.mark.parametrize("case", GROUP_CASES, ids=lambda c: c.name)
def test_lowered_group(language: str, runner: Runner, case: GroupCase) -> None:
    reference_module = xrelay.parse(case.module_text(language))
    main = next(iter(reference_module.ops))
    assert isinstance(main, func.FuncOp)
    shapes = [tuple(a.type.get_shape()) for a in main.args]
    for seed in (0, 1):
        arrays = random_inputs(shapes, seed, case.positive)
        inputs = {a.name_hint: x for a, x in zip(main.args, arrays)}
        expected = xrelay.interpret(reference_module, inputs)
        got = runner.run_main(lowered_groups(language)[case.name], inputs)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_every_primitive_op_is_covered() -> None:
    bodies = " ".join(c.body for c in GROUP_CASES)
    missing = [op.name for op in relay.PRIMITIVE_OPS if f"{op.name} " not in bodies]
    assert missing == []


# --- random programs through the whole pipeline, on both targets at once -----------------


def compile_pipeline(text: str) -> ModuleOp:
    from xdsl.passes import PassPipeline

    from xrelay.driver import all_passes

    spec = "plan-devices{targets=c,opencl},fuse-ops," + LOWERING
    module = xrelay.parse(text)
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    module.verify()
    return module


@pytest.mark.parametrize("seed", range(6))
def test_random_programs_on_both_targets(seed: int) -> None:
    from random_graphs import random_inputs as graph_inputs
    from random_graphs import random_module_text

    text = random_module_text(seed, num_ops=10, devices=("cpu", "opencl"))
    lowered = compile_pipeline(text)
    runner = Runner(kernel_sources(lowered))
    reference = xrelay.parse(text)
    for input_seed in (0, 1):
        inputs = graph_inputs(reference, input_seed)
        expected = xrelay.interpret(reference, inputs)
        got = runner.run_main(lowered, inputs)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# --- the form of the output -----------------------------------------------------------------


UNUSED_VALUES = """
func.func @k_unused(%in0: memref<4xf32>, %in1: memref<4xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = SCOPE} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %x = memref.load %in1[%i] : memref<4xf32>
    %dead = math.exp %x : f32
    %unused = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %x, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}"""


OFFSET_ROWS = """
func.func @k_rows(%in0: memref<4x8xf32>, %out0: memref<3x8xf32>) attributes {relay.se_scope = SCOPE} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  "scf.parallel"(%c0, %c0, %c3, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %below = arith.addi %i, %c1 : index
    %x = memref.load %in0[%i, %j] : memref<4x8xf32>
    %y = memref.load %in0[%below, %j] : memref<4x8xf32>
    %s = arith.addf %x, %y : f32
    %last = arith.addi %c1, %j : index
    %edge = arith.cmpi eq, %last, %c8 : index
    %z = arith.select %edge, %x, %s : f32
    memref.store %z, %out0[%i, %j] : memref<3x8xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}"""


@pytest.mark.parametrize("language", ["c", "opencl"])
def test_an_index_plus_a_constant_is_a_constant_offset(language: str) -> None:
    """An index `x + c` is printed `x * stride + c * stride` (gcc then addresses rows r of a
    micro-kernel's tile from one pointer), and not declared where only indices read it; one
    read elsewhere too is declared as before. The kernel still computes in0[i] + in0[i + 1]."""
    module = xrelay.parse(OFFSET_ROWS.replace("SCOPE", SCOPES[language]))
    (source,) = kernel_sources(module)
    i, j = re.search(r"float \w+ = in0\[(\w+) \* 8 \+ (\w+)\];", source.source).groups()  # type: ignore[union-attr]
    assert f"in0[{i} * 8 + {j} + 8]" in source.source
    assert re.search(rf"long \w+ = {i} \+ 1;", source.source) is None
    assert re.search(rf"long \w+ = 1 \+ {j};", source.source)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    got = Runner([source]).run("k_rows", [x], (3, 8))
    np.testing.assert_array_equal(got, np.where(np.arange(8) == 7, x[:3], x[:3] + x[1:]))


def test_dead_values_are_printed_until_dce_removes_them() -> None:
    """The emitter prints what it is given; dead values are dce's (the pipeline runs it)."""
    module = xrelay.parse(UNUSED_VALUES.replace("SCOPE", SCOPES["c"]))
    (source,) = kernel_sources(module)
    assert "expf(" in source.source and re.search(r"\(void\)unused_\d+;", source.source)
    DeadCodeElimination().apply(xrelay.context(), module)
    (source,) = kernel_sources(module)
    assert "(void)in0;" in source.source and "expf(" not in source.source and "unused_" not in source.source


def test_c_compiles_without_warnings(tmp_path) -> None:
    unused = xrelay.parse(UNUSED_VALUES.replace("SCOPE", SCOPES["c"]))
    DeadCodeElimination().apply(xrelay.context(), unused)
    c_sources = [s.source for s in [*all_sources("c"), *kernel_sources(unused)]]
    path = tmp_path / "all.c"
    path.write_text("\n".join(c_sources))
    # as DESIGN.md asks, and as the builder compiles (with the simd reduction pragmas on)
    for extra in ([], ["-fopenmp-simd", "-DXRELAY_OMP_SIMD", "-march=native"]):
        result = subprocess.run(
            ["gcc", "-std=c99", "-O3", "-Wall", "-Wextra", *extra, "-c", "-o", str(tmp_path / "all.o"), str(path)],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0 and result.stderr == "", result.stderr


def test_kernel_sources_fields() -> None:
    module = xrelay.parse(LOOP_KERNELS[0].module_text("opencl"))
    (source,) = kernel_sources(module)
    assert source == KernelSource(
        name="k_elementwise",
        language="opencl",
        source=source.source,
        global_size=(8, 4),  # innermost loop dimension first
        num_inputs=2,
        device=0,
        args=(TensorArg((4, 8), "float32"), TensorArg((8,), "float32"), TensorArg((4, 8), "float32")),
    )
    # (after the definitions of the maths helpers it calls, here xr_tanhf)
    assert source.source.startswith("#ifndef XR_PRELUDE") and (
        "\n__kernel void k_elementwise(__global const float *in0, __global const float *in1, __global float *out0) {"
        in source.source
    )
    c_source = kernel_sources(xrelay.parse(LOOP_KERNELS[0].module_text("c")))[0]
    assert c_source.language == "c"
    assert (
        "void k_elementwise(const float *restrict in0, const float *restrict in1, "
        "float *restrict out0) {" in c_source.source
    )


def test_global_size_merges_leading_dims_beyond_three() -> None:
    ndrange = next(k for k in LOOP_KERNELS if k.name == "k_ndrange")
    (source,) = kernel_sources(xrelay.parse(ndrange.module_text("opencl")))
    assert source.global_size == (6, 4, 6)  # (d), (c), (a, b) merged: 2x3x4x6 innermost first
    assert "gid2 / 6" not in source.source and "gid2 / 3;" in source.source
    strided = next(k for k in LOOP_KERNELS if k.name == "k_strided")
    assert kernel_sources(xrelay.parse(strided.module_text("c")))[0].global_size == (3, 3)


def test_lowered_global_size_is_the_outermost_nest() -> None:
    """For every lowered case: the trip counts of the top-level scf.parallel, innermost first;
    (1,) for a 0-d nest."""
    for case in GROUP_CASES:
        module = lower(case.module_text("opencl"))
        kernel = next(op for op in module.ops if "relay.se_scope" in op.attributes)
        nest = next(op for op in kernel.body.block.ops if isinstance(op, scf.ParallelOp))
        extents = tuple(
            ub.owner.value.value.data - lb.owner.value.value.data for lb, ub in zip(nest.lowerBound, nest.upperBound)
        )
        assert all(s.owner.value.value.data == 1 for s in nest.step)
        (source,) = kernel_sources(module)
        assert source.global_size == (tuple(reversed(extents)) or (1,)), case.name


def test_targets_print_only_their_scopes() -> None:
    text = LOOP_KERNELS[0].module_text("c") + LOOP_KERNELS[1].module_text("opencl")
    module = xrelay.parse(text)
    c_text, cl_text = emit("c", module), emit("opencl", module)
    assert "void k_elementwise(" in c_text and "k_reduction" not in c_text
    assert "__kernel void k_reduction(" in cl_text and "k_elementwise" not in cl_text
    assert [s.language for s in kernel_sources(module)] == ["c", "opencl"]


def test_only_pure_sum_and_product_loops_get_the_simd_pragma() -> None:
    """Max and min loops get none: OpenMP's max combines lanes without letting a NaN win."""
    sources = {k.name: kernel_sources(xrelay.parse(k.module_text("c")))[0].source for k in LOOP_KERNELS}
    sum_var = re.search(r"(sum_[0-9]+) = 0.0f", sources["k_reduction"])
    max_var = re.search(r"(max_[0-9]+) = \(-INFINITY\)", sources["k_reduction"])
    assert sum_var is not None and max_var is not None
    assert re.findall(r"#pragma omp simd (.*)", sources["k_reduction"]) == [f"reduction(+:{sum_var.group(1)})"]
    # k_scratch's max loop is a max reduction; its sum loop also stores into the scratch buffer
    assert "#pragma omp simd" not in sources["k_scratch"]
    squared = (
        LOOP_KERNELS[1]
        .module_text("c")
        .replace(
            "%n = arith.addf %acc, %e : f32", "%q = arith.mulf %acc, %acc : f32\n      %n = arith.addf %q, %e : f32"
        )
    )  # the carried sum is used twice: not a plain reduction
    source = kernel_sources(xrelay.parse(squared))[0].source
    assert "#pragma" not in source
    opencl = kernel_sources(xrelay.parse(LOOP_KERNELS[1].module_text("opencl")))[0].source
    assert "pragma" not in opencl


def test_c_max_is_a_conditional_not_fmaxf() -> None:
    """gcc vectorises the conditional, not fmaxf; a NaN wins, as in numpy. Against a constant
    (relu's 0) it is one comparison whose false side is the value, so a NaN value is kept."""
    c_text = emit("c", xrelay.parse(LOOP_KERNELS[0].module_text("c")))
    assert "fmaxf" not in c_text
    assert re.search(r"\(0\.0f >= (\w+) \? 0\.0f : \1\)", c_text)


# --- errors ---------------------------------------------------------------------------------

UNKNOWN_OP = """
func.func @k_sin(%in0: memref<4xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = SCOPE} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    %s = math.sin %x : f32
    memref.store %s, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_unknown_op_names_the_op_and_the_target(language: str) -> None:
    module = xrelay.parse(UNKNOWN_OP.replace("SCOPE", SCOPES[language]))
    with pytest.raises(CompileError, match=f"the {language} target cannot emit 'math.sin' at <input>:9:5"):
        emit(language, module)
    with pytest.raises(CompileError, match="cannot emit 'math.sin'"):
        kernel_sources(module)


@pytest.mark.parametrize("language", LANGUAGES)
def test_unlowered_module_says_to_run_the_lowering(language: str) -> None:
    module = xrelay.parse(GROUP_CASES[0].module_text(language))
    with pytest.raises(
        CompileError,
        match="expects a lowered module, but found 'relay.fused' at <input>:2:3; run convert-relay-to-loops first",
    ):
        emit(language, module)


def test_kernel_on_another_device_is_rejected() -> None:
    scope = '#relay.se_scope<device = vulkan, id = 0, target = "vulkan", memory = "global">'
    module = xrelay.parse(UNKNOWN_OP.replace("SCOPE", scope).replace("math.sin", "math.exp"))
    with pytest.raises(
        CompileError,
        match="@k_sin .* is on device 'vulkan', but only cpu \\(C\\) and opencl \\(OpenCL C\\) kernels are supported",
    ):
        kernel_sources(module)
    assert emit("c", module) == "#include <math.h>\n" and emit("opencl", module) == ""


def _with_body(body: str) -> str:
    return f"""
func.func @k_bad(%in0: memref<4xf32>, %out0: memref<4xf32>) attributes {{relay.se_scope = {SCOPES["opencl"]}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  {body}
  func.return
}}"""


COPY_NEST = """"scf.parallel"(%c0, UB, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    memref.store %x, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()"""


def test_two_top_level_nests_are_rejected() -> None:
    module = xrelay.parse(_with_body(COPY_NEST.replace("UB", "%c4") * 2))
    with pytest.raises(CompileError, match="expects one top-level scf.parallel in kernel @k_bad, but found 2"):
        kernel_sources(module)


def test_non_constant_ndrange_bound_is_rejected() -> None:
    body = "%n = arith.addi %c1, %c1 : index\n  " + COPY_NEST.replace("UB", "%n")
    with pytest.raises(
        CompileError,
        match="expects constant bounds on the top-level scf.parallel, but found one computed by .arith.addi. at <input>:7:3",
    ):
        kernel_sources(xrelay.parse(_with_body(body)))


def test_unsupported_element_type_is_rejected() -> None:
    text = _with_body(COPY_NEST.replace("UB", "%c4")).replace("%in0: memref<4xf32>", "%in0: memref<4xf16>")
    text = text.replace("load %in0[%i] : memref<4xf32>", "load %in0[%i] : memref<4xf16>")
    text = text.replace("memref.store %x,", "%y = arith.extf %x : f16 to f32\n    memref.store %y,")
    with pytest.raises(
        CompileError, match="the opencl target cannot represent type f16 \\(in 'func.func' at <input>:2:1\\)"
    ):
        kernel_sources(xrelay.parse(text))


def test_dynamic_scratch_buffer_is_rejected() -> None:
    body = COPY_NEST.replace("UB", "%c4").replace(
        "%x = memref.load", "%buf = memref.alloca(%i) : memref<?xf32>\n    %x = memref.load"
    )
    with pytest.raises(CompileError, match="expects scratch buffers of static shape, but found memref<\\?xf32>"):
        kernel_sources(xrelay.parse(_with_body(body)))


def test_vector_constant_is_rejected() -> None:
    body = "%v = arith.constant dense<1.0> : vector<4xf32>\n  " + COPY_NEST.replace("UB", "%c4")
    with pytest.raises(
        CompileError, match="cannot print the constant dense<1.0*e\\+00> : vector<4xf32> at <input>:7:3"
    ):
        kernel_sources(xrelay.parse(_with_body(body)))


def test_top_level_reduction_cannot_be_an_ndrange() -> None:
    body = """%s = "scf.parallel"(%c0, %c4, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    scf.reduce(%x : f32) {
    ^bb1(%l: f32, %r: f32):
      %a = arith.addf %l, %r : f32
      scf.reduce.return %a : f32
    }
  }) : (index, index, index, f32) -> f32
  memref.store %s, %out0[%c0] : memref<4xf32>"""
    with pytest.raises(CompileError, match="cannot map a top-level scf.parallel with reductions onto the NDRange"):
        emit("opencl", xrelay.parse(_with_body(body)))


def test_c_if_conversion_is_off_only_in_kernels_with_a_branch() -> None:
    """gcc 12.2 miscompiles a concatenate's conditional loads with loop if-conversion on
    (test/Inputs/fuzz/concatenate_on_c.mlir); off for every kernel, a loop with a select (a
    relu) no longer vectorises, and its tanhf stays scalar (an 8-op chain: 7 -> 100 ms)."""
    concat = (Path(__file__).parents[1] / "Inputs" / "fuzz" / "concatenate_on_c.mlir").read_text()
    (source,) = xrelay.build(concat, targets=("c",)).kernels
    assert re.search(r"XRELAY_NO_IF_CONVERSION void fused_concatenate\(", source.source)
    c_text = emit("c", xrelay.parse(LOOP_KERNELS[0].module_text("c")))
    assert "NO_IF_CONVERSION" not in c_text and "no-tree-loop-if-convert" not in c_text


@pytest.mark.parametrize("march", ["x86-64-v2", "x86-64-v3"])
def test_vector_fma_calls_no_software_fmaf(tmp_path: Path, march: str) -> None:
    """`vector.fma` on 4 floats is the FMA instruction where the level has one (v3) and a
    multiply and an add where it has none (v2): never a call of glibc's software fmaf per lane,
    which ran SSE4.2 builds' micro-kernels at 0.5 GFLOP/s."""
    from xrelay.targets.c import vector_fma, vector_prelude, vector_type

    ty = vector_type(4)
    source = tmp_path / "fma.c"
    source.write_text(
        f"{vector_prelude(4)}\nvoid k(float *o, const float *a, const float *b) {{\n"
        f"  *({ty} *)o = {vector_fma(4)}(*(const {ty} *)a, *(const {ty} *)b, *(const {ty} *)o);\n}}\n"
    )
    obj = tmp_path / "fma.o"
    subprocess.run(["gcc", "-std=c99", "-O3", f"-march={march}", "-c", str(source), "-o", str(obj)], check=True)
    undefined = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True, check=True).stdout
    assert "fmaf" not in undefined
    disassembly = subprocess.run(["objdump", "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    assert ("vfmadd" in disassembly) == (march == "x86-64-v3")
