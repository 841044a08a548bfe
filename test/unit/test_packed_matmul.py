"""packed_matmul (and its micro-kernel): cpu dense, batch_matmul and matmul in packed panels, built
for C and run against `xrelay.interpret`: whole and edge blocks, rows and columns that are
not a multiple of the tile, k-blocks with a remainder, size-1 dims, broadcast batches, the
fused epilogues (bias, GELU with tanh, residual add), and NaN and inf inputs.
With the rhs a constant (a param bound at build time), packed_matmul_prepacked: the packed
constant's layout and name, one constant shared by two denses and also read by another op,
matmul's and batch_matmul's rhs, NaN and inf in the weight, save and load, and ASan."""

from __future__ import annotations

import gc
import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from isa_levels import ISA_TARGETS, PLANNED, assembly, isa_params
from test_c_library import run_under_asan
from tolerances import assert_close_to_sum_of_products
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, VectorType, f32
from xdsl.ir import Operation

import xrelay
from xrelay.dialects import cpu, relay
from xrelay.driver import PIPELINE, all_passes, bind_params, lower
from xrelay.ir import context
from xrelay.runtime.machine import target_features
from xrelay.targets.kernels import kernel_sources
from xrelay.transforms.convert_relay_to_loops import ConvertRelayToLoopsPass
from xrelay.transforms.schedules import micro_kernel, packed_matmul

SCHEDULE_ATTR = "relay.schedule"
# Every ISA level runs here: SSE4.2 (4 floats, 16 registers, no FMA), AVX2 (8 floats, 16
# registers) and the host's own (AVX-512 on the machine the tiles were tuned on).
NATIVE_TILE = micro_kernel.register_tile(target_features("c"))


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def program(params: dict[str, tuple[int, ...]], lines: list[str], result: tuple[int, ...]) -> str:
    args = ", ".join(f"%{n}: {t(s)}" for n, s in params.items())
    body = "\n  ".join(lines)
    last = lines[-1].split("=")[0].strip()
    return f"func.func @main({args}) -> {t(result)} {{\n  {body}\n  func.return {last} : {t(result)}\n}}"


def dense(m: int, k: int, n: int, epilogue: str = "") -> str:
    """x[m, k] . w[n, k]^T, then `epilogue`: "" , "bias", "gelu" (bias then GELU with tanh),
    or "residual" (+ r[m, n], then relu)."""
    out = (m, n)
    lines = [f"%d = relay.nn.dense %x, %w : ({t((m, k))}, {t((n, k))}) -> {t(out)}"]
    params: dict[str, tuple[int, ...]] = {"x": (m, k), "w": (n, k)}
    if epilogue in ("bias", "gelu"):
        params["b"] = (n,)
        lines.append(f"%e = relay.nn.bias_add %d, %b : ({t(out)}, {t((n,))}) -> {t(out)}")
    if epilogue == "gelu":
        lines += gelu("%e", out)
    if epilogue == "residual":
        params["r"] = out
        lines += [f"%s = relay.add %d, %r : ({t(out)}, {t(out)}) -> {t(out)}", f"%y = relay.nn.relu %s : {t(out)}"]
    return program(params, lines, out)


def gelu(x: str, shape: tuple[int, ...]) -> list[str]:
    """0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3))), as the transformer writes it."""
    ty, s = t(shape), t(())
    return [
        f"%c0 = relay.constant {{value = dense<0.044715> : {s}}} : {s}",
        f"%c1 = relay.constant {{value = dense<0.797884583> : {s}}} : {s}",
        f"%c2 = relay.constant {{value = dense<1.0> : {s}}} : {s}",
        f"%c3 = relay.constant {{value = dense<0.5> : {s}}} : {s}",
        f"%g0 = relay.multiply {x}, {x} : ({ty}, {ty}) -> {ty}",
        f"%g1 = relay.multiply %g0, {x} : ({ty}, {ty}) -> {ty}",
        f"%g2 = relay.multiply %g1, %c0 : ({ty}, {s}) -> {ty}",
        f"%g3 = relay.add {x}, %g2 : ({ty}, {ty}) -> {ty}",
        f"%g4 = relay.multiply %g3, %c1 : ({ty}, {s}) -> {ty}",
        f"%g5 = relay.tanh %g4 : {ty}",
        f"%g6 = relay.add %g5, %c2 : ({ty}, {s}) -> {ty}",
        f"%g7 = relay.multiply {x}, %g6 : ({ty}, {ty}) -> {ty}",
        f"%g8 = relay.multiply %g7, %c3 : ({ty}, {s}) -> {ty}",
    ]


def batch_matmul(lhs: tuple[int, int, int], rhs: tuple[int, int, int]) -> str:
    out = (max(lhs[0], rhs[0]), lhs[1], rhs[1])
    line = f"%y = relay.nn.batch_matmul %a, %b : ({t(lhs)}, {t(rhs)}) -> {t(out)}"
    return program({"a": lhs, "b": rhs}, [line], out)


def schedules(text: str, target: str = PLANNED) -> list[str]:
    """The schedule of each kernel of `text` lowered for C (`target`)."""
    module = xrelay.parse(text)
    lower(module, (target,), None, target)
    return [
        op.attributes[SCHEDULE_ATTR].data  # type: ignore[union-attr]
        for op in module.ops
        if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes
    ]


def random_inputs(text: str, seed: int) -> dict[str, np.ndarray]:
    main = next(op for op in xrelay.parse(text).ops if isinstance(op, func.FuncOp))
    rng = np.random.default_rng(seed)
    return {a.name_hint or "": rng.standard_normal(tuple(a.type.get_shape())).astype(np.float32) for a in main.args}


def assert_as_interpreted(text: str, inputs: dict[str, np.ndarray], got: np.ndarray) -> None:
    """`got` is what the interpreter gives for `text` on `inputs`, within the rounding of a
    sum of products (`tolerances.py`): the terms' magnitudes are the program's result on the
    inputs' absolute values, their count at most the inputs' longest axis."""
    expected = xrelay.interpret(xrelay.parse(text), inputs)
    with np.errstate(invalid="ignore"):
        magnitude = xrelay.interpret(xrelay.parse(text), {n: np.abs(a) for n, a in inputs.items()})
    terms = max(max(a.shape) for a in inputs.values())
    assert_close_to_sum_of_products(np.asarray(got), np.asarray(expected), magnitude, k=terms, atol=1e-5)


def check(text: str, inputs: dict[str, np.ndarray] | None = None, threads: int = 1, target: str = "c") -> None:
    """Built for C (`target`), `text` computes what the interpreter does (NaN where it gives NaN)."""
    assert "packed_matmul" in schedules(text, target)
    inputs = inputs if inputs is not None else random_inputs(text, 0)
    got = xrelay.build(text, targets=(target,), num_threads=threads).run(**inputs)
    assert isinstance(got, np.ndarray)
    assert_as_interpreted(text, inputs, got)


# (m, k, n) -> what it exercises; with AVX-512 the block is 128 x 128, the tile 16 x 16, the
# k-block 256 (with AVX2 and SSE: 126 x 128, 6 x 16 and 6 x 8)
DENSE_SHAPES = [
    ((128, 512, 128), "one whole block, one k-block"),
    ((64, 784, 128), "four k-blocks, the last partial (16); a block cut to the result's 64 rows"),
    ((37, 140, 50), "rows and columns not a multiple of the tile: edge tiles, clamped reads"),
    ((134, 100, 134), "two blocks each way (balanced: 134 = 2 x 67, rounded up to whole tiles)"),
    ((64, 64, 272), "three column blocks of 96 (balanced), the last partial"),
    ((784, 40, 192), "ConvNeXt's rows and columns: blocks that divide both natively (7 x 112, 2 x 96)"),
    ((128, 48, 200), "128 rows: two blocks of 66 with AVX2's 6-row tile, the second partial"),
    ((16, 520, 16), "one tile of 16 x 16 (a tile of AVX-512, three of AVX2)"),
    ((17, 1100, 33), "five k-blocks (the last of 76), rows and columns one past a tile"),
    ((130, 8, 130), "short dot products"),
    ((197, 72, 48), "ViT's 197 rows: the second block's row tiles stop at the last row (7 + 6 of AVX-512)"),
    ((150, 24, 40), "two blocks of 78 rows with AVX2's 6-row tile: the second computes 12 tiles, not 13"),
]


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("mkn", [s for s, _ in DENSE_SHAPES], ids=[w for _, w in DENSE_SHAPES])
def test_dense_shapes(mkn: tuple[int, int, int], target: str) -> None:
    check(dense(*mkn), target=target)


@pytest.mark.parametrize("target", isa_params())
def test_kernel_vectors_are_the_targets_registers(target: str) -> None:
    """Every vector of the kernel is one register of the target: 4 floats with SSE, 8 with
    AVX2, the host's width natively."""
    module = xrelay.parse(dense(64, 784, 512, "bias"))
    lower(module, (target,), None, target)
    ops = [op for op in kernel_ops(module) if isinstance(op, Operation)]
    widths = {r.type.get_shape()[0] for op in ops for r in op.results if isinstance(r.type, VectorType)}
    assert widths == {target_features(target).vector_floats}


@pytest.mark.parametrize("target", isa_params())
def test_edges_and_size_one_dims_at_every_isa(target: str) -> None:
    """Rows and columns one past a tile, a k of no block's multiple, a size-1 batch."""
    check(dense(17, 1100, 33, "bias"), target=target)
    check(batch_matmul((1, 45, 200), (3, 20, 200)), target=target)
    check(matmul((3, 1, 40, 300), (2, 300, 20)), target=target)


@pytest.mark.parametrize("epilogue", ["bias", "gelu", "residual"])
def test_dense_epilogues_on_edge_blocks(epilogue: str) -> None:
    check(dense(37, 600, 80, epilogue))


@pytest.mark.parametrize("data", [(2, 3, 40, 96), (1, 1, 40, 96)])
def test_dense_batched_data(data: tuple[int, ...]) -> None:
    """Leading axes of the data are batch axes of the nest (size-1 ones get no loop)."""
    out = (*data[:-1], 48)
    lines = [f"%y = relay.nn.dense %x, %w : ({t(data)}, {t((48, 96))}) -> {t(out)}"]
    check(program({"x": data, "w": (48, 96)}, lines, out))


@pytest.mark.parametrize(
    "lhs,rhs",
    [
        ((4, 128, 64), (4, 128, 64)),  # bench/kernels.py's shape
        ((3, 70, 17), (3, 130, 17)),  # edges on both axes, short k
        ((1, 45, 200), (3, 20, 200)),  # a broadcast lhs batch, 20 columns (one partial tile)
        ((2, 33, 600), (1, 40, 600)),  # a broadcast rhs batch, three k-blocks
        ((1, 40, 300), (1, 20, 300)),  # a size-1 batch
    ],
)
def test_batch_matmul_shapes(lhs: tuple[int, int, int], rhs: tuple[int, int, int]) -> None:
    for target in ISA_TARGETS:
        check(batch_matmul(lhs, rhs), target=target)


def matmul(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> str:
    """relay.nn.matmul: the rhs [..., K, N] not transposed, batch axes broadcast as numpy's."""
    out = (*np.broadcast_shapes(lhs[:-2], rhs[:-2]), lhs[-2], rhs[-1])
    line = f"%y = relay.nn.matmul %a, %b : ({t(lhs)}, {t(rhs)}) -> {t(out)}"
    return program({"a": lhs, "b": rhs}, [line], out)


@pytest.mark.parametrize(
    "lhs,rhs",
    [
        ((64, 100), (100, 48)),  # rank 2: no batch
        ((2, 37, 170), (170, 33)),  # a batched lhs against one rhs; edges on both axes
        ((3, 1, 40, 300), (2, 300, 20)),  # rank 4 against rank 3, batch axes broadcast both ways
    ],
)
def test_plain_matmul_packs_its_untransposed_rhs(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> None:
    check(matmul(lhs, rhs))


def test_a_packed_weight_is_freed_as_its_packed_copy_replaces_it() -> None:
    """convert-relay-to-loops erases the weight that a prepacked group no longer reads and
    frees its bytes there and then, not at dce and a later full collection (an erased op is a
    reference cycle): a build holds each weight once (BERT-base's peak: 290 MB less). The
    collector is off, so that only the pass can have freed it."""
    text = dense(64, 1024, 1024)
    weight = random_inputs(text, 0)["w"]
    nbytes = weight.nbytes  # 4 MB
    module = xrelay.parse(text)
    passes = all_passes()
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        bind_params(module, {"w": weight})
        for name in PIPELINE[: PIPELINE.index(ConvertRelayToLoopsPass.name)]:
            cls = passes[name]()
            (cls(targets=("c",), host_target="c") if name == "plan-devices" else cls()).apply(context(), module)
        before = tracemalloc.get_traced_memory()[0]
        ConvertRelayToLoopsPass().apply(context(), module)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
    (packed,) = constants_of(module)
    assert packed_matmul.PACKED_FROM_ATTR in packed.attributes
    assert grown < nbytes // 2, f"the pass kept {grown} bytes more; the weight is {nbytes}"


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_nan_and_inf_propagate_as_in_the_interpreter(target: str) -> None:
    """A NaN in x poisons its output row, an inf in w its column (inf * 0-sum mixes give NaN
    or inf as numpy does); the clamped edge reads never reach a stored output."""
    text = dense(37, 600, 80, "bias")
    inputs = random_inputs(text, 1)
    inputs["x"][3, 10] = np.nan
    inputs["x"][36, 599] = np.inf
    inputs["w"][79, 0] = -np.inf
    inputs["w"][5, 550] = np.nan
    inputs["b"][7] = np.inf
    check(text, inputs, target=target)


def test_two_threads_give_the_same_result() -> None:
    check(dense(70, 600, 130, "gelu"), threads=2)


def test_matches_only_big_enough_cpu_matmuls_a_vector_wide() -> None:
    assert schedules(dense(64, 784, 512)) == ["packed_matmul"]
    assert schedules(dense(64, 512, 10)) != ["packed_matmul"]  # narrower than a vector
    assert schedules(dense(8, 64, 16)) != ["packed_matmul"]  # too little work
    assert schedules(dense(12, 784, 512)) != ["packed_matmul"]  # fewer rows than a tile
    opencl = xrelay.parse(dense(64, 784, 512))
    lower(opencl, ("opencl",), "opencl", "c")
    kernels = [op for op in opencl.ops if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes]
    assert [k.attributes[SCHEDULE_ATTR].data for k in kernels] == ["packed_matmul_opencl"]  # type: ignore[union-attr]


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
def test_tile_and_blocks_fit_together(target: str) -> None:
    """The block is whole tiles; the tile's accumulators fit the target's registers with room
    for the rhs vectors and a broadcast (and the product, without FMA); its vectors are one
    register each; a panel of the k-block fills at most half the L1 data cache."""
    features = target_features(target)
    blocks = packed_matmul.blocking(features)
    tile = blocks.tile
    assert blocks.rows % tile.rows == 0 and blocks.columns % tile.columns == 0
    assert tile.count + tile.vectors + 1 + (0 if features.fma else 1) <= features.vector_registers
    assert tile.lanes == features.vector_floats
    assert tile.columns * blocks.depth * 4 <= features.l1d // 2


@pytest.mark.parametrize(
    ("rows", "columns", "seven"),
    [(49, 3072, True), (196, 384, True), (130, 130, True), (197, 3072, True), (22, 768, True),
     (784, 192, False), (128, 768, False), (64, 768, False), (49, 40, False), (15, 3072, False)],
)  # fmt: skip
def test_rows_of_seven_where_the_16_row_tile_pads_them(rows: int, columns: int, seven: bool) -> None:
    """AVX-512 takes 7 x 3 where it pads the rows less than 16 x 1 (ConvNeXt's 49 and 196
    rows, ViT's 197: 203 against 208), not where 16 rows divide them (784, 128, 64 rows), nor
    for fewer than 48 columns or 16 rows (the matmuls packed_matmul takes stay the same);
    AVX2 and SSE lack the registers for it."""
    tile = packed_matmul.rows_of_seven(target_features(PLANNED), rows, columns)
    assert tile == (micro_kernel.Tile(7, 3, 16) if seven else None)
    assert packed_matmul.rows_of_seven(target_features("c -march=x86-64-v3"), 49, 3072) is None
    blocks = packed_matmul.blocking(target_features(PLANNED), micro_kernel.Tile(7, 3, 16))
    assert (blocks.rows, blocks.columns, blocks.depth) == (126, 96, 128)  # a panel of 48 x 128: 24 KiB


SEVEN_ROW_MATMULS = [
    matmul((1, 7, 7, 200), (200, 100)),  # ConvNeXt's 7 x 7 stage, folded rows; 100 columns: 2 tiles + 4
    matmul((55, 130), (130, 50)),  # rows past a tile (56 for 55: clamped), one column tile + 2
    dense(196, 130, 96, "gelu"),  # 28 row tiles, two column tiles, the epilogue
    matmul((1, 134, 100), (100, 96)),  # as ViT's 197 rows: folded, two row blocks, the last tile 1 row
    dense(197, 64, 144, "residual"),  # ViT's rows: 28 tiles and one of 1 row
]


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize(
    "text", SEVEN_ROW_MATMULS, ids=["folded-7x7", "edges", "dense-gelu", "folded-1-row-edge", "dense-197"]
)
def test_rows_of_seven_agree_with_interpret(text: str, target: str) -> None:
    """The 7 x 3 tile natively (the others' own tiles at v2 and v3), the weight pre-packed in
    panels of 48 columns and not, against the interpreter."""
    weight = "w" if "%w" in text else "b"
    inputs = random_inputs(text, 3)
    module = check_prepacked(text, inputs, constants=(weight,), target=target)
    (packed,) = constants_of(module)
    width = 48 if micro_kernel.Tile(16, 1, 16) == micro_kernel.register_tile(target_features(target)) else None
    assert width is None or packed.res.type.get_shape()[-1] == width  # type: ignore[union-attr]
    check(text, inputs, target=target)


def test_register_tiles_of_each_register_file() -> None:
    """AVX-512's 32 registers keep the 16 x 1 tile measured best there; AVX2's and SSE's 16
    take BLIS's Haswell shape, 6 x 2 (12 sums + 2 rhs vectors + a broadcast: 15)."""

    def tile(floats: int, registers: int, fma: bool) -> micro_kernel.Tile:
        features = target_features("c")
        fields = {**features.to_json(), "vector_floats": floats, "vector_registers": registers, "fma": fma}
        return micro_kernel.register_tile(type(features)(**fields))

    assert tile(16, 32, True) == micro_kernel.Tile(16, 1, 16)
    assert tile(8, 16, True) == micro_kernel.Tile(6, 2, 8)
    assert tile(4, 16, False) == micro_kernel.Tile(6, 2, 4)
    assert tile(4, 8, True) == micro_kernel.Tile(2, 2, 4)


def test_every_shape_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The kernels of every shape above, built with -fsanitize=address and run on arrays of
    exactly their sizes: the clamped edge reads and the scratch stay in bounds."""
    texts = [dense(*mkn) for mkn, _ in DENSE_SHAPES] + [dense(37, 600, 80, "gelu")]
    texts += [batch_matmul((3, 70, 17), (3, 130, 17)), batch_matmul((2, 33, 600), (1, 40, 600))]
    texts += [matmul((3, 1, 40, 300), (2, 300, 20))]
    lowered = []
    for number, text in enumerate(texts):
        module = xrelay.parse(text)
        lower(module, ("c",), None, "c")
        lowered.append(str(module).replace("@fused_", f"@case{number}_fused_"))  # one library
    for first in range(0, len(lowered), 5):  # (the driver's script is one argument: at most 128 KiB)
        result = run_under_asan(tmp_path, lowered[first : first + 5])
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.startswith("ran ")


# --- pre-packed constant weights (packed_matmul_prepacked) ---------------------------------


def lowered_with_params(text: str, params: dict[str, np.ndarray], target: str = "c") -> ModuleOp:
    module = xrelay.parse(text)
    bind_params(module, params)
    lower(module, (target,), None, target)
    return module


def check_prepacked(
    text: str, inputs: dict[str, np.ndarray], constants: tuple[str, ...] = ("w",), target: str = "c"
) -> ModuleOp:
    """Built for C (`target`) with `constants` bound as params, `text` computes what the
    interpreter does, in packed_matmul_prepacked kernels. Returns the lowered module."""
    params = {name: inputs[name] for name in constants}
    module = lowered_with_params(text, params, target)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes]
    assert "packed_matmul_prepacked" in [k.attributes[SCHEDULE_ATTR].data for k in kernels]  # type: ignore[union-attr]
    rest = {name: value for name, value in inputs.items() if name not in constants}
    got = xrelay.build(text, targets=(target,), params=params).run(**rest)
    assert isinstance(got, np.ndarray)
    assert_as_interpreted(text, inputs, got)
    return module


def constants_of(module: ModuleOp) -> list[relay.ConstantOp]:
    return [op for op in module.walk() if isinstance(op, relay.ConstantOp) and not op.value.is_splat()]


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("mkn", [s for s, _ in DENSE_SHAPES], ids=[w for _, w in DENSE_SHAPES])
def test_prepacked_weight_shapes(mkn: tuple[int, int, int], target: str) -> None:
    """Edge tiles, N not a multiple of the tile or of the block, k-blocks with a remainder:
    the kernel reads the packed constant, and the weight itself is gone (no other user)."""
    text = dense(*mkn, "bias")
    module = check_prepacked(text, random_inputs(text, 0), target=target)
    (packed,) = constants_of(module)
    n, k = mkn[2], mkn[1]
    features = target_features(target)
    blocks = packed_matmul.blocking(features, packed_matmul.rows_of_seven(features, mkn[0], n))
    width = blocks.tile.columns
    columns = packed_matmul.block_columns(n, blocks)
    assert packed.res.type == TensorType(f32, [-(-n // columns) * columns // width, k, width])
    assert packed.attributes[packed_matmul.PACKED_FROM_ATTR] == StringAttr(
        f"dense weight tensor<{n}x{k}xf32>: panels [n / {width}, k, n % {width}]"
    )


@pytest.mark.parametrize("tile", [1, 6, 16, 32])
def test_balanced_blocks_are_whole_tiles_and_overrun_by_less_than_a_tile_each(tile: int) -> None:
    """As many blocks as blocks of at most `block` need, each whole tiles and no larger than
    `block`, together overrunning the extent by less than a tile per block."""
    for block in (tile, 4 * tile, 126 // tile * tile or tile, 128 // tile * tile or tile):
        for extent in range(1, 300):
            size = packed_matmul.balanced(extent, block, tile)
            count = -(-extent // size)
            assert size % tile == 0 and size <= max(block, tile)
            assert count == -(-extent // block)
            assert count * size - extent < count * tile


def test_balanced_blocks_at_the_reference_shapes() -> None:
    """The blocks that made ConvNeXt's and the transformer's denses waste a third (native)
    and a half (AVX2) of their multiply-adds."""
    assert packed_matmul.balanced(192, 128, 16) == 96  # was 128: 256 columns computed
    assert packed_matmul.balanced(784, 128, 16) == 112  # 7 blocks, none partial
    assert packed_matmul.balanced(128, 126, 6) == 66  # was 126: 252 rows computed
    assert packed_matmul.balanced(64, 126, 6) == 66
    assert packed_matmul.balanced(512, 128, 16) == 128


def test_pack_weight_lays_columns_out_in_panels() -> None:
    weight = np.arange(20 * 3, dtype=np.float32).reshape(20, 3)
    blocks = packed_matmul.Blocking(micro_kernel.Tile(16, 1, 16), rows=128, columns=128, depth=256)
    panels = packed_matmul.pack_weight(weight, blocks)
    assert panels.shape == (2, 3, 16)
    assert panels[0, 2, 5] == weight[5, 2] and panels[1, 1, 3] == weight[19, 1]
    assert (panels[1, :, 4:] == weight[19][:, None]).all()  # past N: the last column
    plain = np.stack([weight.T, weight.T + 60])  # [batch, K, N]
    np.testing.assert_array_equal(packed_matmul.pack_weight(plain, blocks, micro_kernel.Layout.PLAIN)[1], panels + 60)
    narrow = packed_matmul.Blocking(micro_kernel.Tile(6, 2, 4), rows=126, columns=128, depth=256)
    assert packed_matmul.pack_weight(weight, narrow).shape == (3, 3, 8)  # 20 columns in panels of 8


PREPACKED_MATMULS = [
    matmul((2, 37, 170), (170, 33)),  # a batched lhs against one rhs; edges on both axes
    matmul((3, 1, 40, 300), (2, 300, 20)),  # batch axes broadcast both ways, one partial tile
    batch_matmul((2, 33, 600), (1, 40, 600)),  # a broadcast rhs batch, three k-blocks
    batch_matmul((3, 70, 17), (3, 130, 17)),  # edges on both axes, short k, a second block
]


@pytest.mark.parametrize(
    "text", PREPACKED_MATMULS, ids=["matmul", "matmul-batched", "batch_matmul-broadcast", "batch_matmul"]
)
def test_prepacked_rhs_of_matmul_and_batch_matmul(text: str) -> None:
    """A constant rhs of matmul ([..., K, N]) or batch_matmul ([..., N, K]) is packed the
    same way, its batch axes kept (and broadcast as the rhs's)."""
    module = check_prepacked(text, random_inputs(text, 4), ("b",))
    (packed,) = constants_of(module)
    kind = "matmul rhs" if "relay.nn.matmul" in text else "batch_matmul rhs"
    assert packed.attributes[packed_matmul.PACKED_FROM_ATTR].data.startswith(kind)  # type: ignore[union-attr]


def test_prepacked_constant_shared_and_kept_for_other_users() -> None:
    """One weight read by two denses (packed once, both kernels read the packed copy) and by
    an elementwise op, which keeps the original constant."""
    n, m = 96, 40  # (a weight of at most 64 x 64 floats goes to transposed_rows)
    ty, data = t((n, n)), t((m, n))
    lines = [
        f"%d1 = relay.nn.dense %x1, %w : ({data}, {ty}) -> {t((m, n))}",
        f"%d2 = relay.nn.dense %x2, %w : ({data}, {ty}) -> {t((m, n))}",
        f"%e = relay.add %d1, %d2 : ({t((m, n))}, {t((m, n))}) -> {t((m, n))}",
        f"%s = relay.nn.dense %e, %v : ({t((m, n))}, {ty}) -> {t((m, n))}",
        f"%h = relay.tanh %w : {ty}",
        f"%g = relay.nn.dense %s, %h : ({t((m, n))}, {ty}) -> {t((m, n))}",
    ]
    text = program({"x1": (m, n), "x2": (m, n), "w": (n, n), "v": (n, n)}, lines, (m, n))
    module = check_prepacked(text, random_inputs(text, 2), ("w", "v"))
    constants = constants_of(module)
    packed = [c for c in constants if packed_matmul.PACKED_FROM_ATTR in c.attributes]
    assert len(packed) == 2  # w's (shared by d1 and d2) and v's
    assert sorted(len(list(c.res.uses)) for c in packed) == [1, 2]
    assert [c.res.type for c in constants if c not in packed] == [TensorType(f32, [n, n])]  # w, for tanh


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_prepacked_weight_keeps_nan_and_inf(target: str) -> None:
    text = dense(37, 600, 80, "bias")
    inputs = random_inputs(text, 1)
    inputs["w"][79, 0] = -np.inf
    inputs["w"][5, 550] = np.nan
    inputs["w"][64, 300] = np.inf
    check_prepacked(text, inputs, target=target)


def test_prepacked_executable_saves_and_loads(tmp_path: Path) -> None:
    text = dense(37, 300, 50, "gelu")
    inputs = random_inputs(text, 3)
    w = inputs.pop("w")
    exe = xrelay.build(text, targets=("c",), params={"w": w})
    exe.save(tmp_path / "model")
    loaded = xrelay.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.run(**inputs), exe.run(**inputs))
    np.testing.assert_allclose(
        exe.run(**inputs), xrelay.interpret(xrelay.parse(text), {**inputs, "w": w}), rtol=1e-4, atol=1e-4
    )


def prepacked_kernels(text: str, weight: str, number: int) -> str:
    """The kernels of `text` lowered with its `weight` bound (so pre-packed), without @main (the
    constants stay out of the ASan driver's script), renamed apart as case `number`."""
    module = lowered_with_params(text, {weight: random_inputs(text, 0)[weight]})
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    main.detach()
    main.erase()
    return str(module).replace("@fused_", f"@case{number}_fused_")


def test_prepacked_kernels_run_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The pre-packed kernels, on arrays of exactly their sizes (the packed input's too)."""
    shapes = [(37, 140, 50), (134, 100, 134), (17, 1100, 33), (64, 64, 272), (64, 1040, 140), (32, 784, 150)]
    lowered = [prepacked_kernels(dense(*mkn, "bias"), "w", number) for number, mkn in enumerate(shapes)]
    for number, text in enumerate(PREPACKED_MATMULS, len(lowered)):
        lowered.append(prepacked_kernels(text, "b", number))
    for first in range(0, len(lowered), 4):  # (the driver's script is one argument: at most 128 KiB)
        result = run_under_asan(tmp_path, lowered[first : first + 4])
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.startswith("ran ")


# --- the lhs read in place, one deep k-block, the prefetch of pre-packed panels -------------


def test_rows_spread_where_no_l1_set_holds_more_than_8_of_a_tiles_rows() -> None:
    assert all(packed_matmul.rows_spread(k, 16) for k in (784, 64, 100, 1040, 600, 128, 256, 512, 768, 1536))
    assert not any(packed_matmul.rows_spread(k, 16) for k in (1024, 2048, 3072, 4096))
    assert packed_matmul.rows_spread(1024, 6)  # AVX2's 6 rows: at most 6 to a set


def kernel_ops(module: ModuleOp) -> list[object]:
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes]
    return [op for kernel in kernels for op in kernel.walk()]


AVX512_TILE = pytest.mark.skipif(
    micro_kernel.Tile(16, 1, 16) != NATIVE_TILE, reason="the scratch shapes of the host's 16 x 1 tile (AVX-512)"
)


@AVX512_TILE
@pytest.mark.parametrize(
    "mkn,scratch",
    [
        ((64, 784, 512), [[64, 128]]),  # rows in place, one k-block: the sums only
        ((64, 512, 512), [[64, 128]]),  # in place (8 rows to an L1 set), one k-block of 512
        ((64, 2048, 16), [[64, 16], [4, 16, 260]]),  # rows copied (one set for 16), k-blocks of 256
        ((64, 1040, 144), [[64, 80]]),  # in place, deeper than MAX_DEPTH: k-blocks of 256; 2 x 80 columns
        ((48, 784, 160), [[48, 80]]),  # the block's rows are the result's 48; 160 columns in 2 blocks of 80
        ((44, 784, 160), [[48, 80]]),  # 44 rows: in place too, the last tile of 12 rows a micro-kernel of its own
        ((40, 784, 160), [[42, 96]]),  # 40 rows: 42 in 7-row tiles (ROWS_OF_SEVEN), not 48; in place
        ((64, 784, 128), [[64, 128], [4, 16, 788]]),  # one block of columns: copied once anyway
        ((128, 1024, 256), [[128, 128], [8, 16, 260]]),  # too much scratch for one k-block
    ],
)
def test_prepacked_scratch_and_prefetch(mkn: tuple[int, int, int], scratch: list[list[int]]) -> None:
    """Where the rows are read in place and where copied (its scratch), the k-block, and a
    prefetch per step of the pre-packed panels in each micro-kernel (the full tiles', and the
    partial last tile's where the rows are not a multiple of 16); the result as the interpreter's."""
    text = dense(*mkn, "bias")
    module = check_prepacked(text, random_inputs(text, 5))
    ops = kernel_ops(module)
    allocas = [op.memref.type.get_shape() for op in ops if isinstance(op, memref.AllocaOp)]
    assert [list(shape) for shape in allocas] == scratch
    prefetches = [op for op in ops if isinstance(op, cpu.PrefetchOp)]
    assert len(prefetches) == (1 if mkn[0] % 16 == 0 else 2)  # a partial last row tile is a micro-kernel of its own


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("m", [128, 197, 44])
def test_rows_not_a_multiple_of_the_block_are_read_in_place(target: str, m: int) -> None:
    """A result whose rows the row blocks do not divide (BERT's 128 in AVX2's 6-row tiles,
    ViT's 197) reads its lhs where it lies, with no clamp: the last row tile is computed with
    only its rows, so no read passes the edge. Before, such rows were copied per work item
    (dense 128x768.3072x768 at x86-64-v3: 118 -> 122 GFLOP/s). The result as the interpreter's."""
    text = dense(m, 784, 320, "bias")
    module = check_prepacked(text, random_inputs(text, 6), target=target)
    allocas = [op.memref.type.get_shape() for op in kernel_ops(module) if isinstance(op, memref.AllocaOp)]
    assert len(allocas) == 1  # the sums: no copy of the rows


@AVX512_TILE
def test_packing_per_work_item_has_no_prefetch_and_k_blocks_of_depth() -> None:
    """Without a constant rhs the panels are packed per k-block into scratch (on the stack,
    so no prefetch); the rows are still read in place."""
    module = xrelay.parse(dense(64, 784, 256))
    lower(module, ("c",), None, "c")
    ops = kernel_ops(module)
    allocas = [list(op.memref.type.get_shape()) for op in ops if isinstance(op, memref.AllocaOp)]
    assert allocas == [[64, 128], [8, 256, 16]]
    assert not any(isinstance(op, cpu.PrefetchOp) for op in ops)


def test_rows_read_in_place_are_one_pointer_and_constant_offsets(tmp_path: Path) -> None:
    """AVX-512's 16 x 1 tile (the target pinned) reads its 16 rows of the lhs where they lie
    as `in0[row * 784 + k + r * 784]`: one variable part and a constant per row r
    (targets/c_style.split_constant), which gcc addresses from one pointer with a constant
    displacement per row, each FMA's broadcast from memory; printed `(row + r) * 784`, the
    rows took a register each, and gcc spilled four and subtracted them from the k pointer
    every step (4 FMAs of 16 on a `(%reg,%reg,4)` operand)."""
    target = "c -march=x86-64-v4"
    text = dense(64, 784, 512, "bias")
    module = lowered_with_params(text, {"w": random_inputs(text, 7)["w"]}, target)
    (source,) = [s.source for s in kernel_sources(module)]
    reads = re.findall(r"= in0\[(\w+) \* 784 \+ (\w+)(?: \+ (\d+))?\];", source)
    assert len({(row, k) for row, k, _ in reads}) == 1
    assert sorted(int(offset or 0) for _, _, offset in reads) == [784 * r for r in range(16)]
    asm = assembly(source, target, tmp_path)
    fmas = re.findall(r"vfmadd\d+ps\s+(-?\d*)\((%\w+)\)\{1to16\}", asm)
    displacements = sorted(int(d or 0) for d, _ in fmas)
    assert len(fmas) == 16 and len({base for _, base in fmas}) == 1
    assert [d - displacements[0] for d in displacements] == [784 * 4 * r for r in range(16)]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_rows_read_in_place_keep_nan_and_inf() -> None:
    text = dense(64, 784, 144, "bias")
    inputs = random_inputs(text, 6)
    inputs["x"][3, 10] = np.nan
    inputs["x"][63, 783] = np.inf
    inputs["w"][143, 0] = -np.inf
    check_prepacked(text, inputs)
    check(text, inputs)


@AVX512_TILE
@pytest.mark.parametrize(
    "lhs,rhs,panels",
    [
        ((1, 48, 200), (3, 144, 200), [5, 200, 16]),  # a broadcast lhs batch; one k-block; 2 x 80 columns
        ((2, 64, 1100), (2, 136, 1100), [5, 256, 16]),  # k-blocks of 256, the last of 76; 2 x 80 columns
    ],
)
def test_batch_matmul_rows_in_place(lhs: tuple[int, int, int], rhs: tuple[int, int, int], panels: list[int]) -> None:
    """The lhs rows read where they lie (scratch: the sums and the panels, no rows)."""
    text = batch_matmul(lhs, rhs)
    module = xrelay.parse(text)
    lower(module, ("c",), None, "c")
    allocas = [list(op.memref.type.get_shape()) for op in kernel_ops(module) if isinstance(op, memref.AllocaOp)]
    assert allocas == [[lhs[1], 80], panels]
    check(text)


@pytest.mark.parametrize("target", isa_params())
def test_batch_axes_fold_into_rows_against_one_weight(target: str) -> None:
    """ConvNeXt's pointwise layers: [1, 5, 7, K] . [K, N], 7 rows per batch (fewer than a
    tile's), are one matmul of 35 rows (`flat_rows`), packed or with the weight pre-packed,
    whose edge rows end inside a batch."""
    text = matmul((1, 5, 7, 200), (200, 40))
    assert schedules(text, target) == ["packed_matmul"]
    check(text, target=target)
    check_prepacked(text, random_inputs(text, 1), constants=("b",), target=target)
