"""Reductions folded in vector lanes (Note [Lane reductions]): amax/amin, prod and vector norms on
rows long enough for the vector loop and its tail, with NaN, infinities and signed zeros placed
in both, against torch in every floating dtype."""
import numpy as np
import pytest

from custom_helpers import I, both

DTYPES = ("float32", "float64", "bfloat16", "float16")


def rows(rng, dtype, scale=1.0):
    """[6, 203] values: row 0 plain, 1 NaN in the vector part, 2 NaN in the tail, 3 +-inf,
    4 signed zeros and a NaN at 0, 5 all equal."""
    x = rng.uniform(-1, 1, (6, 203)) * scale
    x[1, 37] = np.nan
    x[2, 201] = np.nan
    x[3, 5], x[3, 150] = np.inf, -np.inf
    x[4, ::2] = 0.0
    x[4, 1::2] = -0.0
    x[4, 0] = np.nan
    x[5] = 0.25
    return I(x, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_amax_amin(rng, dtype):
    x = rows(rng, dtype)
    for dim in (1, 0, (0, 1), -1):
        both(lambda L, x: x.amax(dim), x, what=f"amax {dim}")
        both(lambda L, x: x.amin(dim), x, what=f"amin {dim}")
    both(lambda L, x: x.max(), x)
    both(lambda L, x: x.min(), x)
    both(lambda L, x: x[:, :190].amax(1), x, what="no NaN in the tail")


@pytest.mark.parametrize("dtype", DTYPES)
def test_prod(rng, dtype):
    # Values near 1 keep the 203-term products finite.
    x = I(1 + 0.01 * rng.uniform(-1, 1, (6, 203)), dtype)
    tol = {"rtol": 2e-2, "atol": 0} if dtype in ("bfloat16", "float16") else {}
    both(lambda L, x: x.prod(1), x, **tol)
    both(lambda L, x: x.prod(0), x, **tol)
    both(lambda L, x: x.prod(), x, **tol)
    both(lambda L, x: x.prod(1), rows(rng, dtype, 1.5), what="with specials", **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_norms(rng, dtype):
    x = rows(rng, dtype)
    for ord in (1, 2, float("inf"), float("-inf"), 3, 0):
        for dim in ([1], [0], None):
            both(lambda L, x: L.linalg.vector_norm(x, ord, dim), x, what=f"ord {ord} dim {dim}",
                 rtol=1e-2 if dtype in ("bfloat16", "float16") else 1e-5)
