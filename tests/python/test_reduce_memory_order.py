"""Reductions of dense tensors in another memory order (channels-last, transposes, permutes):
Note [Sums in memory order] (sum, mean, amax, amin as column folds of the memory, the result
permuted back where the kept dims come out of order) and Note [Reduced dims in memory order]
(the general path's rows in memory order). Values, shapes, NaN and the error paths against
torch."""
import numpy as np
import pytest
import torch

import retorch
from custom_helpers import P, both

CL_DIMS = [(0, 2, 3), (2, 3), (1,), (0,), (3,), (1, 2, 3), (0, 1), (-1, -2), (0, 3), (1, 3)]


def channels_last(L, x):
    return x.contiguous(memory_format=L.channels_last)


def check_channels_last(x, ops):
    """Each op over each of CL_DIMS, with and without keepdim, of x laid out channels-last."""
    for dims in CL_DIMS:
        for keepdim in (False, True):
            for op in ops:
                both(lambda L, x: getattr(channels_last(L, x), op)(dims, keepdim=keepdim), x,
                     what=f"{op}{dims} keepdim={keepdim}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_sums_of_channels_last(rng, dtype):
    check_channels_last(P(rng, (3, 16, 5, 7), dtype), ("sum", "mean"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int32", "uint8"])
def test_amax_amin_of_channels_last(rng, dtype):
    check_channels_last(P(rng, (2, 24, 6, 5), dtype), ("amax", "amin"))


def test_wide_columns_and_row_chunks(rng):
    # More than 1024 rows per column (row chunks joined in order) and more than 512 columns.
    # Sums of 3200 normal values: torch's float sums are off by ~1e-5 (retorch's add in double).
    x = P(rng, (2, 600, 40, 40))
    for dims in [(0, 2, 3), (2, 3), (0,)]:
        both(lambda L, x: channels_last(L, x).sum(dims), x, what=f"sum{dims}", atol=1e-4)
        both(lambda L, x: channels_last(L, x).amax(dims), x, what=f"amax{dims}")
        both(lambda L, x: channels_last(L, x).mean(dims), x, what=f"mean{dims}")
    # against float64 sums: the double accumulation holds to float rounding
    a = np.random.default_rng(5).standard_normal((2, 600, 40, 40)).astype(np.float32)
    r = retorch.from_numpy(a).contiguous(memory_format=retorch.channels_last).sum((0, 2, 3))
    np.testing.assert_allclose(r.numpy(), a.astype(np.float64).sum((0, 2, 3)), rtol=1e-6,
                               atol=1e-5)


def test_transposed_and_permuted(rng):
    x = P(rng, (33, 70))
    for op in ("sum", "mean", "amax", "amin", "var", "std", "prod"):
        for dim in (0, 1, -1):
            both(lambda L, x: getattr(x.t(), op)(dim), x, what=f"t().{op}({dim})")
    y = P(rng, (4, 5, 6, 7))
    for dims in [(0,), (1, 3), (0, 2), (2, 3), (0, 1, 2)]:
        for op in ("sum", "amax", "var"):
            both(lambda L, y: getattr(y.permute(2, 0, 3, 1), op)(dims), y, what=f"{op}{dims}")
    both(lambda L, y: y.permute(3, 1, 0, 2).norm(dim=(1, 2)), y, what="norm")


def test_nan_and_specials_in_columns(rng):
    a = np.random.default_rng(3).standard_normal((2, 8, 4, 4)).astype(np.float32)
    a[1, 3, 2, 1] = np.nan
    a[0, 5, 0, 0] = np.inf
    a[0, 6, 1, 1] = -np.inf
    t = torch.from_numpy(a).contiguous(memory_format=torch.channels_last)
    r = retorch.from_numpy(a.copy()).contiguous(memory_format=retorch.channels_last)
    for dims in [(0, 2, 3), (2, 3), (0,)]:
        for op in ("sum", "amax", "amin", "mean"):
            np.testing.assert_array_equal(np.isnan(getattr(r, op)(dims).numpy()),
                                          np.isnan(getattr(t, op)(dims).numpy()), err_msg=op)
            np.testing.assert_allclose(getattr(r, op)(dims).numpy(),
                                       getattr(t, op)(dims).numpy(), rtol=1e-5, atol=1e-5,
                                       err_msg=f"{op}{dims}")


def test_empty_and_errors(rng):
    x = P(rng, (2, 0, 3, 3))
    both(lambda L, x: channels_last(L, x).sum((0, 2, 3)), x, what="empty sum")
    both(lambda L, x: channels_last(L, x).sum((2, 3)), x, what="empty sum 2")
    # No rows to fold (Note [Column folds]): sums of 0, means of NaN, amax an error.
    e = P(rng, (0, 4))
    for op in ("sum", "mean", "amax"):
        both(lambda L, e: getattr(e, op)(0), e, what=f"empty rows {op}")
    z = P(rng, (2, 3, 4, 5))
    both(lambda L, z: channels_last(L, z).sum((1, 1)), z, what="repeated dim")
    both(lambda L, z: channels_last(L, z).sum((0, 7)), z, what="bad dim")
    both(lambda L, z: channels_last(L, z).amax((2, 9)), z, what="bad dim amax")
