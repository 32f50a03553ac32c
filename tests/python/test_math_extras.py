"""python/retorch/_math_extras.py and the alias functions against torch: inverse hyperbolics
over wide ranges and specials, sign and exponent functions, splits, windows, histogram,
Cholesky solves, and torch's aliases as module functions."""
import warnings

import numpy as np
import pytest
import torch

import retorch
from test_functional_api import assert_same, plain

RNG = np.random.RandomState(5)
X = RNG.randn(4, 6).astype(np.float32)
WIDE = np.array([1.0, 1.0000001, 1.5, 10.0, 1e4, 3e8, 1e30, 3e38, np.inf, np.nan, 0.5, -2.0],
                np.float32)
SIGNED = np.array([0.0, -0.0, 1e-30, -1e-20, 0.3, -0.99, 0.999999, 5.0, -7e25, 3e38, -np.inf,
                   np.nan], np.float32)
UNIT = np.array([0.0, -0.0, 1e-8, -0.3, 0.5, 0.9999, -0.99999, 1.0, -1.0, 1.5, np.nan],
                np.float32)
SPD = (X[:, :4].T @ X[:, :4] + 4 * np.eye(4)).astype(np.float64)
L = np.linalg.cholesky(SPD)


def T(m, a, **kw):
    return m.tensor(a.copy(), **kw)


CASES = {
    "acosh": lambda m: m.acosh(T(m, WIDE)),
    "acosh f64": lambda m: m.acosh(T(m, WIDE.astype(np.float64))),
    "arccosh method": lambda m: T(m, WIDE).arccosh(),
    "asinh": lambda m: m.asinh(T(m, SIGNED)),
    "asinh f64": lambda m: m.asinh(T(m, SIGNED.astype(np.float64))),
    "atanh": lambda m: m.atanh(T(m, UNIT)),
    "atanh int": lambda m: m.atanh(m.tensor([0, 1, -1])),
    "asinh_": lambda m: T(m, SIGNED).asinh_(),
    "copysign": lambda m: m.copysign(T(m, SIGNED), T(m, SIGNED[::-1])),
    "copysign scalar": lambda m: m.copysign(T(m, X), -0.0),
    "copysign int": lambda m: m.copysign(m.tensor([3, -4]), m.tensor([-1.0, 2.0])),
    "float_power": lambda m: m.float_power(T(m, np.abs(X)), 1.5),
    "float_power tensor": lambda m: m.float_power(m.tensor([2, 3]), m.tensor([0.5, -1.0])),
    "floor_divide": lambda m: m.floor_divide(T(m, X), 0.3),
    "floor_divide int": lambda m: m.floor_divide(m.tensor([7, -7, 8]), m.tensor([2, 2, -3])),
    "ldexp": lambda m: m.ldexp(T(m, X), m.tensor([3, -2, 0, 1, 5, -10])),
    "frexp": lambda m: m.frexp(T(m, np.array([8.0, -0.75, 0.0, 1.0, 3.0, 1e-30, -5e30, 0.5,
                                              np.inf, -np.inf, 6.1e-5], np.float32))),
    "frexp f64": lambda m: m.frexp(T(m, X.astype(np.float64) * 1e5)),
    "isin": lambda m: m.isin(m.tensor([[1, 2], [3, 4]]), m.tensor([2, 3, 9])),
    "isin invert": lambda m: m.isin(m.tensor([1.5, 2.0]), m.tensor([2.0]), invert=True),
    "cumulative_trapezoid": lambda m: m.cumulative_trapezoid(T(m, X)),
    "cumulative_trapezoid dx dim": lambda m: m.cumulative_trapezoid(T(m, X), dx=0.5, dim=0),
    "cumulative_trapezoid x": lambda m: m.cumulative_trapezoid(T(m, X), T(m, np.cumsum(
        np.abs(X[0])))),
    "trapz": lambda m: m.trapz(T(m, X)),
    "hsplit": lambda m: m.hsplit(T(m, X), 3),
    "hsplit idx": lambda m: m.hsplit(T(m, X), [1, 4]),
    "vsplit": lambda m: m.vsplit(T(m, X), 2),
    "dsplit": lambda m: m.dsplit(T(m, X.reshape(2, 2, 6)), [2]),
    "positive": lambda m: m.positive(T(m, X)),
    "mvlgamma": lambda m: m.mvlgamma(T(m, np.abs(X) + 2), 3),
    "cholesky_solve": lambda m: m.cholesky_solve(T(m, X[:, :2].astype(np.float64)), T(m, L)),
    "cholesky_solve upper": lambda m: m.cholesky_solve(T(m, X[:, :2].astype(np.float64)),
                                                       T(m, L.T.copy()), upper=True),
    "cholesky_inverse": lambda m: m.cholesky_inverse(T(m, L)),
    "rsub": lambda m: m.rsub(T(m, X), 2.0, alpha=3),
    "scalar_tensor": lambda m: m.scalar_tensor(3.5),
    "histogram": lambda m: m.histogram(T(m, X), 5),
    "histogram range weight": lambda m: m.histogram(T(m, X), 4, range=(-1.0, 1.0),
                                                    weight=T(m, np.abs(X))),
    "histogram edges density": lambda m: m.histogram(T(m, X), T(m, np.array(
        [-2.0, -0.5, 0.0, 0.1, 3.0], np.float32)), density=True),
    "hann_window": lambda m: m.hann_window(8),
    "hann_window symmetric": lambda m: m.hann_window(7, periodic=False, dtype=m.float64),
    "hamming_window": lambda m: m.hamming_window(10),
    "blackman_window": lambda m: m.blackman_window(9, periodic=False),
    "bartlett_window": lambda m: m.bartlett_window(6),
    "kaiser_window": lambda m: m.kaiser_window(7, True, 5.0),
    "kaiser_window symmetric": lambda m: m.kaiser_window(6, False),
    "windows 1 and 0": lambda m: [m.hann_window(1), m.hamming_window(0)],
    "conj": lambda m: m.conj(T(m, X)).resolve_conj(),
    "square_": lambda m: T(m, X).square_(),
    "concat": lambda m: m.concat([T(m, X), T(m, X)], 1),
    "concatenate": lambda m: m.concatenate([T(m, X), T(m, X)]),
}
ALIASES = {
    "arccos": (X / 3,), "arcsin": (X / 3,), "arctan": (X,), "arctan2": (X, X[::-1]),
    "absolute": (X,), "divide": (X, 2.0), "multiply": (X, X), "negative": (X,),
    "not_equal": (X, X[::-1]), "greater": (X, 0.0), "greater_equal": (X, X[::-1]),
    "less": (X, 0.1), "less_equal": (X, X), "fix": (X * 3,), "subtract": (X, X[::-1]),
    "sgn": (X,), "ravel": (X.T,), "clip_": (X, -0.5, 0.5),
}


def _arg(m, a):
    return m.tensor(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = plain(CASES[case](torch))
        got = plain(CASES[case](retorch))
    assert_same(got, want, case)


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_alias_functions_match_torch(name):
    want = plain(getattr(torch, name)(*[_arg(torch, a) for a in ALIASES[name]]))
    got = plain(getattr(retorch, name)(*[_arg(retorch, a) for a in ALIASES[name]]))
    assert_same(got, want, name)
    assert_same(plain(retorch.moveaxis(retorch.tensor(X), 0, 1)),
                plain(torch.moveaxis(torch.tensor(X), 0, 1)), "moveaxis")


def test_inverse_hyperbolic_gradients_match_torch():
    grads = []
    for m in (torch, retorch):
        a = m.tensor([1.5, 2.0, 30.0], requires_grad=True)
        b = m.tensor([-3.0, 0.2, 1e3], requires_grad=True)
        c = m.tensor([-0.5, 0.1, 0.9], requires_grad=True)
        (m.acosh(a).sum() + m.asinh(b).sum() + m.atanh(c).sum()).backward()
        grads.append([a.grad.numpy(), b.grad.numpy(), c.grad.numpy()])
    for g, w in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_errors_like_torch():
    with pytest.raises(RuntimeError, match="vsplit requires a tensor with at least 2"):
        retorch.vsplit(retorch.zeros(4), 2)
    with pytest.raises(RuntimeError, match="not divisible by the split_size"):
        retorch.hsplit(retorch.zeros(2, 5), 2)
    with pytest.raises(RuntimeError, match="frexp\\(\\) only supports floating-point"):
        retorch.frexp(retorch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        retorch.positive(retorch.tensor([True]))


def test_mvlgamma_with_a_huge_p_fails_at_once_as_torch():
    """mvlgamma sums p terms side by side as torch's: a huge p fails allocating them (it looped
    over p in Python, for hours); a non-integer p is a TypeError."""
    for L in (retorch, torch):
        with pytest.raises(RuntimeError):
            L.mvlgamma(L.ones(2, 3), 10 ** 12)
        with pytest.raises(TypeError):
            L.mvlgamma(L.ones(2), 2.5)
