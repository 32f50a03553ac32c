"""Oracle tests for scatter_reduce (sum, prod, mean, amax, amin; include_self both ways): values
over dtypes, dims and layouts, in-place and out= forms, gradients against torch (ties, zeros in
prod, include_self=False), a src larger than index, float64 gradcheck, errors."""
import numpy as np
import pytest
import torch

import retorch
from custom_helpers import I, P, both, gradcheck, grads, raises_like_torch

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_values": ["scatter_reduce.two"],
    "test_inplace_and_out": ["scatter_reduce.two"],
    "test_grads": ["scatter_reduce.two"],
}

REDUCES = ("sum", "prod", "mean", "amax", "amin")


def index_for(rng, shape, dim, size):
    """Random positions in [0, size) of the given shape: duplicates and untouched slots both."""
    return I(rng.integers(0, size, shape))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "uint8", "bool"])
def test_values(rng, dtype):
    for dim, (self_shape, idx_shape, src_shape) in [
            (0, ((5,), (8,), (8,))),
            (0, ((4, 3), (6, 3), (7, 3))),
            (1, ((3, 4), (3, 9), (3, 9))),
            (-1, ((2, 3, 5), (2, 2, 7), (2, 3, 8))),
            (1, ((2, 3, 5), (1, 4, 2), (2, 5, 3)))]:
        x = P(rng, self_shape, dtype)
        s = P(rng, src_shape, dtype)
        idx = index_for(rng, idx_shape, dim, self_shape[dim])
        for reduce in REDUCES:
            if reduce == "mean" and dtype == "bool":
                continue
            for inc in (True, False):
                both(lambda L, x, i, s: x.scatter_reduce(dim, i, s, reduce, include_self=inc),
                     x, idx, s, what=f"{reduce} include_self={inc} dim={dim} {self_shape}")


def test_layouts_and_specials(rng):
    # Non-contiguous self and src; NaN propagates through amax/amin; integer mean rounds down.
    for layout in ("transposed", "sliced"):
        x = P(rng, (4, 4), "float32", layout)
        s = P(rng, (4, 4), "float32", layout)
        idx = index_for(rng, (4, 4), 1, 4)
        for reduce in REDUCES:
            both(lambda L, x, i, s: L.scatter_reduce(x, 1, i, s, reduce), x, idx, s)
    x = I([1.0, 2.0, 3.0], "float32")
    s = I([float("nan"), 5.0, 1.0, float("nan")], "float32")
    idx = I([0, 0, 1, 2])
    for reduce in ("amax", "amin"):
        for inc in (True, False):
            both(lambda L, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=inc),
                 x, idx, s)
    x = I([-5, 7, 3, -1])
    s = I([2, 2, -3, 4, -4])
    idx = I([0, 0, 1, 3, 3])
    for inc in (True, False):
        both(lambda L, x, i, s: x.scatter_reduce(0, i, s, "mean", include_self=inc), x, idx, s)
    # Empty index: self comes back unchanged.
    both(lambda L, x, i, s: x.scatter_reduce(0, i, s, "prod"), x, I(np.zeros(0, np.int64)), s)


def test_inplace_and_out(rng):
    for reduce in REDUCES:
        x = P(rng, (3, 5), "float64")
        s = P(rng, (3, 6), "float64")
        idx = index_for(rng, (3, 6), 1, 5)
        both(lambda L, x, i, s: x.clone().scatter_reduce_(1, i, s, reduce, include_self=False),
             x, idx, s)
        both(lambda L, x, i, s: (lambda o: (L.scatter_reduce(x, 1, i, s, reduce, out=o), o)[1])(
            L.zeros(3, 5, dtype=L.float64)), x, idx, s, what="out=")
        # In place on a transposed view writes through to its base.
        both(lambda L, x, i, s: (lambda b: (b.t().scatter_reduce_(0, i.t(), s.t(), reduce),
                                            b)[1])(x.clone().t().contiguous()), x, idx, s,
             what="in place on a view")


def test_grads(rng):
    for reduce in REDUCES:
        for inc in (True, False):
            for dim, (xs, ixs, ss) in [(0, ((5,), (9,), (9,))), (1, ((3, 4), (3, 6), (3, 6))),
                                       (0, ((4, 3), (5, 2), (5, 2)))]:
                # Distinct values: amax/amin have no accidental ties between self and src.
                x = P(rng, xs, "float64", distinct=True)
                s = P(rng, ss, "float64", distinct=True)
                idx = index_for(rng, ixs, dim, xs[dim])
                grads(lambda L, x, i, s: x.scatter_reduce(dim, i, s, reduce, include_self=inc),
                      x, idx, s, what=f"{reduce} include_self={inc}")
    # Ties in amax/amin share the gradient; zeros in prod (one and two per slot, and in self).
    x = I([1.0, 0.0, 2.0, 3.0], "float64")
    s = I([3.0, 3.0, 0.0, 0.0, 4.0, 0.0, 5.0, 2.0], "float64")
    idx = I([0, 0, 1, 1, 2, 2, 3, 0])
    for reduce in REDUCES:
        for inc in (True, False):
            grads(lambda L, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=inc),
                  x, idx, s, what=f"ties/zeros {reduce} include_self={inc}")
    for reduce in ("sum", "mean", "prod", "amax"):
        gradcheck(lambda L, x, i, s: x.scatter_reduce(1, i, s, reduce),
                  P(rng, (3, 4), "float64", distinct=True), index_for(rng, (3, 5), 1, 4),
                  P(rng, (3, 5), "float64", distinct=True))


def test_src_larger_than_index(rng):
    # torch 1.13 refuses to differentiate this case; retorch gives src's gradient with zeros
    # where index does not reach, equal to torch's gradient of the src cut to index's shape.
    x = P(rng, (3, 4), "float64", distinct=True)
    s = P(rng, (5, 6), "float64", distinct=True)
    idx = index_for(rng, (3, 4), 0, 3)
    for reduce in REDUCES:
        tx, ts = x.t.clone().requires_grad_(), s.t.clone().requires_grad_()
        tcut = ts[:3, :4]
        torch.autograd.backward(tx.scatter_reduce(0, idx.t, tcut, reduce),
                                torch.ones(3, 4, dtype=torch.float64))
        rx, rs = x.r.clone().requires_grad_(), s.r.clone().requires_grad_()
        retorch.autograd.backward(rx.scatter_reduce(0, idx.r, rs, reduce),
                                  retorch.ones(3, 4, dtype=retorch.float64))
        np.testing.assert_allclose(rs.grad.numpy(), ts.grad.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_errors(rng):
    x = P(rng, (3, 4), "float32")
    s = P(rng, (3, 4), "float32")
    idx = index_for(rng, (3, 4), 1, 4)
    raises_like_torch(lambda L, x, i, s: x.scatter_reduce(1, i, s, "max"), x, idx, s)
    raises_like_torch(lambda L, x, i, s: x.scatter_reduce(1, i, s.double(), "sum"), x, idx, s)
    raises_like_torch(lambda L, x, i, s: x.scatter_reduce(1, i.int(), s, "sum"), x, idx, s)
    raises_like_torch(lambda L, x, s: x.scatter_reduce(1, L.tensor([[7]]), s, "amax"), x, s)
    raises_like_torch(lambda L, x, i, s: x.scatter_reduce(2, i, s, "sum"), x, idx, s)
    raises_like_torch(lambda L, x, s: x.scatter_reduce(0, L.zeros(4, 5, dtype=L.int64), s,
                                                       "sum"), x, s)
    raises_like_torch(lambda L: L.ones(3, dtype=L.bool).scatter_reduce(
        0, L.tensor([0]), L.ones(1, dtype=L.bool), "mean"))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, "
                                           "amax or amin"):
        x.r.scatter_reduce(1, idx.r, s.r, "max")
