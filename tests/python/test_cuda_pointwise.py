"""The CUDA pointwise kernels of the remaining floating unary, binary and ternary ops (rounding,
inverse trigonometric and hyperbolic functions, special functions, activations with arguments,
atan2, copysign, hypot, fmax/fmin, logaddexp(2), remainder/fmod, heaviside, xlogy, addcmul,
addcdiv, lerp), the var, norm, prod, cumsum, all and any reductions and average pooling
(adaptive too) against torch on the cpu, in every floating dtype. Skipped without a GPU."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import DTYPES, close, fresh_stats, ran_on_device, up  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")

HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.0]


def both(x, dtype):
    """float64 numpy values as a retorch cuda tensor and a torch cpu tensor of dtype."""
    t = torch.tensor(x).to(getattr(torch, dtype))
    return retorch.tensor(x).to(getattr(retorch, dtype)).to("cuda"), t


def inputs(domain, seed):
    """Standard normal values moved into an op's domain (37 x 65)."""
    x = np.random.default_rng(seed).standard_normal((37, 65))
    if domain == "pos":
        return np.abs(x) + 0.1
    if domain == "unit":
        return np.tanh(x) * 0.99
    if domain == "small":
        return np.clip(x, -1.2, 1.2)
    if domain == "wide":  # exact halves too: round is half to even
        x = x * 3
        x.flat[:len(HALVES)] = HALVES
    return x


UNARY = {"exp2": None, "log2": "pos", "log10": "pos", "tan": "small", "asin": "unit",
         "acos": "unit", "atan": None, "sinh": None, "cosh": None, "floor": "wide",
         "ceil": "wide", "round": "wide", "trunc": "wide", "frac": "wide", "sign": "wide",
         "erfc": None, "erfinv": "unit", "lgamma": "pos", "i0": None, "sinc": "wide"}


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_functional_inplace_and_out(name, dtype, tol):
    r, t = both(inputs(UNARY[name], 60), dtype)
    want = getattr(torch, name)(up(t)).to(t.dtype)
    close(getattr(retorch, name)(r), want, tol)
    c = r.clone()
    getattr(c, name + "_")()
    close(c, want, tol)
    out = retorch.empty((37, 65), dtype=getattr(retorch, dtype), device="cuda")
    getattr(retorch, name)(r.t().contiguous().t(), out=out)  # a strided input
    close(out, want, tol)
    assert ran_on_device(f"aten::{name}") and ran_on_device(f"aten::{name}_")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_activations_and_their_arguments(dtype, tol):
    F, G = retorch.nn.functional, torch.nn.functional
    r, t = both(inputs("wide", 61), dtype)
    close(F.leaky_relu(r, 0.2), G.leaky_relu(up(t), 0.2).to(t.dtype), tol)
    close(F.softplus(r, beta=2, threshold=3), G.softplus(up(t), beta=2, threshold=3).to(t.dtype),
          tol)
    close(F.hardtanh(r, -0.5, 1.5), G.hardtanh(up(t), -0.5, 1.5).to(t.dtype), tol)
    close(F.hardsigmoid(r), G.hardsigmoid(up(t)).to(t.dtype), tol)
    close(F.hardswish(r), G.hardswish(up(t)).to(t.dtype), tol)
    p, tp = both(1 / (1 + np.exp(-inputs(None, 62))), dtype)
    close(retorch.logit(p), torch.logit(up(tp)).to(tp.dtype), tol * 4)
    close(retorch.logit(p, eps=0.1), torch.logit(up(tp), eps=0.1).to(tp.dtype), tol * 4)
    for op in ("leaky_relu", "softplus", "hardtanh", "hardsigmoid", "hardswish", "logit"):
        assert ran_on_device(f"aten::{op}"), op


def binary_inputs(name, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((40, 50)) * 2, rng.standard_normal((40, 50)) * 2
    if name in ("remainder", "fmod"):
        b = np.sign(b) * (np.abs(b) + 0.5)  # away from 0 (0 gives NaN on both sides)
    if name == "heaviside":
        a.flat[::7] = 0.0
    if name == "xlogy":
        a.flat[::5] = 0.0
        b = np.abs(b) + 0.1
    if name in ("fmax", "fmin"):
        a.flat[::6] = np.nan
        b.flat[::9] = np.nan
    if name == "copysign":
        b.flat[::4] = -0.0
    return a, b


BINARY = ["atan2", "copysign", "hypot", "fmax", "fmin", "logaddexp", "logaddexp2", "remainder",
          "fmod", "heaviside", "xlogy"]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_with_broadcasting(name, dtype, tol):
    a, b = binary_inputs(name, 63)
    ra, ta = both(a, dtype)
    rb, tb = both(b, dtype)
    fn = getattr(torch, name)
    close(getattr(retorch, name)(ra, rb), fn(up(ta), up(tb)).to(ta.dtype), tol)
    close(getattr(retorch, name)(ra, rb[3]), fn(up(ta), up(tb[3])).to(ta.dtype), tol)
    out = retorch.empty((40, 50), dtype=getattr(retorch, dtype), device="cuda")
    getattr(retorch, name)(ra, rb, out=out)
    close(out, fn(up(ta), up(tb)).to(ta.dtype), tol)
    overload = {"copysign": ".Tensor", "remainder": ".Tensor", "fmod": ".Tensor",
                "xlogy": ".Tensor"}.get(name, "")
    assert ran_on_device(f"aten::{name}{overload}")


def test_logaddexp_of_infinities_and_round_with_decimals():
    a = retorch.tensor([-np.inf, np.inf, 1.0, -np.inf]).to("cuda")
    b = retorch.tensor([-np.inf, np.inf, 2.0, 3.0]).to("cuda")
    ta, tb = torch.tensor([-np.inf, np.inf, 1.0, -np.inf]), torch.tensor([-np.inf, np.inf, 2.0, 3.0])
    close(retorch.logaddexp(a, b), torch.logaddexp(ta, tb), 1e-6)
    close(retorch.logaddexp2(a, b), torch.logaddexp2(ta, tb), 1e-6)
    # round.decimals keeps its own (cpu) kernel: the device's round would drop the decimals.
    x = retorch.tensor([1.2345, -2.5678]).to("cuda")
    close(retorch.round(x, decimals=2), torch.round(torch.tensor([1.2345, -2.5678]), decimals=2),
          1e-6)


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_addcmul_addcdiv_and_lerp(dtype, tol):
    rng = np.random.default_rng(64)
    a, b = rng.standard_normal((30, 20)), rng.standard_normal((30, 20))
    c = np.abs(rng.standard_normal(20)) + 0.5  # broadcast along the rows; away from 0
    w = rng.uniform(-0.5, 1.5, (30, 20))
    w.flat[:3] = [0.5, 1.0, 0.0]
    (ra, ta), (rb, tb), (rc, tc), (rw, tw) = (both(v, dtype) for v in (a, b, c, w))
    for name in ("addcmul", "addcdiv"):
        want = getattr(torch, name)(up(ta), up(tb), up(tc), value=0.7).to(ta.dtype)
        close(getattr(retorch, name)(ra, rb, rc, value=0.7), want, tol * 2)
        x = ra.clone()
        getattr(x, name + "_")(rb, rc, value=0.7)
        close(x, want, tol * 2)
        out = retorch.empty((30, 20), dtype=getattr(retorch, dtype), device="cuda")
        getattr(retorch, name)(ra, rb, rc, value=0.7, out=out)
        close(out, want, tol * 2)
        assert ran_on_device(f"aten::{name}") and ran_on_device(f"aten::{name}_")
    close(retorch.lerp(ra, rb, rw), torch.lerp(up(ta), up(tb), up(tw)).to(ta.dtype), tol * 2)
    for weight in (0.25, 0.5, 1.0):
        close(retorch.lerp(ra, rb, weight), torch.lerp(up(ta), up(tb), weight).to(ta.dtype),
              tol * 2)
        x = ra.clone()
        x.lerp_(rb, weight)
        close(x, torch.lerp(up(ta), up(tb), weight).to(ta.dtype), tol * 2)
    assert ran_on_device("aten::lerp.Tensor") and ran_on_device("aten::lerp.Scalar")
    if dtype == "float32":  # mixed dtypes: lerp raises as on the cpu (through the fallback)
        with pytest.raises(RuntimeError, match="lerp: expected dtype"):
            retorch.lerp(ra, rb.double(), 0.5)


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_var_and_norm_over_any_dims(dtype, tol):
    x = np.random.default_rng(65).standard_normal((6, 5, 300))
    x[0, 0, :7] = 0.0
    r, t = both(x, dtype)
    for dim in (None, -1, (0, 2), 1):
        for keepdim in (False, True):
            for corr in (0, 1, 400):  # 400: more than the count (inf, as torch)
                want = torch.var(up(t), dim=dim, correction=corr, keepdim=keepdim)
                close(retorch.var(r, dim=dim, correction=corr, keepdim=keepdim),
                      want.to(t.dtype), tol * 4)
            for p in (2, 1, 0, 3, 0.5, float("inf"), float("-inf")):
                want = torch.norm(up(t), p=p, dim=dim, keepdim=keepdim)
                close(retorch.norm(r, p=p, dim=dim, keepdim=keepdim), want.to(t.dtype), tol * 4)
    assert ran_on_device("aten::var.correction") and ran_on_device("aten::norm")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_predicates_and_logical_ops(dtype):
    x = np.random.default_rng(66).standard_normal((20, 30))
    x.flat[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.0, np.nan]
    r, t = both(x, dtype)
    number = ~np.isnan(x)  # a NaN's sign bit depends on how it was converted: not compared
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"):
        got = getattr(retorch, name)(r)
        assert got.dtype == retorch.bool and got.device.type == "cuda"
        want = getattr(torch, name)(t).numpy()
        assert np.array_equal(got.cpu().numpy()[number], want[number]), name
        assert ran_on_device(f"aten::{name}"), name
    y = np.random.default_rng(67).standard_normal(30)
    y[::3] = 0.0
    ry, ty = both(y, dtype)
    mask = retorch.tensor((x > 0.3)).to("cuda")
    tmask = torch.tensor(x > 0.3)
    for name in ("logical_and", "logical_or", "logical_xor"):
        fn, tfn = getattr(retorch, name), getattr(torch, name)
        for a, b, ta, tb in ((r, ry, t, ty), (mask, ry, tmask, ty), (mask, mask[3], tmask, tmask[3])):
            assert np.array_equal(fn(a, b).cpu().numpy(), tfn(ta, tb).numpy()), name
        assert ran_on_device(f"aten::{name}"), name
    for a, ta in ((r, t), (mask, tmask)):
        assert np.array_equal(retorch.logical_not(a).cpu().numpy(), torch.logical_not(ta).numpy())
    assert ran_on_device("aten::logical_not")


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_bitwise_ops_of_integers_and_masks(dtype):
    rng = np.random.default_rng(68)
    a = rng.integers(-1000, 1000, (20, 30))
    b = rng.integers(-1000, 1000, 30)
    if dtype == "bool":
        a, b = a > 0, b > 0
    ra = retorch.tensor(a).to(getattr(retorch, dtype)).to("cuda")
    rb = retorch.tensor(b).to(getattr(retorch, dtype)).to("cuda")
    ta, tb = torch.tensor(a).to(getattr(torch, dtype)), torch.tensor(b).to(getattr(torch, dtype))
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        got = getattr(retorch, name)(ra, rb)
        assert got.dtype == ra.dtype
        assert np.array_equal(got.cpu().numpy(), getattr(torch, name)(ta, tb).numpy()), name
        assert ran_on_device(f"aten::{name}.Tensor"), name
    assert np.array_equal((ra & rb).cpu().numpy(), (ta & tb).numpy())
    assert np.array_equal(retorch.bitwise_not(ra).cpu().numpy(), torch.bitwise_not(ta).numpy())
    assert ran_on_device("aten::bitwise_not")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_prod_along_a_dim(dtype, tol):
    x = 1 + 0.1 * np.random.default_rng(69).standard_normal((4, 50, 3))
    x[1, 7, 2] = 0.0
    r, t = both(x, dtype)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            want = torch.prod(up(t), dim=dim, keepdim=keepdim).to(t.dtype)
            close(retorch.prod(r, dim, keepdim=keepdim), want, tol * 8)
    close(retorch.prod(r, 1, dtype=retorch.float64), torch.prod(up(t).double(), 1), tol * 8)
    assert ran_on_device("aten::prod.dim_int")


@pytest.mark.parametrize("dtype,tol", DTYPES + [("int64", 0)])
def test_cumsum_along_any_dim(dtype, tol):
    rng = np.random.default_rng(70)
    x = rng.standard_normal((3, 300, 5))
    if dtype.startswith("int"):
        x = rng.integers(-100, 100, (3, 300, 5))
    r, t = both(x, dtype)
    for dim in (0, 1, -1):
        want = torch.cumsum(up(t) if tol else t, dim).to(t.dtype)
        got = retorch.cumsum(r, dim)
        assert got.dtype == r.dtype
        close(got, want, max(tol, 1e-12) * 50)
    close(retorch.cumsum(r[0, :, 1], 0), torch.cumsum(up(t[0, :, 1]) if tol else t[0, :, 1],
                                                     0).to(t.dtype), max(tol, 1e-12) * 50)
    assert ran_on_device("aten::cumsum")


@pytest.mark.parametrize("dtype", ["bool", "float32", "bfloat16"])
def test_all_and_any(dtype):
    rng = np.random.default_rng(71)
    x = rng.random((6, 40, 3)) > 0.1  # mostly true: rows with and without a false
    x[2] = True
    x[4] = False
    vals = x.astype(np.float64) * rng.standard_normal(x.shape) if dtype != "bool" else x
    if dtype != "bool":
        vals[0, 0, 0] = np.nan  # true
    r = retorch.tensor(vals).to(getattr(retorch, dtype)).to("cuda")
    t = torch.tensor(vals).to(getattr(torch, dtype))
    for name in ("all", "any"):
        fn, tfn = getattr(retorch, name), getattr(torch, name)
        got = fn(r)
        assert got.dtype == retorch.bool and bool(got.cpu().numpy()) == bool(tfn(t))
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                got = fn(r, dim, keepdim=keepdim)
                assert np.array_equal(got.cpu().numpy(), tfn(t, dim, keepdim=keepdim).numpy())
        assert ran_on_device(f"aten::{name}") and ran_on_device(f"aten::{name}.dim")


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("size", [(1, 1), (3, 2), (7, 5), (9, 12)])  # (9, 12): upsampling
def test_adaptive_avg_pool2d_and_its_gradient(dtype, tol, size):
    x = np.random.default_rng(72).standard_normal((2, 3, 7, 10))
    r, t = both(x, dtype)
    F, G = retorch.nn.functional, torch.nn.functional
    close(F.adaptive_avg_pool2d(r, size), G.adaptive_avg_pool2d(up(t), size).to(t.dtype), tol * 4)
    close(F.adaptive_avg_pool2d(r[0], size), G.adaptive_avg_pool2d(up(t[0]), size).to(t.dtype),
          tol * 4)  # CHW
    assert ran_on_device("aten::adaptive_avg_pool2d")
    if dtype in ("float32", "float64"):
        r.requires_grad_(True)
        t.requires_grad_(True)
        g = np.random.default_rng(73).standard_normal((2, 3) + size)
        rg, tg = both(g, dtype)
        (F.adaptive_avg_pool2d(r, size) * rg).sum().backward()
        (G.adaptive_avg_pool2d(t, size) * tg).sum().backward()
        close(r.grad, t.grad, max(tol, 1e-10) * 10)
        assert ran_on_device("aten::_adaptive_avg_pool2d_backward")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_division_with_rounding_modes(dtype, tol):
    a, b = binary_inputs("fmod", 74)  # divisors away from 0
    a.flat[:4] = [7.0, -7.0, 0.0, -0.0]
    b.flat[:4] = [2.0, 2.0, -3.0, 3.0]
    (ra, ta), (rb, tb) = both(a, dtype), both(b, dtype)
    for mode in ("trunc", "floor", None):
        want = torch.div(up(ta), up(tb), rounding_mode=mode).to(ta.dtype)
        close(retorch.div(ra, rb, rounding_mode=mode), want, tol)
        x = ra.clone()
        x.div_(rb, rounding_mode=mode)
        close(x, want, tol)
    close(ra // rb, (up(ta) // up(tb)).to(ta.dtype), tol)
    assert ran_on_device("aten::div.Tensor_mode") and ran_on_device("aten::div_.Tensor_mode")


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=(2, 1), ceil_mode=True),
                                dict(kernel_size=3, padding=1, count_include_pad=False),
                                dict(kernel_size=2, divisor_override=3)])
@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_avg_pool2d_and_its_gradient(dtype, tol, kw):
    x = np.random.default_rng(75).standard_normal((2, 3, 9, 8))
    r, t = both(x, dtype)
    F, G = retorch.nn.functional, torch.nn.functional
    close(F.avg_pool2d(r, **kw), G.avg_pool2d(up(t), **kw).to(t.dtype), tol * 4)
    assert ran_on_device("aten::avg_pool2d")
    if dtype in ("float32", "float64"):
        r.requires_grad_(True)
        t.requires_grad_(True)
        y = G.avg_pool2d(t, **kw)
        g = np.random.default_rng(76).standard_normal(tuple(y.shape))
        rg, tg = both(g, dtype)
        (F.avg_pool2d(r, **kw) * rg).sum().backward()
        (y * tg).sum().backward()
        close(r.grad, t.grad, max(tol, 1e-10) * 10)
        assert ran_on_device("aten::avg_pool2d_backward")
