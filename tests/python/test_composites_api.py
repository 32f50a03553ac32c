"""python/retorch/_composites.py against torch: Tensor.unfold, reductions and products,
scatter forms, element tests, gcd/lcm, torch.linalg's composed functions, and the in-place
samplers (by their distributions, since random streams differ)."""
import math
import warnings

import numpy as np
import pytest
import torch

import retorch
from test_functional_api import assert_same, plain

RNG = np.random.RandomState(1)
X = RNG.randn(4, 6).astype(np.float32)
SQ = (RNG.randn(4, 4) + 3 * np.eye(4)).astype(np.float64)
V = RNG.randn(4).astype(np.float32)
W = RNG.rand(6).astype(np.float32)
INTS = np.array([12, -18, 0, 7, 0, 35], np.int64)
INTS2 = np.array([8, 12, 5, 0, 0, -14], np.int64)
NANS = np.array([1.0, np.nan, -0.0, 3.0, np.nan, -2.0], np.float32)
NANS2 = np.array([np.nan, 2.0, 0.0, np.nan, np.nan, -5.0], np.float32)


def T(m, a):
    return m.tensor(a.copy())


CASES = {
    "unfold": lambda m: T(m, X).unfold(1, 3, 2),
    "unfold dim0 step1": lambda m: T(m, X).unfold(0, 2, 1),
    "unfold 1d": lambda m: m.arange(10.0).unfold(0, 4, 3),
    "unfold of transposed": lambda m: T(m, X).t().unfold(0, 2, 2),
    "aminmax": lambda m: m.aminmax(T(m, X)),
    "aminmax dim": lambda m: m.aminmax(T(m, X), dim=1, keepdim=True),
    "argwhere": lambda m: m.argwhere(T(m, X) > 0.5),
    "msort": lambda m: m.msort(T(m, X)),
    "inner": lambda m: m.inner(T(m, X), T(m, X)),
    "inner 1d": lambda m: m.inner(T(m, V), T(m, V)),
    "vdot": lambda m: m.vdot(T(m, V), T(m, V[::-1])),
    "addmv": lambda m: m.addmv(T(m, V), T(m, X[:, :4]), T(m, V), beta=0.5, alpha=2),
    "addmv beta0": lambda m: m.addmv(m.full((4,), float("nan")), T(m, X[:, :4]), T(m, V),
                                     beta=0),
    "addr": lambda m: m.addr(T(m, X[:, :4]), T(m, V), T(m, V), alpha=3),
    "cov": lambda m: m.cov(T(m, X)),
    "cov 1d": lambda m: m.cov(T(m, X[0])),
    "cov correction0": lambda m: m.cov(T(m, X), correction=0),
    "cov aweights": lambda m: m.cov(T(m, X), aweights=T(m, W)),
    "cov fweights": lambda m: m.cov(T(m, X), fweights=m.tensor([1, 2, 1, 3, 1, 1])),
    "corrcoef": lambda m: m.corrcoef(T(m, X)),
    "diagflat": lambda m: m.diagflat(T(m, X[:2, :2]), 1),
    "isreal": lambda m: m.isreal(T(m, X)),
    "logdet": lambda m: m.logdet(T(m, SQ)),
    "logdet negative": lambda m: m.logdet(T(m, -SQ[:3, :3])),
    "matrix_power": lambda m: m.linalg.matrix_power(T(m, SQ), 3),
    "matrix_power 0": lambda m: m.linalg.matrix_power(T(m, SQ), 0),
    "matrix_power -2": lambda m: m.linalg.matrix_power(T(m, SQ), -2),
    "method matrix_power": lambda m: T(m, SQ).matrix_power(2),
    "pinv": lambda m: m.linalg.pinv(T(m, X)),
    "pinverse": lambda m: m.pinverse(T(m, X.T.copy())),
    "matrix_rank": lambda m: m.linalg.matrix_rank(T(m, np.outer(V, W))),
    "matrix_rank full": lambda m: m.linalg.matrix_rank(T(m, SQ)),
    "cond": lambda m: m.linalg.cond(T(m, SQ)),
    "cond fro": lambda m: m.linalg.cond(T(m, SQ), "fro"),
    "multi_dot": lambda m: m.linalg.multi_dot([T(m, V), T(m, X[:, :4]), T(m, SQ.astype(
        np.float32)), T(m, V)]),
    "vecdot": lambda m: m.linalg.vecdot(T(m, X), T(m, X[::-1])),
    "vander": lambda m: m.linalg.vander(T(m, V)),
    "vander N": lambda m: m.linalg.vander(m.tensor([1, 2, 3]), N=5),
    "tensor_split n": lambda m: m.tensor_split(m.arange(7), 3),
    "tensor_split idx": lambda m: m.tensor_split(T(m, X), [1, 4], dim=1),
    "narrow_copy": lambda m: m.narrow_copy(T(m, X), 1, 2, 3),
    "signbit": lambda m: m.signbit(T(m, NANS)),
    "signbit int": lambda m: m.signbit(T(m, INTS)),
    "fmax": lambda m: m.fmax(T(m, NANS), T(m, NANS2)),
    "fmin": lambda m: m.fmin(T(m, NANS), T(m, NANS2)),
    "gcd": lambda m: m.gcd(T(m, INTS), T(m, INTS2)),
    "gcd bcast": lambda m: m.gcd(T(m, INTS), m.tensor([6])),
    "lcm": lambda m: m.lcm(T(m, INTS), T(m, INTS2)),
    "renorm": lambda m: m.renorm(T(m, X), 2, 0, 1.5),
    "renorm p1 dim1": lambda m: m.renorm(T(m, X), 1, 1, 1.0),
    "select_scatter": lambda m: m.select_scatter(T(m, X), T(m, X[0] * 0 + 7), 0, 2),
    "slice_scatter": lambda m: m.slice_scatter(T(m, X), T(m, X[:, :2] * 0 + 5), 1, 1, 5, 2),
    "diagonal_scatter": lambda m: m.diagonal_scatter(T(m, X), T(m, V), 1),
    "linalg.diagonal": lambda m: m.linalg.diagonal(T(m, SQ), offset=1),
    "linalg.matmul": lambda m: m.linalg.matmul(T(m, X.T.copy()), T(m, X)),
    "inv_ex": lambda m: m.linalg.inv_ex(T(m, SQ)),
    "inv_ex singular batch": lambda m: m.linalg.inv_ex(T(m, np.stack([SQ, SQ * 0])))[1],
    "cholesky_ex": lambda m: m.linalg.cholesky_ex(T(m, SQ @ SQ.T)),
    "cholesky_ex upper": lambda m: m.linalg.cholesky_ex(T(m, SQ @ SQ.T), upper=True),
    "cholesky_ex fails": lambda m: m.linalg.cholesky_ex(T(m, -np.eye(3)))[1],
    "solve_ex": lambda m: m.linalg.solve_ex(T(m, SQ), T(m, SQ[:, :2].copy())),
    "lstsq": lambda m: m.linalg.lstsq(T(m, X.T.copy()), T(m, X[:2].T.copy()))[::2],
    "lstsq vector": lambda m: m.linalg.lstsq(T(m, SQ), T(m, SQ[0].copy())).solution,
    "tensorinv": lambda m: m.linalg.tensorinv(T(m, SQ.reshape(4, 2, 2)), ind=1),
    "tensorsolve": lambda m: m.linalg.tensorsolve(T(m, SQ.reshape(2, 2, 4)), T(m, V.reshape(
        2, 2).astype(np.float64))),
    "fill_diagonal_": lambda m: T(m, X).fill_diagonal_(9.0),
    "fill_diagonal_ wrap": lambda m: m.zeros(9, 3).fill_diagonal_(1.0, wrap=True),
    "fill_diagonal_ 3d": lambda m: m.zeros(3, 3, 3).fill_diagonal_(2.0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = plain(CASES[case](torch))
    got = plain(CASES[case](retorch))
    assert_same(got, want, case)


def test_unfold_is_a_view_and_has_gradients():
    x = retorch.arange(8.0)
    u = x.unfold(0, 3, 2)
    x[2] = 100.0
    assert u[0, 2].item() == 100.0 and u[1, 0].item() == 100.0
    for lib in (torch, retorch):
        a = lib.tensor(X.copy(), requires_grad=True)
        (a.unfold(1, 3, 2) * lib.tensor(np.arange(6.0).reshape(1, 2, 3).astype(np.float32))
         ).sum().backward()
        if lib is torch:
            want = a.grad.numpy()
        else:
            np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-6)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 1 is 6"):
        retorch.tensor(X).unfold(1, 7, 1)


def test_in_place_samplers_follow_their_distributions():
    retorch.manual_seed(3)
    n = 40000
    e = retorch.empty(n).exponential_(2.0)
    assert abs(e.mean().item() - 0.5) < 0.02 and e.min().item() >= 0
    c = retorch.empty(n).cauchy_(1.0, 2.0)
    assert abs(c.median().item() - 1.0) < 0.1  # the median, a Cauchy has no mean
    ln = retorch.empty(n).log_normal_(0.0, 0.5)
    assert abs(ln.log().mean().item()) < 0.02 and abs(ln.log().std().item() - 0.5) < 0.02
    g = retorch.empty(n).geometric_(0.25)
    assert g.min().item() >= 1 and abs(g.mean().item() - 4.0) < 0.1
    b = retorch.empty(n).bernoulli_(0.3)
    assert set(np.unique(b.numpy()).tolist()) <= {0.0, 1.0} and abs(b.mean().item() - 0.3) < 0.02
    bp = retorch.empty(2, n).bernoulli_(retorch.tensor([[0.1], [0.9]]))
    assert abs(bp[0].mean().item() - 0.1) < 0.02 and abs(bp[1].mean().item() - 0.9) < 0.02
    gen = retorch.Generator().manual_seed(9)
    a = retorch.empty(5).exponential_(generator=gen)
    gen.manual_seed(9)
    assert retorch.empty(5).exponential_(generator=gen).tolist() == a.tolist()


def test_named_aminmax_and_errors():
    r = retorch.aminmax(retorch.tensor(X), dim=0)
    assert type(r).__name__ == "aminmax" and r._fields == ("min", "max")
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        retorch.vdot(retorch.tensor(X), retorch.tensor(X))
    with pytest.raises(RuntimeError, match="matrix_power: A must be batches of square"):
        retorch.linalg.matrix_power(retorch.tensor(X), 2)
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): expected at least 2 tensors"):
        retorch.linalg.multi_dot([retorch.tensor(X)])
    assert math.isnan(retorch.logdet(retorch.tensor(-SQ[:3, :3])).item())
