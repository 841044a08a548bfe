"""Tolerances that follow from the computation, for tests of kernels that sum products.

A float32 sum of k products, in any order and with or without fused multiply-adds, differs
from the exact sum by at most about k * eps32 * sum(|a_i| |b_i|) (each addition rounds by at
most eps32 / 2 of the partial sum's magnitude, each product by eps32 / 2 of its own). A fixed
rtol is the wrong test for such a sum: where its terms cancel, the result is much smaller
than its terms, and the rounding error is relative to the terms, not to the result.

    magnitude = np.abs(x) @ np.abs(w).T          # or interpret the program on |inputs|
    assert_close_to_sum_of_products(got, expected, magnitude, terms=k)
"""

from __future__ import annotations

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)


def assert_close_to_sum_of_products(
    got: np.ndarray, expected: np.ndarray, magnitude: np.ndarray, terms: int, atol: float = 1e-6
) -> None:
    """`got` equals `expected` (each a sum of `terms` products whose absolute values sum to
    `magnitude`, broadcast against them) within terms * eps32 * magnitude + `atol`; where
    `expected` is NaN or infinite, `got` is the same."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    special = ~np.isfinite(expected)
    np.testing.assert_array_equal(got[special], expected[special])
    bound = np.broadcast_to(terms * EPS32 * np.abs(np.asarray(magnitude, dtype=np.float64)) + atol, got.shape)
    error = np.abs(got - expected)
    bad = ~special & ~(error <= bound)
    if bad.any():
        worst = np.unravel_index(np.argmax(np.where(bad, error - bound, -np.inf)), got.shape)
        raise AssertionError(
            f"{int(bad.sum())} of {got.size} elements beyond the bound of a sum of {terms} products; "
            f"worst at {tuple(int(i) for i in worst)}: got {got[worst]}, expected {expected[worst]}, "
            f"|error| {error[worst]:.3g} > bound {bound[worst]:.3g}"
        )
