"""
micro_kernel: a register-blocked tile of sums held in vectors, for matmul-class schedules.

A `Tile` is `rows` x `vectors` vectors of `lanes` floats (`vector<lanes x f32>`, one
register of the target: `register_tile`): `rows` x
`columns` sums that stay in registers while a loop nest (the reduction: k for a matmul, the
input channels and taps for a convolution) adds a product to each per step, one
broadcast-FMA per vector:

    for ks in extents:                          # accumulate()
        b[v] = rhs(ks, v)                       #   a vector of `columns`' floats each
        for r in rows:
            a = broadcast(lhs(ks, r))           #   one float of row r
            acc[r][v] = fma(a, b[v], acc[r][v])

`rhs` usually loads from a packed panel (`pack_panel`: [panels, depth, columns] floats, so
each step's vectors are adjacent and every load is unit-stride); `lhs` is any f32 value,
best a load from rows that lie along k: the operand's own rows where they need no clamp and
do not crowd one L1 set (packed_matmul.rows_spread), or rows copied as they are
(`copy_rows`: [panels, rows, depth + pad], a copy, no transpose; packing them transposed,
[panels, depth, rows], was up to 6% slower): then the tile's rows are one pointer and
constant offsets, and an edge row is clamped once while packing instead of in every step. The accumulators are a flat list, row-major:
`acc[r * tile.vectors + v]`. `load_block`/`store_block` move a tile from and to a
memref (a scratch block: k-blocking adds to it; the epilogue reads it), `zeros` starts one.

On the C target the vectors are a GCC vector type and `vector.fma` a fused multiply-add per
lane, which gcc -O3 turns into one `vfmadd231ps` per accumulator and step (with AVX-512 the
broadcast folded in, `mem{1to16}`; with AVX2 a `vbroadcastss` into a register first;
targets/c.py).

The tile's shape is the target's (`register_tile`): its accumulators, the rhs vectors of a
step and the broadcast (and, without FMA, the product of a multiply before its add) must all
stay in the target's vector registers, or gcc keeps the sums on the stack and every FMA
reads and writes memory (16 sums of 16 floats on AVX2 took 32 of its 16 ymm registers).
Within that, enough independent sums hide the FMA latency (latency x pipes: 4 x 2 = 8 on
current x86), and fewer loads per FMA keep the load ports from being the limit. TILE_SHAPES
lists the shapes in the order they were measured best (bench/matmul_tiles.py; numbers in the
commit messages); the first that fits the registers is taken: 16 x 1 with 32 registers
(AVX-512: 16 sums, one rhs vector, the broadcast a memory operand), 6 x 2 with 16 (BLIS's
Haswell shape: 12 sums + 2 rhs vectors + 1 broadcast = 15 of AVX2's 16 ymm).

API (kept stable for the schedules built on it; additions only):
    vector_type(lanes)                       vector<lanes x f32>
    Tile(rows, vectors, lanes)               .columns, .count
    register_tile(features) -> Tile          the target's tile: lanes and shape from its features
    broadcast(e, scalar, lanes) / load(e, ref, idx, lanes) / store(e, value, ref, idx)
    zeros(e, tile)                           the accumulators of an empty sum
    accumulate(e, tile, extents, accs, lhs, rhs) -> accs
    load_block(e, tile, ref, at) / store_block(e, tile, accs, ref, at)
    pack_panel(e, tile, scratch, panels, depth, element)
    copy_rows(e, tile, scratch, panels, depth, element)
    Layout, rhs_index(layout, n, k)          a matmul rhs's index: [n, k] (TRANSPOSED) or [k, n] (PLAIN)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from xdsl.dialects import memref, vector
from xdsl.dialects.builtin import Float32Type, VectorType, f32
from xdsl.ir import SSAValue

from xrelay.runtime.machine import Features
from xrelay.transforms.kernel_builder import Extent, Index, KernelBuilder


def vector_type(lanes: int) -> VectorType[Float32Type]:
    """`vector<lanes x f32>`: one vector register of the target (`Features.vector_floats`)."""
    return VectorType(f32, [lanes])


# On opencl a micro-kernel's scratch (`memref.alloca`) is a private array of each work item.
# PoCL's pthread device keeps the private arrays of all work items of a work group on the
# stack of the thread running the group (8 MiB here: a probe kernel of 2 x 3.97 MiB runs,
# 2 x 4 MiB segfaults), and with no local size given makes a small NDRange one work group. So
# the micro-kernel schedules launch each work item as a work group of its own
# (`schedules.one_group_per_item`), and bound a work item's scratch well under that stack
# (packed_conv.PACK_MAX_FLOATS, winograd_conv.SCRATCH_MAX_FLOATS: at most 1.5 MiB; a cpu
# kernel's winograd groups up to winograd_conv.CPU_SCRATCH_MAX_FLOATS, 3 MiB).


@dataclass(frozen=True)
class Tile:
    """`rows` x `vectors` vectors of `lanes` sums each: `rows` x `columns` floats."""

    rows: int
    vectors: int
    lanes: int

    @property
    def columns(self) -> int:
        return self.vectors * self.lanes

    @property
    def count(self) -> int:
        """The accumulators (vectors) of the tile."""
        return self.rows * self.vectors


# (rows, vectors) of a tile, best first (see the module docstring): the first whose registers
# (`registers_needed`) the target has is its tile. 1 x 1 fits any target. Also measured with
# balanced blocks (prepacked dense at the MLP's, transformer's and ConvNeXt's shapes, 1
# thread, 20-30 interleaved rounds, load 3): AVX2's 4 x 3 and 8 x 1 5-12% slower than 6 x 2
# (ConvNeXt 4 x 3 alike); AVX-512's 12 x 2 and 14 x 2 10-20% slower than 16 x 1; 8 x 2 mixed
# (ConvNeXt 1.11x the GFLOP/s, transformer 1.0-1.1x, MLP 64x512.512x512 0.93x), so not taken.
TILE_SHAPES: tuple[tuple[int, int], ...] = ((16, 1), (6, 2), (4, 2), (2, 2), (1, 1))


def registers_needed(rows: int, vectors: int, fma: bool, broadcasts: int = 1) -> int:
    """The vector registers of a step of a rows x vectors tile: its sums, the rhs vectors, the
    `broadcasts` of lhs values live at once, and (without FMA) the product before it is added."""
    return rows * vectors + vectors + broadcasts + (0 if fma else 1)


def register_tile(features: Features) -> Tile:
    """The micro-kernel's tile on `features`' machine: vectors of its `vector_floats` lanes,
    the first of TILE_SHAPES whose step fits its `vector_registers`."""
    rows, vectors = next(
        (r, v) for r, v in TILE_SHAPES if registers_needed(r, v, features.fma) <= features.vector_registers
    )
    return Tile(rows=rows, vectors=vectors, lanes=features.vector_floats)


class Layout(Enum):
    """How a matmul's rhs holds element (n, k): dense's weight and batch_matmul's rhs are
    TRANSPOSED ([..., N, K]); a plain matmul's rhs is PLAIN ([..., K, N])."""

    TRANSPOSED = "transposed"
    PLAIN = "plain"


def rhs_index(layout: Layout, n: SSAValue, k: SSAValue) -> list[SSAValue]:
    """The last two index values of the rhs element (n, k) in `layout`."""
    return [n, k] if layout is Layout.TRANSPOSED else [k, n]


def broadcast(e: KernelBuilder, scalar: SSAValue, lanes: int) -> SSAValue:
    """A vector of `lanes` floats with `scalar` in every lane."""
    return e.emit(vector.BroadcastOp(scalar, vector_type(lanes)))


def load(e: KernelBuilder, ref: SSAValue, idx: Index, lanes: int) -> SSAValue:
    """The `lanes` floats of `ref` from `idx` on along its last axis (unit-stride)."""
    return e.emit(vector.LoadOp(ref, list(idx), vector_type(lanes)))


def store(e: KernelBuilder, value: SSAValue, ref: SSAValue, idx: Index) -> None:
    """`ref[idx ...]` = the floats of vector `value`, along `ref`'s last axis."""
    e.builder.insert(vector.StoreOp(value, ref, list(idx)))


def zeros(e: KernelBuilder, tile: Tile) -> list[SSAValue]:
    """The accumulators of an empty sum (+0.0 in every lane, as the scalar loops start)."""
    zero = broadcast(e, e.f32(0.0), tile.lanes)
    return [zero] * tile.count


def accumulate(
    e: KernelBuilder,
    tile: Tile,
    extents: Sequence[Extent],
    accs: Sequence[SSAValue],
    lhs: Callable[[list[SSAValue], int], SSAValue],
    rhs: Callable[[list[SSAValue], int], SSAValue],
) -> list[SSAValue]:
    """`accs` plus, for each step `ks` of a loop nest over `extents`, the outer product of
    the column `lhs(ks, r)` (an f32 per row r) and the row `rhs(ks, v)` (a vector per
    vector v of the tile's row): one `vector.fma` per accumulator per step, the rhs vector its
    first operand (with the broadcast first, gcc 12 kept one of AVX2's 6 x 2 sums on the stack
    in MobileNetV2's 160 -> 960 1 x 1 conv, 0.30 -> 0.16 ms with it in a register; no other
    kernel of nine zoo models at x86-64-v2/v3 changed its stack FMAs). Returns the new
    accumulators (row-major)."""
    assert len(accs) == tile.count

    def step(ks: list[SSAValue], sums: list[SSAValue]) -> list[SSAValue]:
        row = [rhs(ks, v) for v in range(tile.vectors)]
        result: list[SSAValue] = []
        for r in range(tile.rows):
            a = broadcast(e, lhs(ks, r), tile.lanes)
            result += [e.emit(vector.FMAOp(row[v], a, sums[r * tile.vectors + v])) for v in range(tile.vectors)]
        return result

    return e.loops(extents, list(accs), step)


def load_block(e: KernelBuilder, tile: Tile, ref: SSAValue, at: Callable[[int, int], list[SSAValue]]) -> list[SSAValue]:
    """The tile's accumulators read from `ref`: vector v of row r from index `at(r, v)`."""
    return [load(e, ref, at(r, v), tile.lanes) for r in range(tile.rows) for v in range(tile.vectors)]


def store_block(
    e: KernelBuilder,
    tile: Tile,
    accs: Sequence[SSAValue],
    ref: SSAValue,
    at: Callable[[int, int], list[SSAValue]],
) -> None:
    """The tile's accumulators written to `ref`: vector v of row r at index `at(r, v)`."""
    for r in range(tile.rows):
        for v in range(tile.vectors):
            store(e, accs[r * tile.vectors + v], ref, at(r, v))


def pack_panel(
    e: KernelBuilder,
    tile: Tile,
    scratch: SSAValue,
    panels: int,
    depth: Extent,
    element: Callable[[SSAValue, SSAValue], SSAValue],
) -> None:
    """`scratch[p, k, j] = element(p * tile.columns + j, k)` for p < `panels`, k in `depth`
    (a trip count or [lo, hi): k then counts from 0 in scratch but is passed as is) and
    j < tile.columns: the rhs columns of `panels` tiles, each step's `columns` floats
    adjacent, so `accumulate` loads them unit-stride. `scratch` is a
    memref<panels x depth' x columns x f32> (depth' at least the trip count). `element` must
    read inside its operand for every column asked for (clamp the edge)."""

    def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        p, k, j = ivs
        position = k if isinstance(depth, int) else e.sub(k, depth[0])
        column = e.add(e.mul_const(p, tile.columns), j)
        e.builder.insert(memref.StoreOp.get(element(column, k), scratch, [p, position, j]))
        return []

    e.loops([panels, depth, tile.columns], [], body)


def copy_rows(
    e: KernelBuilder,
    tile: Tile,
    scratch: SSAValue,
    panels: Extent,
    depth: Extent,
    element: Callable[[SSAValue, SSAValue], SSAValue],
) -> None:
    """`scratch[p, r, k] = element(p * tile.rows + r, k)` for p in `panels` (a trip count or
    [lo, hi), as `depth`), r < tile.rows and
    k in `depth` (as in `pack_panel`): the lhs rows of `panels` tiles as they lie along k, so
    that the copy reads and writes unit-stride (a transposed [k, r] panel was slower). `scratch` is a
    memref<panels x rows x depth' x f32>, depth' at least the trip count (a few floats more
    spread the rows over the cache's sets); `element` must read inside its operand."""

    def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        p, r, k = ivs
        position = k if isinstance(depth, int) else e.sub(k, depth[0])
        e.builder.insert(memref.StoreOp.get(element(e.add(e.mul_const(p, tile.rows), r), k), scratch, [p, r, position]))
        return []

    e.loops([panels, tile.rows, depth], [], body)
