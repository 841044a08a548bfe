"""Tolerances that follow from the computation: an error bound for a sum of products, instead of
a fixed rtol.

    bound_terms = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert_close_to_sum_of_products(out, ref, bound_terms, k=a.shape[1])
"""

from __future__ import annotations

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)  # 2**-23, twice the unit roundoff of float32
TINY32 = float(np.finfo(np.float32).tiny)


def sum_of_products_bound(bound_terms: np.ndarray, k: int, c: float = 2.0) -> np.ndarray:
    """`c * k * eps32 * bound_terms + tiny`: the error allowed between two float32 results
    `out` and `ref` of sums of `k` products each.

    `bound_terms` is, per element, the sum of the products' absolute values, computed by the
    caller in float64 (`|a| @ |b|` for a matmul; a network of such layers, relus, max-pools
    and additions evaluated on |input| and |weights|, with `k` the sum of the reduction
    lengths along its path). A float32 sum of k products in any order, with or without FMA,
    is within `k * u * bound_terms` (u = eps32 / 2, to first order) of the exact sum, so two
    such results are within `k * eps32 * bound_terms` of each other; `c` is the margin for
    what else rounds (a bias, a transform such as Winograd's). The `tiny` term admits the
    results' underflow.

    A fixed rtol is wrong for such sums: when the terms cancel, the result is small and its
    error is still as large as the terms make it (|diff| 2.8e-4 on a result of -1.53 whose
    terms were near 1e3)."""
    return c * k * EPS32 * np.asarray(bound_terms, dtype=np.float64) + k * TINY32


def depth_scaled_bound(ref: np.ndarray, k: int, c: float = 2.0) -> np.ndarray:
    """`c * k * eps32 * max|ref|` for every element: for a whole network, whose rigorous
    sum-of-products bound is too loose to test with (see test_isa_levels.py), k the sum of
    the reduction lengths on its longest path."""
    scale = float(np.max(np.abs(np.asarray(ref, dtype=np.float64)), initial=0.0))
    return np.full(np.shape(ref), c * k * EPS32 * max(scale, TINY32))


def assert_within(out: np.ndarray, ref: np.ndarray, bound: np.ndarray, what: str = "") -> None:
    """|out - ref| <= bound elementwise (shapes equal), and `out` NaN or infinite exactly where
    `ref` is; the message names the worst element."""
    out64, ref64 = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert out64.shape == ref64.shape, f"{what}: expected shape {ref64.shape}, found {out64.shape}"
    special = ~np.isfinite(ref64)
    np.testing.assert_array_equal(out64[special], ref64[special], err_msg=f"{what}: NaN or infinity differs")
    excess = np.where(special, 0.0, np.abs(out64 - ref64) - np.broadcast_to(bound, ref64.shape))
    if np.all(excess <= 0):  # NaN fails here
        return
    i = np.unravel_index(int(np.nanargmax(np.where(np.isnan(excess), np.inf, excess))), ref64.shape)
    allowed = np.broadcast_to(bound, ref64.shape)[i]
    raise AssertionError(
        f"{what}: {int(np.sum(~(excess <= 0)))} of {ref64.size} elements out of bounds; worst at {i}: "
        f"found {out64[i]!r}, expected {ref64[i]!r} within {allowed:.3e} (|diff| {abs(out64[i] - ref64[i]):.3e})"
    )


def assert_close_to_sum_of_products(
    out: np.ndarray,
    ref: np.ndarray,
    bound_terms: np.ndarray,
    k: int,
    c: float = 2.0,
    what: str = "",
    atol: float = 0.0,
) -> None:
    """|out - ref| <= c * k * eps32 * bound_terms + tiny + `atol` elementwise
    (`sum_of_products_bound`); non-finite values equal."""
    bound = sum_of_products_bound(bound_terms, k, c) + atol
    assert_within(out, ref, bound, what or f"a sum of {k} products")
