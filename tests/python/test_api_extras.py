"""python/retorch/_api_extras.py, _api_runtime.py and _api_math.py against torch: the in-place
method forms (identity, values, gradients, errors), sum_to_size and the unsafe splits,
apply_/map_/map2_, the layout flags, nextafter, angle, range, vander, fill, asarray,
frombuffer, the runtime switches, the *_copy views, the norms, matrix_exp and gradient."""
import array
import warnings

import numpy as np
import pytest
import torch

import retorch
from test_functional_api import assert_same, plain

RNG = np.random.RandomState(11)
X = RNG.randn(3, 4).astype(np.float32)
A = RNG.randn(3, 5).astype(np.float32)
B = RNG.randn(5, 4).astype(np.float32)
V3, V4 = RNG.randn(3).astype(np.float32), RNG.randn(4).astype(np.float32)
B1, B2 = RNG.randn(2, 3, 5).astype(np.float32), RNG.randn(2, 5, 4).astype(np.float32)
INTS = np.array([12, -18, 0, 7], np.int64)
INTS2 = np.array([8, 12, 5, -21], np.int64)
SPECIAL = np.array([1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, 1e-45, 2.5],
                   np.float32)
PTS = RNG.randn(40, 2).astype(np.float32)
PTS3 = RNG.randn(20, 3).astype(np.float32)
W = RNG.rand(40).astype(np.float32)
TOWARD = np.array([2.0, -2.0, 1.0, -1.0, 0.0, np.inf, 1.0, np.inf, 0.0, 2.5], np.float32)


def T(m, a, **kw):
    return m.tensor(np.array(a), **kw)


class Py:
    """A Python callable argument (apply_'s), passed as is rather than built per library."""

    def __init__(self, fn):
        self.fn = fn


def _inplace(method, *args, make=lambda m: T(m, X), **kwargs):
    """An in-place case: returns (result, result is self). Callable args build a library's
    tensors; Py(...) ones are passed through."""
    def case(m):
        t = make(m)
        values = [a.fn if isinstance(a, Py) else a(m) if callable(a) else a for a in args]
        out = getattr(t, method)(*values, **kwargs)
        return [out, out is t]
    return case


CASES = {
    "addmm_": _inplace("addmm_", lambda m: T(m, A), lambda m: T(m, B), beta=0.5, alpha=2),
    "addbmm_": _inplace("addbmm_", lambda m: T(m, B1), lambda m: T(m, B2), alpha=-1),
    "baddbmm_": _inplace("baddbmm_", lambda m: T(m, B1), lambda m: T(m, B2), beta=2,
                         make=lambda m: T(m, np.stack([X, X]))),
    "addmv_": _inplace("addmv_", lambda m: T(m, B.T), lambda m: T(m, B[:, 0]), beta=3,
                       make=lambda m: T(m, V4)),
    "addmv_ beta 0": _inplace("addmv_", lambda m: T(m, B.T), lambda m: T(m, B[:, 0]), beta=0,
                              make=lambda m: m.full([4], float("nan"))),
    "addr_": _inplace("addr_", lambda m: T(m, V3), lambda m: T(m, V4), alpha=0.5),
    "addr_ int": _inplace("addr_", lambda m: m.tensor([1, 2, 3]), lambda m: m.tensor([4, 5]),
                          make=lambda m: m.ones(3, 2, dtype=m.int64)),
    "cumsum_": _inplace("cumsum_", 1),
    "cumsum_ int8 wraps": _inplace("cumsum_", 0,
                                   make=lambda m: m.tensor([100, 100, 100], dtype=m.int8)),
    "cumprod_": _inplace("cumprod_", 0),
    "cumprod_ int": _inplace("cumprod_", 0, make=lambda m: T(m, INTS)),
    "deg2rad_": _inplace("deg2rad_"),
    "rad2deg_": _inplace("rad2deg_"),
    "gcd_": _inplace("gcd_", lambda m: T(m, INTS2), make=lambda m: T(m, INTS)),
    "lcm_": _inplace("lcm_", lambda m: T(m, INTS2), make=lambda m: T(m, INTS)),
    "lcm_ int32": _inplace("lcm_", lambda m: m.tensor([4, 6]),
                           make=lambda m: m.tensor([3, 4], dtype=m.int32)),
    "ldexp_": _inplace("ldexp_", lambda m: m.tensor([3, -2, 0, 5])),
    "ldexp_ half": _inplace("ldexp_", lambda m: m.tensor([1, 2]),
                            make=lambda m: m.tensor([1.5, -2.0], dtype=m.float16)),
    "float_power_": _inplace("float_power_", 1.5,
                             make=lambda m: T(m, np.abs(X).astype(np.float64))),
    "float_power_ tensor": _inplace("float_power_", lambda m: m.tensor([2, 3]),
                                    make=lambda m: m.tensor([1.5, 2.0], dtype=m.float64)),
    "floor_divide_": _inplace("floor_divide_", 0.3),
    "floor_divide_ int": _inplace("floor_divide_", lambda m: m.tensor([2, 2, -3, 4]),
                                  make=lambda m: T(m, INTS)),
    "renorm_": _inplace("renorm_", 2, 0, 1.0),
    "renorm_ p1 dim1": _inplace("renorm_", 1, 1, 0.5),
    "nextafter_": _inplace("nextafter_", lambda m: T(m, TOWARD), make=lambda m: T(m, SPECIAL)),
    "swapaxes_": lambda m: (lambda t: [t.swapaxes_(0, 1) is t, t.shape, t.stride(),
                                       t.contiguous()])(T(m, X)),
    "swapdims_": lambda m: (lambda t: [t.swapdims_(1, 0) is t, t.contiguous()])(T(m, X)),
    "sum_to_size": lambda m: T(m, X).sum_to_size(1, 4),
    "sum_to_size lead": lambda m: T(m, X).sum_to_size([4]),
    "sum_to_size column": lambda m: T(m, X).sum_to_size(3, 1),
    "sum_to_size all": lambda m: T(m, X).sum_to_size(1),
    "sum_to_size bool": lambda m: m.tensor([True, True, False]).sum_to_size(1),
    "sum_to_size same is self": lambda m: (lambda t: t.sum_to_size(3, 4) is t)(T(m, X)),
    "new_empty_strided": lambda m: (lambda t: [t.shape, t.stride(), str(t.dtype)])(
        T(m, X).new_empty_strided((2, 3), (1, 2))),
    "new_empty_strided dtype": lambda m: str(T(m, X).new_empty_strided(
        [2], [1], dtype=m.float64).dtype),
    "unsafe_chunk": lambda m: list(T(m, X).unsafe_chunk(3, 1)),
    "unsafe_split": lambda m: list(T(m, X).unsafe_split(2, 1)),
    "unsafe_split_with_sizes": lambda m: list(T(m, X).unsafe_split_with_sizes([1, 3], 1)),
    "torch.unsafe_split": lambda m: list(m.unsafe_split(T(m, X), 2)),
    "torch.unsafe_chunk": lambda m: list(m.unsafe_chunk(T(m, X), 2, dim=1)),
    "torch.unsafe_split_with_sizes": lambda m: list(m.unsafe_split_with_sizes(T(m, X), [2, 1])),
    "apply_": _inplace("apply_", Py(lambda v: v * 2 + 1)),
    "apply_ int truncates": _inplace("apply_", Py(lambda v: v / 2), make=lambda m: m.arange(5)),
    "apply_ bool": _inplace("apply_", Py(lambda v: not v),
                            make=lambda m: m.tensor([True, False])),
    "apply_ float overflow": _inplace("apply_", Py(lambda v: 1e300), make=lambda m: m.ones(2)),
    "apply_ transposed": lambda m: (lambda t: [t.apply_(lambda v: v + 10) is t, t.stride(),
                                               t.contiguous()])(T(m, X).t()),
    "map_": _inplace("map_", lambda m: T(m, V4), Py(lambda a, b: a * b - 1)),
    "map_ column": _inplace("map_", lambda m: T(m, V3.reshape(3, 1)),
                            Py(lambda a, b: max(a, b))),
    "map2_": _inplace("map2_", lambda m: T(m, V4), lambda m: T(m, V3.reshape(3, 1)),
                      Py(lambda a, b, c: a + b * c)),
    "map_ long": _inplace("map_", lambda m: m.ones(3, dtype=m.int64), Py(lambda a, b: a * 1.7),
                          make=lambda m: m.arange(3)),
    "flags": lambda m: (lambda t: [t.is_meta, t.is_inference(), t.is_quantized, t.is_sparse,
                                   t.is_sparse_csr, repr(t.layout), str(t.layout),
                                   t.layout == m.strided])(T(m, X)),
    "nextafter": lambda m: m.nextafter(T(m, SPECIAL), T(m, TOWARD)),
    "nextafter f64": lambda m: T(m, SPECIAL.astype(np.float64)).nextafter(
        T(m, TOWARD.astype(np.float64))),
    "nextafter promotes": lambda m: m.nextafter(T(m, SPECIAL), T(m, TOWARD.astype(np.float64))),
    "nextafter broadcast": lambda m: m.nextafter(T(m, V3.reshape(3, 1)), T(m, V4)),
    "nextafter bfloat16": lambda m: m.nextafter(m.tensor([1.0, -3.0, 0.0], dtype=m.bfloat16),
                                                m.tensor([2.0, 0.0, -1.0], dtype=m.bfloat16)),
    "angle": lambda m: m.angle(T(m, SPECIAL)),
    "angle method f64": lambda m: T(m, SPECIAL.astype(np.float64)).angle(),
    "angle int": lambda m: m.angle(m.tensor([1, -2, 0], dtype=m.int8)),
    "real": lambda m: (lambda t: [m.real(t) is t, t.real is t])(T(m, X)),
    "resize_as_ shrink": lambda m: (lambda t: [t.resize_as_(m.zeros(2, 2)) is t, t])(
        m.arange(6.0)),
    "resize_as_ keeps prefix": lambda m: (lambda t: [t.resize_as_(m.zeros(2, 3)).shape,
                                                     t.reshape(-1)[:4]])(m.arange(4.0)),
    "resize_as_ same": lambda m: (lambda t: [t.resize_as_(m.zeros(3, 4)) is t, t])(T(m, X)),
    "as_strided_": lambda m: (lambda t: [t.as_strided_((2, 2), (1, 2), 1) is t, t,
                                         t.storage_offset(), t.stride()])(m.arange(6.0)),
    "torch.range": lambda m: m.range(1, 4),
    "torch.range step": lambda m: m.range(0, 1, 0.25),
    "torch.range inexact": lambda m: m.range(0, 1, 0.3),
    "torch.range tenths": lambda m: m.range(0, 1, 0.1),
    "torch.range down": lambda m: m.range(4, 1, -1),
    "torch.range long": lambda m: m.range(0, 10, 3, dtype=m.int64),
    "torch.range long truncates": lambda m: m.range(0.5, 3.7, 1, dtype=m.int64),
    "torch.range long down": lambda m: m.range(0, -3, -2, dtype=m.int64),
    "torch.range f64": lambda m: m.range(-1.5, 2.0, 0.5, dtype=m.float64),
    "torch.range one": lambda m: m.range(1, 1),
    "vander": lambda m: m.vander(m.tensor([1, 2, 3])),
    "vander float increasing": lambda m: m.vander(T(m, V3), N=4, increasing=True),
    "vander N 0": lambda m: m.vander(m.tensor([1, 2, 3]), N=0),
    "vander N 1": lambda m: m.vander(T(m, V3), N=1),
    "vander bool": lambda m: m.vander(m.tensor([True, False])),
    "vander int8": lambda m: m.vander(m.tensor([1, 2, -3], dtype=m.int8)),
    "ger": lambda m: m.ger(m.tensor([1, 2]), m.tensor([3.0, 4.0])),
    "fill": lambda m: (lambda t: [m.fill(t, 2.5), t])(T(m, X)),
    "fill long": lambda m: m.fill(m.ones(3, dtype=m.int64), 2.7),
    "fill tensor value": lambda m: m.fill(T(m, X), m.tensor(5)),
    "fill bool": lambda m: m.fill(m.zeros(2, dtype=m.bool), 2),
    "detach_": lambda m: (lambda t: [m.detach_(t) is t, t.requires_grad, t.grad_fn is None])(
        m.ones(2, requires_grad=True) * 2),
    "acosh_": lambda m: (lambda t: [m.acosh_(t) is t, t])(T(m, np.abs(X) + 1)),
    "asinh_": lambda m: (lambda t: [m.asinh_(t) is t, t])(T(m, X)),
    "atanh_": lambda m: m.atanh_(T(m, X / 3)),
    "arccosh_": lambda m: m.arccosh_(T(m, np.abs(X) + 1)),
    "arcsinh_": lambda m: m.arcsinh_(T(m, X)),
    "arctanh_": lambda m: m.arctanh_(T(m, X / 3)),
    "torch.deg2rad_": lambda m: m.deg2rad_(T(m, X)),
    "torch.rad2deg_": lambda m: m.rad2deg_(T(m, X)),
    "torch.gcd_": lambda m: m.gcd_(T(m, INTS), T(m, INTS2)),
    "torch.lcm_": lambda m: m.lcm_(T(m, INTS), T(m, INTS2)),
    "torch.ldexp_": lambda m: m.ldexp_(T(m, X), m.tensor([1, -1, 2, 0])),
    "typename": lambda m: [m.typename(m.ones(2)), m.typename(m.ones(2, dtype=m.int64)),
                           m.typename(3), m.typename(np.ones(2)),
                           m.typename(warnings.catch_warnings), m.typename("s")],
    "is_storage": lambda m: [m.is_storage(m.ones(2)), m.is_storage(3)],
    "alias_copy": lambda m: m.alias_copy(T(m, X)),
    "as_strided_copy": lambda m: m.as_strided_copy(T(m, X), (2, 2), (1, 4), 1),
    "detach_copy": lambda m: m.detach_copy(T(m, X)),
    "diagonal_copy": lambda m: m.diagonal_copy(T(m, X), 1),
    "diagonal_copy dims": lambda m: m.diagonal_copy(T(m, X), offset=-1, dim1=1, dim2=0),
    "expand_copy": lambda m: m.expand_copy(T(m, V4), [3, 4]),
    "permute_copy": lambda m: (lambda t: [t, t.stride()])(m.permute_copy(T(m, X), (1, 0))),
    "select_copy": lambda m: m.select_copy(T(m, X), 1, -1),
    "slice_copy": lambda m: m.slice_copy(T(m, X), 1, 1, 4, 2),
    "slice_copy clamps": lambda m: m.slice_copy(T(m, X), 0, -5, 100, 1),
    "split_copy": lambda m: m.split_copy(T(m, X), 3, 1),
    "split_with_sizes_copy": lambda m: m.split_with_sizes_copy(T(m, X), [1, 2], 0),
    "squeeze_copy": lambda m: m.squeeze_copy(T(m, X.reshape(1, 3, 1, 4))),
    "squeeze_copy dim": lambda m: m.squeeze_copy(T(m, X.reshape(1, 3, 1, 4)), 2),
    "t_copy": lambda m: (lambda t: [t, t.stride()])(m.t_copy(T(m, X))),
    "transpose_copy": lambda m: m.transpose_copy(T(m, X), 0, 1),
    "unbind_copy": lambda m: m.unbind_copy(T(m, X), 1),
    "unfold_copy": lambda m: m.unfold_copy(m.arange(5.0), 0, 2, 1),
    "unsqueeze_copy": lambda m: m.unsqueeze_copy(T(m, X), -1),
    "view_copy": lambda m: m.view_copy(T(m, X), [4, 3]),
    "view_copy dtype": lambda m: m.view_copy(T(m, X), m.int32),
    "nuclear_norm": lambda m: m.nuclear_norm(T(m, X)),
    "nuclear_norm keepdim": lambda m: m.nuclear_norm(T(m, X), keepdim=True),
    "nuclear_norm dim": lambda m: m.nuclear_norm(T(m, np.stack([X, 2 * X])), dim=(1, 2)),
    "frobenius_norm": lambda m: m.frobenius_norm(T(m, X)),
    "frobenius_norm 3d": lambda m: m.frobenius_norm(T(m, np.stack([X, X]))),
    "frobenius_norm dim": lambda m: m.frobenius_norm(T(m, X), dim=1),
    "frobenius_norm dims keepdim": lambda m: m.frobenius_norm(T(m, X), dim=(0, 1), keepdim=True),
    "gradient": lambda m: m.gradient(m.tensor([1.0, 4.0, 9.0, 16.0, 25.0])),
    "gradient spacing": lambda m: m.gradient(T(m, X), spacing=2.0),
    "gradient per dim": lambda m: m.gradient(T(m, X), spacing=[2.0, 0.5]),
    "gradient edge 2": lambda m: m.gradient(T(m, X), edge_order=2),
    "gradient dim": lambda m: m.gradient(T(m, X), dim=1, edge_order=2),
    "gradient dim list": lambda m: m.gradient(T(m, X), spacing=[3.0], dim=[-1]),
    "gradient int": lambda m: m.gradient(m.tensor([1, 4, 9, 16])),
    "gradient int spacing": lambda m: m.gradient(m.tensor([1, 4, 9, 16]), spacing=2),
    "gradient 0-d spacing": lambda m: m.gradient(T(m, X), spacing=m.tensor(2.0)),
    "gradient coordinates": lambda m: m.gradient(m.tensor([1.0, 4.0, 9.0, 16.0]),
                                                 spacing=[m.tensor([0.0, 1.0, 3.0, 4.0])]),
    "gradient coordinates edge 2": lambda m: m.gradient(
        T(m, X), spacing=(m.tensor([0.0, 0.5, 2.0]), m.tensor([0.0, 1.0, 1.5, 4.0])),
        edge_order=2),
    "gradient 0-d": lambda m: m.gradient(m.tensor(2.0)),
    "histogramdd": lambda m: m.histogramdd(T(m, PTS), bins=[3, 4]),
    "histogramdd weight": lambda m: m.histogramdd(T(m, PTS), bins=3, weight=T(m, W)),
    "histogramdd range density": lambda m: m.histogramdd(
        T(m, PTS), bins=(2, 3), range=[-1.0, 1.0, 0.0, 2.0], density=True),
    "histogramdd edges": lambda m: m.histogramdd(
        T(m, PTS), bins=[m.tensor([-3.0, 0.0, 0.5, 3.0]), m.tensor([-1.0, 1.0, 2.0])]),
    "histogramdd batch 3-d": lambda m: m.histogramdd(T(m, PTS3.reshape(2, 10, 3)), bins=2),
    "histogramdd one value": lambda m: m.histogramdd(m.zeros(4, 1), bins=2),
    "histogramdd empty": lambda m: m.histogramdd(m.zeros(0, 2), bins=2),
    "histogramdd f64 right edge": lambda m: m.histogramdd(
        m.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]], dtype=m.float64), bins=3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.range's deprecation
        want = plain(CASES[case](torch))
        got = plain(CASES[case](retorch))
    assert_same(got, want, case)


def test_range_warns_like_torch():
    for m in (torch, retorch):
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            m.range(0, 2)


def _grads(m, fn, *arrays):
    """The gradients of a weighted sum of squares of fn's outputs; fn may be a (torch form,
    retorch form) pair where torch's in-place op has no derivative."""
    leaves = [m.tensor(np.array(a), requires_grad=True) for a in arrays]
    if isinstance(fn, tuple):
        fn = fn[0] if m is torch else fn[1]
    out = fn(m, *leaves)
    out = [out] if isinstance(out, m.Tensor) else list(out)
    sum(((o * (i + 1)) ** 2).sum() for i, o in enumerate(out)).backward()
    return [leaf.grad.numpy() for leaf in leaves]


GRADS = {
    "addmm_": (lambda m, s, a, b: (s * 1).addmm_(a, b, beta=0.5, alpha=2), X, A, B),
    "baddbmm_": (lambda m, s, a, b: (s * 1).baddbmm_(a, b, alpha=3), np.stack([X, X]), B1, B2),
    "addbmm_": (lambda m, s, a, b: (s * 1).addbmm_(a, b), X, B1, B2),
    "addmv_": (lambda m, s, a, v: (s * 1).addmv_(a, v, beta=2), V3, A, B[:, 0]),
    "addr_": (lambda m, s, a, b: (s * 1).addr_(a, b), X, V3, V4),
    "cumsum_": (lambda m, s: (s * 1).cumsum_(1), X),
    "cumprod_": (lambda m, s: (s * 1).cumprod_(0), X),
    "deg2rad_": (lambda m, s: (s * 1).deg2rad_(), X),
    "ldexp_": ((lambda m, s: m.ldexp(s, m.tensor([1, 2, 0, -1])),
                lambda m, s: (s * 1).ldexp_(m.tensor([1, 2, 0, -1]))), X),
    "float_power_": (lambda m, s: (s * 1).float_power_(2.5), np.abs(X).astype(np.float64)),
    "renorm_": (lambda m, s: (s * 1).renorm_(2, 1, 0.8), X),
    "asinh_": ((lambda m, s: m.asinh(s), lambda m, s: m.asinh_(s * 1)), X),
    "sum_to_size": (lambda m, s: s.sum_to_size(3, 1), X),
    "angle": (lambda m, s: m.angle(s), SPECIAL),
    "fill": (lambda m, s, v: m.fill(s, v), X, np.array(2.0, np.float32)),
    "vander": ((lambda m, s: m.linalg.vander(s, N=4).flip(1), lambda m, s: m.vander(s, N=4)),
               V3),
    "view copies": (lambda m, s: [m.t_copy(s), m.select_copy(s, 0, 1), m.slice_copy(s, 1, 0, 4, 2),
                                  m.as_strided_copy(s, (2, 2), (1, 4), 1),
                                  *m.split_copy(s, 2, 1), *m.unbind_copy(s),
                                  m.diagonal_copy(s), m.expand_copy(s[:1], [2, 4])], X),
    "nuclear_norm": (lambda m, s: m.nuclear_norm(s), X.astype(np.float64)),
    "frobenius_norm": (lambda m, s: m.frobenius_norm(s, dim=1), X),
    "gradient": (lambda m, s: m.gradient(s, edge_order=2), X),
    "gradient coordinates": (lambda m, s, c: m.gradient(s, spacing=[c], dim=1), X,
                             np.array([0.0, 0.5, 2.0, 2.5], np.float32)),
    "matrix_exp": (lambda m, s: m.matrix_exp(s), X[:, :3].astype(np.float64)),
}


@pytest.mark.parametrize("case", sorted(GRADS))
def test_gradients_match_torch(case):
    fn, *arrays = GRADS[case]
    want = _grads(torch, fn, *arrays)
    got = _grads(retorch, fn, *arrays)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=case)


def test_matrix_exp_matches_torch():
    rng = np.random.RandomState(3)
    mats = [rng.randn(4, 4), 0.01 * rng.randn(4, 4), 30 * rng.randn(4, 4), np.zeros((4, 4)),
            np.diag([1.0, -2.0, 3.0, 0.5]), np.triu(rng.randn(4, 4), 1)]
    batch = np.stack(mats)  # each matrix has its own scaling
    for dtype, rtol in ((np.float64, 1e-10), (np.float32, 2e-4)):
        a = batch.astype(dtype)
        want = torch.matrix_exp(torch.tensor(a)).numpy()
        got = retorch.matrix_exp(retorch.tensor(a))
        assert got.dtype == getattr(retorch, np.dtype(dtype).name)
        scale = np.abs(want).max(axis=(-2, -1), keepdims=True)
        np.testing.assert_allclose(got.numpy() / scale, want / scale, rtol=0, atol=rtol)
    one = retorch.tensor([[2.0]])
    assert abs(one.matrix_exp().item() - np.exp(2.0)) < 1e-5
    assert retorch.linalg.matrix_exp(retorch.zeros(3, 0, 0)).shape == (3, 0, 0)
    skew = retorch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=retorch.float64)
    np.testing.assert_allclose(retorch.matrix_exp(skew * np.pi).numpy(), -np.eye(2), atol=1e-12)


def test_in_place_on_a_leaf_that_requires_grad_raises():
    for name, call in (("addmm_", lambda t: t.addmm_(t, t)), ("cumsum_", lambda t: t.cumsum_(0)),
                       ("renorm_", lambda t: t.renorm_(2, 0, 1.0)),
                       ("as_strided_", lambda t: t.as_strided_((2,), (1,))),
                       ("swapaxes_", lambda t: t.swapaxes_(0, 1))):
        for m in (torch, retorch):
            t = m.ones(2, 2, requires_grad=True)
            with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
                call(t)


def test_in_place_view_change_of_a_non_leaf_is_refused():
    # retorch cannot record the new geometry in the graph; a wrong backward would be worse.
    t = retorch.ones(2, 3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="use the out-of-place as_strided"):
        t.as_strided_((3, 2), (1, 3))
    with pytest.raises(RuntimeError, match="use the out-of-place transpose"):
        t.swapdims_(0, 1)
    with retorch.no_grad():
        assert t.swapdims_(0, 1) is t and t.shape == (3, 2)


ERRORS = {
    "float_power_ float32": (lambda m: m.ones(2).float_power_(2), RuntimeError,
                             "the base given to float_power_ has dtype Float but the "
                             "operation's result requires dtype Double"),
    "float_power_ long": (lambda m: m.ones(2, dtype=m.int64).float_power_(2), RuntimeError,
                          "has dtype Long but"),
    "deg2rad_ int": (lambda m: m.tensor([5, 7]).deg2rad_(), RuntimeError,
                     "result type Float can't be cast to the desired output type Long"),
    "ldexp_ int": (lambda m: m.tensor([5, 7]).ldexp_(m.tensor([1, 2])), RuntimeError,
                   "result type Float can't be cast"),
    "floor_divide_ int by float": (lambda m: m.tensor([7, -7]).floor_divide_(2.0), RuntimeError,
                                   "result type Float can't be cast"),
    "gcd_ broadcast": (lambda m: m.ones(1, dtype=m.int64).gcd_(m.ones(2, dtype=m.int64)),
                       RuntimeError, r"output with shape \[1\] doesn't match the broadcast "
                       r"shape \[2\]"),
    "nextafter_ broadcast": (lambda m: m.ones(1).nextafter_(m.ones(2)), RuntimeError,
                             "doesn't match the broadcast shape"),
    "addmm_ shape": (lambda m: m.zeros(1, 4).addmm_(T(m, A), T(m, B)), RuntimeError,
                     r"Bad in-place call: input tensor size \[1, 4\] and output tensor size "
                     r"\[3, 4\] should match"),
    "baddbmm_ shape": (lambda m: m.ones(1, 3, 4).baddbmm_(T(m, B1), T(m, B2)), RuntimeError,
                       "Bad in-place call"),
    "addmv_ 2d self": (lambda m: m.ones(2, 2).addmv_(m.ones(2, 2), m.ones(2)), RuntimeError,
                       "vector \\+ matrix @ vector expected, got 2, 2, 1"),
    "addr_ 1d self": (lambda m: m.ones(2).addr_(m.ones(2), m.ones(2)), RuntimeError,
                      "2D tensor expected, got 1D tensor for input"),
    "cumsum_ dtype": (lambda m: m.tensor([1, 2]).cumsum_(0, dtype=m.int32), RuntimeError,
                      "Bad in-place call: input tensor dtype long int and output tensor "
                      "dtype int should match"),
    "cumsum_ bool": (lambda m: m.tensor([True]).cumsum_(0), RuntimeError,
                     "\"cumsum_out_cpu\" not implemented for 'Bool'"),
    "cumprod_ bool": (lambda m: m.tensor([True]).cumprod_(0), RuntimeError,
                      "\"cumprod_out_cpu\" not implemented for 'Bool'"),
    "renorm_ p": (lambda m: T(m, X).renorm_(-1, 0, 1.0), RuntimeError,
                  "renorm: non-positive-norm not supported"),
    "renorm_ maxnorm": (lambda m: T(m, X).renorm_(2, 0, -1.0), RuntimeError,
                        "renorm: expected maxnorm to be >= 0 but got -1"),
    "renorm_ 1d": (lambda m: m.ones(3).renorm_(2, 0, 1.0), RuntimeError,
                   "renorm: input needs at least 2 dimensions, got 1 dimensions"),
    "sum_to_size bigger": (lambda m: T(m, X).sum_to_size(4, 4), RuntimeError,
                           r"size \{\[4, 4\]\} is not expandable to size \{\[3, 4\]\}."),
    "sum_to_size longer": (lambda m: T(m, X).sum_to_size(3, 4, 1), RuntimeError,
                           "is not expandable to size"),
    "unsafe_split list": (lambda m: T(m, X).unsafe_split([1, 3], 1), TypeError,
                          "must be int, not list"),
    "unsafe_split_with_sizes sum": (lambda m: T(m, X).unsafe_split_with_sizes([1, 1], 1),
                                    RuntimeError, "split_with_sizes expects split_sizes to sum "
                                    "exactly to 4"),
    "apply_ requires grad": (lambda m: m.ones(2, requires_grad=True).apply_(lambda v: v),
                             RuntimeError, r"Can't call apply_\(\) on Variable that requires "
                             "grad"),
    "apply_ str into int": (lambda m: m.arange(3).apply_(lambda v: "a"), TypeError,
                            "'str' object cannot be interpreted as an integer"),
    "apply_ str into float": (lambda m: m.ones(2).apply_(lambda v: "1.5"), TypeError,
                              "must be real number, not str"),
    "apply_ None into float": (lambda m: m.ones(2).apply_(lambda v: None), TypeError,
                               "must be real number, not NoneType"),
    "apply_ int8 overflow": (lambda m: m.ones(2, dtype=m.int8).apply_(lambda v: 300),
                             RuntimeError, "value cannot be converted to type int8 without "
                             "overflow"),
    "apply_ int64 overflow": (lambda m: m.ones(2, dtype=m.int64).apply_(lambda v: 2 ** 70),
                              RuntimeError, "Overflow when unpacking long"),
    "map_ dtype": (lambda m: m.ones(3).map_(m.ones(3, dtype=m.float64), lambda a, b: a),
                   TypeError, r"map_: expected torch.FloatTensor for 'other' \(got "
                   r"torch.DoubleTensor\)"),
    "map_ requires grad": (lambda m: m.ones(2).map_(m.ones(2, requires_grad=True),
                                                    lambda a, b: a), RuntimeError,
                           r"Can't call map_\(\) on Variable that requires grad"),
    "map2_ y dtype": (lambda m: m.ones(2).map2_(m.ones(2), m.ones(2, dtype=m.int64),
                                                lambda a, b, c: a), TypeError,
                      "map2_: expected torch.FloatTensor for argument 'y' "
                      r"\(got torch.LongTensor\)"),
    "map2_ requires grad": (lambda m: m.ones(2).map2_(m.ones(2), m.ones(2, requires_grad=True),
                                                      lambda a, b, c: a), RuntimeError,
                            r"Can't call map2_\(\) on Variable that requires grad"),
    "resize_as_ requires grad": (lambda m: m.ones(3, requires_grad=True).resize_as_(
        m.ones(2, 2)), RuntimeError, "cannot resize variables that require grad"),
    "nextafter long": (lambda m: m.nextafter(m.tensor([1, 2]), m.tensor([2, 0])), RuntimeError,
                       "\"nextafter_cpu\" not implemented for 'Long'"),
    "nextafter half": (lambda m: m.nextafter(m.ones(1, dtype=m.float16),
                                             m.ones(1, dtype=m.float16)), RuntimeError,
                       "not implemented for 'Half'"),
    "imag": (lambda m: T(m, X).imag, RuntimeError,
             "imag is not implemented for tensors with non-complex dtypes."),
    "torch.imag": (lambda m: m.imag(T(m, X)), RuntimeError, "imag is not implemented"),
    "range no end": (lambda m: m.range(4), TypeError, "missing 1 required positional"),
    "range step 0": (lambda m: m.range(1, 4, 0), RuntimeError, "step must be nonzero"),
    "range long step truncates to 0": (lambda m: m.range(0, 3, 0.5, dtype=m.int64),
                                       RuntimeError, "step must be nonzero"),
    "range sign": (lambda m: m.range(1, 4, -1), RuntimeError,
                   "upper bound and lower bound inconsistent with step sign"),
    "range inf": (lambda m: m.range(0, float("inf")), RuntimeError, "unsupported range: 0 -> inf"),
    "vander 2d": (lambda m: m.vander(m.ones(1, 3)), RuntimeError,
                  "x must be a one-dimensional tensor."),
    "vander 0-d": (lambda m: m.vander(m.tensor(2.0)), RuntimeError, "one-dimensional"),
    "vander N": (lambda m: m.vander(m.ones(3), N=-1), RuntimeError, "N must be non-negative."),
    "fill 1-d value": (lambda m: m.fill(m.ones(3), m.tensor([5.0])), RuntimeError,
                       "fill_ only supports 0-dimension value tensor but got tensor with 1 "
                       "dimensions."),
    "debug mode 3": (lambda m: m.set_deterministic_debug_mode(3), RuntimeError,
                     "invalid value of debug_mode, expected 0, 1, or 2, but got 3"),
    "debug mode name": (lambda m: m.set_deterministic_debug_mode("foo"), RuntimeError,
                        "expected one of `default`, `warn`, `error`, but got foo"),
    "debug mode type": (lambda m: m.set_deterministic_debug_mode(1.0), TypeError,
                        "debug_mode must be str or int, but got <class 'float'>"),
    "deterministic bool": (lambda m: m.use_deterministic_algorithms(1), TypeError,
                           "must be bool, not int"),
    "interop threads 0": (lambda m: m.set_num_interop_threads(0), RuntimeError,
                          "set_num_interop_threads expects a positive integer"),
    "asarray alias dtype": (lambda m: m.asarray(m.ones(2), dtype=m.float64, copy=False),
                            ValueError, "can't alias tensor with dtype 'Float' into dtype "
                            "'Double'."),
    "asarray alias list": (lambda m: m.asarray([1, 2], copy=False), ValueError,
                           "can't alias arbitrary sequence into a tensor."),
    "asarray bad buffer": (lambda m: m.asarray(bytearray(b"ab")), ValueError,
                           r"buffer length \(2 bytes\) after offset \(0 bytes\) must be a "
                           r"multiple of element size \(4\)"),
    "asarray int requires grad": (lambda m: m.asarray([1, 2], requires_grad=True),
                                  RuntimeError, "(?i)only tensors of floating point"),
    "frombuffer not a buffer": (lambda m: m.frombuffer([1, 2], dtype=m.float32), ValueError,
                                "object does not implement Python buffer protocol."),
    "frombuffer no dtype": (lambda m: m.frombuffer(b"abcd"), TypeError, "dtype"),
    "frombuffer count": (lambda m: m.frombuffer(array.array("f", [1, 2, 3, 4]),
                                                dtype=m.float32, count=5), ValueError,
                         r"requested buffer length \(5 \* 4 bytes\) after offset \(0 bytes\) "
                         r"must not be greater than actual buffer length \(16 bytes\)"),
    "frombuffer offset": (lambda m: m.frombuffer(array.array("f", [1, 2, 3, 4]),
                                                 dtype=m.float32, offset=17), ValueError,
                          r"offset \(17 bytes\) must be non-negative and no greater than "
                          r"buffer length \(16 bytes\) minus 1"),
    "frombuffer empty": (lambda m: m.frombuffer(bytearray(), dtype=m.float32), ValueError,
                         r"both buffer length \(0\) and count \(-1\) must not be 0"),
    "frombuffer ragged": (lambda m: m.frombuffer(array.array("f", [1, 2, 3, 4]),
                                                 dtype=m.float32, offset=3), ValueError,
                          r"buffer length \(13 bytes\) after offset \(3 bytes\) must be a "
                          r"multiple of element size \(4\)"),
    "nuclear_norm 3d": (lambda m: m.nuclear_norm(m.ones(1, 2, 3)), RuntimeError,
                        "Expected a tensor with 2 dimensions, but got a tensor with 3 "
                        "dimensions instead."),
    "nuclear_norm 1d": (lambda m: m.nuclear_norm(m.ones(3)), RuntimeError,
                        "got a tensor with 1 dimension instead."),
    "frobenius_norm 3 dims": (lambda m: m.frobenius_norm(m.ones(2, 2, 2), dim=(0, 1, 2)),
                              RuntimeError, "Expected at most 2 dimensions, but got 3 "
                              "dimensions instead."),
    "frobenius_norm int": (lambda m: m.frobenius_norm(m.tensor([[1, 2], [3, 4]])), RuntimeError,
                           "norm\\(\\): input dtype should be either floating point or "
                           "complex. Got Long instead."),
    "matrix_exp 1d": (lambda m: m.matrix_exp(m.ones(2)), RuntimeError,
                      "linalg.matrix_exp: The input tensor A must have at least 2 dimensions."),
    "matrix_exp square": (lambda m: m.matrix_exp(m.ones(2, 3)), RuntimeError,
                          "linalg.matrix_exp: A must be batches of square matrices, but they "
                          "are 2 by 3 matrices"),
    "matrix_exp int": (lambda m: m.matrix_exp(m.ones(2, 2, dtype=m.int64)), RuntimeError,
                       "matrix_exp: Expected a floating point or complex tensor as input. "
                       "Got Long"),
    "gradient edge 3": (lambda m: m.gradient(m.ones(4), edge_order=3), RuntimeError,
                        "torch.gradient only supports edge_order=1 and edge_order=2."),
    "gradient too short": (lambda m: m.gradient(m.ones(2), edge_order=2), RuntimeError,
                           "torch.gradient expected each dimension size to be at least "
                           "edge_order\\+1"),
    "gradient uint8": (lambda m: m.gradient(m.ones(3, dtype=m.uint8)), RuntimeError,
                       "torch.gradient does not support uint8 input."),
    "gradient dim range": (lambda m: m.gradient(T(m, X), dim=2), IndexError,
                           r"Dimension out of range \(expected to be in range of \[-2, 1\], "
                           r"but got 2\)"),
    "gradient dim twice": (lambda m: m.gradient(T(m, X), dim=(0, 0)), RuntimeError,
                           "dim 0 appears multiple times in the list of dims"),
    "gradient spacing vs dim": (lambda m: m.gradient(T(m, X), spacing=[1.0, 2.0], dim=[0]),
                                RuntimeError, "spacing and dim arguments to have the same "
                                "length"),
    "histogramdd 1-d": (lambda m: m.histogramdd(m.ones(3), bins=2), RuntimeError,
                        "torch.histogramdd: input tensor should have at least 2 dimensions"),
    "histogramdd long": (lambda m: m.histogramdd(m.ones(3, 2, dtype=m.int64), bins=2),
                         RuntimeError, "\"histogramdd\" not implemented for 'Long'"),
    "histogramdd bins 0": (lambda m: m.histogramdd(T(m, PTS), bins=0), RuntimeError,
                           "bins must be > 0, but got 0 for dimension 0"),
    "histogramdd range length": (lambda m: m.histogramdd(T(m, PTS), bins=2, range=[0.0, 1.0]),
                                 RuntimeError, "for a 2-dimensional histogram range should "
                                 "have 4 elements, but got 2"),
    "histogramdd min max": (lambda m: m.histogramdd(T(m, PTS), bins=2,
                                                    range=[1.0, 0.0, 0.0, 1.0]),
                            RuntimeError, "min should not exceed max, but got min 1 max 0 for "
                            "dimension 0"),
    "histogramdd weight shape": (lambda m: m.histogramdd(T(m, PTS), bins=2, weight=m.ones(3)),
                                 RuntimeError, "if weight tensor is provided it should have the "
                                 "same shape"),
    "histogramdd inf": (lambda m: m.histogramdd(m.tensor([[float("inf"), 0.0]]), bins=2),
                        RuntimeError, r"dimension 0's range \[inf, inf\] is not finite"),
    "gradient spacing vs ndim": (lambda m: m.gradient(m.ones(3, 3, 3), spacing=[1.0, 2.0]),
                                 RuntimeError, "a list of length 3 but got a list of length 2"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_like_torch(case):
    fn, exc, pattern = ERRORS[case]
    for m in (torch, retorch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc, match=pattern):
                fn(m)


def test_asarray_shares_copies_and_sets_requires_grad_like_torch():
    for m in (torch, retorch):
        t = m.arange(4.0)
        assert m.asarray(t) is t
        assert m.asarray(t, copy=True) is not t
        assert m.asarray(t, dtype=m.float64).dtype == m.float64
        a = np.arange(4.0)
        shared = m.asarray(a)
        a[0] = 9.0
        assert shared[0].item() == 9.0 and shared.dtype == m.float64
        assert m.asarray(a, copy=True)[1].item() == 1.0
        assert m.asarray(a, dtype=m.float32).dtype == m.float32
        assert m.asarray(np.arange(4)[::2]).tolist() == [0, 2]
        assert m.asarray(np.array(2.5)).shape == ()
        assert m.asarray(np.array([1, 2], np.int32)).dtype == m.int32
        assert m.asarray([1, 2, 3]).dtype == m.int64
        assert m.asarray([[1.0, 2.0]], dtype=m.float64).shape == (1, 2)
        assert m.asarray(3.5).shape == () and m.asarray(True).dtype == m.bool
        assert m.asarray([m.tensor(1.0), m.tensor(2.0)]).tolist() == [1.0, 2.0]
        assert m.asarray(array.array("f", [1.0, 2.0])).tolist() == [1.0, 2.0]
        assert m.asarray([1.0, 2.0], requires_grad=True).requires_grad
        leaf = m.arange(4.0, requires_grad=True)
        assert m.asarray(leaf) is leaf and not leaf.requires_grad  # torch clears it in place
        leaf = m.arange(4.0, requires_grad=True)
        assert m.asarray(leaf, requires_grad=True) is leaf and leaf.requires_grad
        u = m.arange(4.0, requires_grad=True) * 2
        alias = m.asarray(u)
        assert alias is not u and alias.grad_fn is None and u.requires_grad


def test_frombuffer_reads_and_shares_like_torch():
    for m in (torch, retorch):
        buf = array.array("f", [1.0, 2.0, 3.0, 4.0])
        assert m.frombuffer(buf, dtype=m.float32).tolist() == [1.0, 2.0, 3.0, 4.0]
        assert m.frombuffer(buf, dtype=m.float32, count=2, offset=4).tolist() == [2.0, 3.0]
        assert m.frombuffer(buf, dtype=m.float32, count=-1, offset=8).tolist() == [3.0, 4.0]
        assert m.frombuffer(buf, dtype=m.int16, count=3, offset=1).tolist() == [-32768, 63, 0]
        np.testing.assert_allclose(m.frombuffer(buf, dtype=m.float64).numpy(),
                                   np.frombuffer(buf, np.float64))
        ba = bytearray(8)
        t = m.frombuffer(ba, dtype=m.float32)
        t[0] = 1.0
        assert bytes(ba[:4]) == np.float32(1.0).tobytes()  # the tensor writes the buffer
        assert m.frombuffer(bytearray(4), dtype=m.float32, requires_grad=True).requires_grad
        bf = m.frombuffer(bytearray(np.array([16256, 16384], np.uint16).tobytes()),
                          dtype=m.bfloat16)
        assert bf.float().tolist() == [1.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that bytes are not writable
        assert torch.frombuffer(b"\x01\x02\x03", dtype=torch.uint8).tolist() == [1, 2, 3]
    assert retorch.frombuffer(b"\x01\x02\x03", dtype=retorch.uint8).tolist() == [1, 2, 3]


def test_deterministic_switches_like_torch():
    def state(m):
        return (m.are_deterministic_algorithms_enabled(),
                m.is_deterministic_algorithms_warn_only_enabled(),
                m.get_deterministic_debug_mode())
    for m in (torch, retorch):
        try:
            assert state(m) == (False, False, 0)
            m.use_deterministic_algorithms(True, warn_only=True)
            assert state(m) == (True, True, 1)
            m.set_deterministic_debug_mode("error")
            assert state(m) == (True, False, 2)
            m.set_deterministic_debug_mode(1)
            assert state(m) == (True, True, 1)
            m.set_deterministic_debug_mode("default")
            assert state(m) == (False, False, 0)
        finally:
            m.use_deterministic_algorithms(False)


def test_runtime_switches():
    assert retorch.set_flush_denormal(True) is False  # no way to set FTZ/DAZ from Python
    assert retorch.set_flush_denormal(False) is False
    assert retorch.get_num_interop_threads() >= 1
    retorch.set_num_interop_threads(3)
    assert retorch.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        retorch.set_num_interop_threads(2)  # torch allows one call, before any parallel work
    with pytest.raises(TypeError, match="must be int"):
        retorch.set_num_interop_threads(2.0)


def test_in_place_results_are_the_same_object():
    x = retorch.tensor(X)
    x.tag = "kept"
    a, b = retorch.tensor(A), retorch.tensor(B)
    for call in (lambda t: t.addmm_(a, b), lambda t: t.cumsum_(0), lambda t: t.renorm_(2, 0, 1),
                 lambda t: t.floor_divide_(2.0), lambda t: t.nextafter_(t),
                 lambda t: t.apply_(abs), lambda t: t.map_(t, min)):
        assert call(x) is x and x.tag == "kept"
    view = x[1]
    view.cumsum_(0)  # writes through to x, as in torch
    assert np.allclose(x[1].numpy(), view.numpy())


def test_resize_as_shrink_keeps_aliasing_and_grow_keeps_the_prefix():
    base = retorch.arange(6.0)
    alias = base[:]
    base.resize_as_(retorch.zeros(2, 2))
    base[0, 0] = 42.0
    assert alias[0].item() == 42.0  # shrinking reuses the storage
    small = retorch.arange(3.0)
    small.resize_as_(retorch.zeros(2, 3))
    assert small.shape == (2, 3) and small.reshape(-1)[:3].tolist() == [0.0, 1.0, 2.0]


def test_layout_is_shared_and_printable():
    assert retorch.ones(2).layout is retorch.strided is retorch.zeros(3).layout
    assert isinstance(retorch.strided, retorch.layout)
    assert repr(retorch.strided) == "torch.strided" == repr(torch.strided)
    assert retorch.empty(2, device="meta").is_meta


def test_fill_tensor_value_gets_the_gradient_and_input_a_zero_one():
    for m in (torch, retorch):
        x = m.ones(3, requires_grad=True)
        v = m.tensor(2.0, requires_grad=True)
        y = m.fill(x * 1, v)
        (y * m.tensor([1.0, 2.0, 3.0])).sum().backward()
        assert v.grad.item() == 6.0 and x.grad.tolist() == [0.0, 0.0, 0.0]


def test_angle_gradient_is_zero():
    for m in (torch, retorch):
        a = m.tensor([1.0, -1.0, float("nan"), float("inf")], requires_grad=True)
        a.angle().sum().backward()
        assert a.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
