"""Oracle tests for special functions (gamma family, erfinv, the Bessel functions, sinc, logit,
xlogy, igamma, the orthogonal polynomials)."""
import numpy as np
import pytest
import torch

import retorch
from custom_helpers import I, P, both, gradcheck, gradgradcheck, grads, raises_like_torch
from oracle import DTYPES, FLOATS, pair_from_values
from test_ops_pointwise import LAYOUTS

POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_polygamma": ["polygamma", "polygamma_"],
    "test_logit": ["logit"],
    "test_xlogy_scalar_overloads": ["xlogy.Scalar_Self", "xlogy.Scalar_Other", "xlogy.Tensor"],
    "test_special_gradgrad": ["lgamma", "digamma", "erfinv", "erfc", "i0", "special_i1", "sinc"],
    "test_special_namespace": ["special_i1", "xlogy.Tensor", "polygamma", "logit"],
    "test_special_accuracy": ["lgamma", "digamma", "polygamma", "erfinv", "erfc", "i0",
                              "special_i1", "sinc"],
    "test_igamma_ops": ["igamma", "igammac"],
    "test_scaled_bessel_gradients": ["special_i0e", "special_i1e"],
    "test_polynomial_ops": ["special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
                            "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
                            "special_shifted_chebyshev_polynomial_t",
                            "special_shifted_chebyshev_polynomial_u",
                            "special_shifted_chebyshev_polynomial_v",
                            "special_shifted_chebyshev_polynomial_w",
                            "special_hermite_polynomial_h", "special_hermite_polynomial_he",
                            "special_laguerre_polynomial_l", "special_legendre_polynomial_p"],
}


# ---------------------------------------------------------------- special functions

def test_polygamma(rng):
    for n in range(5):
        for dt in FLOATS + ["int64", "bool", "uint8"]:
            x = P(rng, (3, 4), dt, "transposed", domain="positive")
            both(lambda L, x: L.polygamma(n, x), x, what=f"polygamma({n}) {dt}")
            both(lambda L, x: x.polygamma(n), x)
            both(lambda L, x: L.polygamma(n, x, out=L.empty(0, dtype=x.dtype)), x,
                 what="out")
            both(lambda L, x: x.clone().polygamma_(n), x, what="in-place")
        # negative non-integers (reflection), large arguments, specials
        both(lambda L, x: L.polygamma(n, x), I([-2.5, -0.3, -1.7, 30.0, 1e4, 0.01], "float64"))
        both(lambda L, x: L.polygamma(n, x), P(rng, (3, 4), "float32", special=True))
        both(lambda L, x: L.polygamma(n, x), P(rng, (0, 2)))
        both(lambda L, x: L.polygamma(n, x), P(rng, (), domain="positive"))
        grads(lambda L, x: L.polygamma(n, x), P(rng, (3, 4), domain="positive"))
        gradcheck(lambda L, x: L.polygamma(n, x), P(rng, (2, 3), "float64", domain="positive"))
    both(lambda L, x: L.polygamma(-1, x), P(rng, (3,)), what="negative n")
    both(lambda L, x: L.polygamma(1, x, out=L.empty(3, dtype=L.int64)), P(rng, (3,)),
         what="float result into int out")
    both(lambda L, x: x.polygamma_(1), I([1, 2, 3]), what="int in-place")
    # digamma at its poles and signed zeros
    both(lambda L, x: L.digamma(x), I([0.0, -0.0, -1.0, -2.0, 1.0, 0.5], "float64"))
    # in-place on a non-leaf keeps the history right
    grads(lambda L, x: (x * 1).polygamma_(1), P(rng, (3, 4), domain="positive"))


def test_logit(rng):
    for dt in FLOATS + ["int64", "bool"]:
        x = P(rng, (3, 4), dt, "transposed", domain="unit")
        # (eps > 1/2 is left out: torch's vectorized and scalar loops disagree there)
        for eps in (None, 0.2, 0.0, 0.5):
            both(lambda L, x: L.logit(x, eps), x, what=f"logit {dt} eps={eps}")
            both(lambda L, x: x.logit(eps=eps), x)
            both(lambda L, x: L.logit(x, eps, out=L.empty(0, dtype=x.dtype)), x)
            both(lambda L, x: x.clone().logit_(eps), x)
    both(lambda L, x: L.logit(x), I([0.0, 1.0, 0.5, -0.5, 1.5, float("nan")], "float64"))
    both(lambda L, x: L.logit(x, 0.1), I([0.0, 1.0, 0.05, 0.95, float("nan")], "float32"))
    both(lambda L, x: L.logit(x), P(rng, (0, 3)))
    for lay in LAYOUTS:
        u = pair_from_values(rng.uniform(0.05, 0.95, (3, 4)).astype("float32"), "float32", lay)
        grads(lambda L, x: L.logit(x), u)
        grads(lambda L, x: L.logit(x, 0.25), u)
        grads(lambda L, x: L.logit(x, 0.25), I([0.1, 0.9, 0.5, -1.0, 2.0], "float32"))
    grads(lambda L, x: L.logit(x), I([-0.5, 1.5, 0.5], "float32"), what="outside (0, 1)")
    g = I(rng.uniform(0.1, 0.9, (2, 3)), "float64")
    gradcheck(lambda L, x: L.logit(x), g)
    gradcheck(lambda L, x: L.logit(x, 0.3), I([[0.1, 0.5, 0.9], [0.2, 0.4, 0.75]], "float64"))
    gradgradcheck(lambda L, x: L.logit(x), g)


def test_xlogy_scalar_overloads(rng):
    for dt in DTYPES:
        x = P(rng, (3, 4), dt, "transposed", domain="positive")
        for s in (2.5, 0, 3, True, 0.0, -1.5):
            both(lambda L, x: L.xlogy(s, x), x, what=f"xlogy({s}, {dt})")
            both(lambda L, x: L.xlogy(x, s), x, what=f"xlogy({dt}, {s})")
            both(lambda L, x: x.xlogy(s), x)
            both(lambda L, x: L.special.xlogy(x, s), x)
    z = I([0.0, 0.0, 1.0, 2.0, 0.0], "float32")
    y = I([0.0, -1.0, float("nan"), 0.0, float("nan")], "float32")
    both(lambda L, x, y: L.xlogy(x, y), z, y, what="zeros and nan")
    both(lambda L, x: x.xlogy_(2), I([1, 2]), what="int in-place")
    grads(lambda L, x: L.xlogy(x, 3.0), P(rng, (3, 4)))
    grads(lambda L, y: L.xlogy(2.0, y), P(rng, (3, 4), domain="positive"))
    grads(lambda L, x, y: L.xlogy(x, y), I([0.0, 0.0, 1.5, 2.0], "float32"),
          I([0.0, -1.0, 2.0, 0.5], "float32"), what="masked self gradient")
    gradcheck(lambda L, x, y: L.xlogy(x, y), P(rng, (2, 3), "float64"),
              P(rng, (3,), "float64", domain="positive"))
    gradgradcheck(lambda L, x, y: L.xlogy(x, y), P(rng, (2, 3), "float64"),
                  P(rng, (3,), "float64", domain="positive"))


def test_special_gradgrad(rng):
    x = P(rng, (2, 3), "float64", domain="positive")
    for name in ("lgamma", "digamma", "erfc", "i0", "sinc"):
        gradgradcheck(lambda L, x: getattr(L, name)(x), x)
    gradgradcheck(lambda L, x: L.erfinv(x), P(rng, (2, 3), "float64", domain="unit"))
    gradgradcheck(lambda L, x: L.special.i1(x), P(rng, (2, 3), "float64"))
    # removable singularities: finite gradients at 0 like torch
    z = I([0.0, 1.0, -2.0], "float32")
    grads(lambda L, x: L.sinc(x), z)
    grads(lambda L, x: L.special.i1(x), z)
    grads(lambda L, x: L.i0(x), z)
    # accuracy over wide ranges (float64 compare: 1e-7 relative)
    wide = I(np.concatenate([np.linspace(-30, 30, 61) + 0.37, [1e-8, 50.5, 120.25, 700.5]]),
             "float64")
    for name in ("lgamma", "digamma", "i0", "sinc", "erfc"):
        both(lambda L, x: getattr(L, name)(x), wide, what=name)
    both(lambda L, x: L.special.i1(x), wide, what="i1")
    both(lambda L, x: L.erfinv(x), I([0.999999, 1e-300, -0.5, 0.9, 1.0, -1.0, 2.0], "float64"))
    # Within 1e-12 of +-1 torch's double erfinv is off by ~1e-6 relative; mpmath is the
    # reference there.
    mpmath = pytest.importorskip("mpmath")
    near1 = [1 - 1e-12, -1 + 1e-15, 1 - 2 ** -52, 0.99999999]
    got = retorch.erfinv(retorch.from_numpy(np.array(near1))).numpy()
    want = [float(mpmath.erfinv(mpmath.mpf(v))) for v in near1]
    np.testing.assert_allclose(got, want, rtol=1e-13)
    both(lambda L, x: L.erfinv(x), I(np.linspace(-0.999, 0.999, 41), "float32"))


def test_special_accuracy():
    """Dense grids against torch in float64 (1e-9 relative), and float32 results against torch
    computed in float64 and rounded once (torch's own float32 kernels are off by up to 8e-4 near
    the poles of polygamma; retorch evaluates in double, see Note [Special functions in
    double]); i0 and i1, which compute as torch's, against torch's float32 kernels."""
    x = np.concatenate([np.linspace(-20, 20, 4001) + 0.0123, np.geomspace(1e-6, 1e5, 300)])
    u = np.linspace(-0.9999, 0.9999, 2001)
    fns = [(f"polygamma({n})", (lambda n: lambda L, t: L.polygamma(n, t))(n), x)
           for n in range(6)]
    fns += [(name, (lambda m: lambda L, t: getattr(L, m)(t))(name), x)
            for name in ("lgamma", "digamma", "i0", "erfc", "sinc")]
    fns += [("i1", lambda L, t: L.special.i1(t), x), ("erfinv", lambda L, t: L.erfinv(t), u)]
    for name, f, grid in fns:
        want = f(torch, torch.from_numpy(grid)).numpy()
        got = f(retorch, retorch.from_numpy(grid)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=0, err_msg=name)
        g32 = grid.astype(np.float32)
        got32 = f(retorch, retorch.from_numpy(g32)).numpy()
        if name in ("i0", "i1"):
            # These sum torch's Chebyshev series in float, as torch's float32 kernels do.
            want32 = f(torch, torch.from_numpy(g32)).numpy()
            np.testing.assert_allclose(got32, want32, rtol=1e-6, atol=1e-30, err_msg=name)
            continue
        want32 = f(torch, torch.from_numpy(g32).double()).float().numpy()
        np.testing.assert_allclose(got32, want32, rtol=2.4e-7, atol=1e-30, err_msg=name)


@pytest.mark.parametrize("name", ["digamma", "lgamma"])
def test_float32_gamma_functions_in_long_spans(name):
    """Note [Vector digamma] and Note [Vector lgamma]: zeros, poles, infinities, NaN, subnormal
    and huge floats placed across the 512-element chunks of a contiguous float32 span, among
    positive and negative values, against torch's float64 function rounded once (NaN where
    torch's is NaN)."""
    rng = np.random.default_rng(77)
    x = rng.uniform(-40, 40, 1500)
    specials = [0.0, -0.0, -1.0, -7.0, -36.0, np.inf, -np.inf, np.nan, 1e-45, 3e38, -3e38,
                1.4616321, 1e-30, -1e-30, 5e-8, 1e8, 1.0, 2.0, 3.0, 10.0]
    x[::71][:len(specials)] = specials
    x[511], x[512], x[1499] = np.nan, -3.0, 0.0
    g32 = x.astype(np.float32)

    def check(v):
        want = getattr(torch.from_numpy(v).double(), name)().float().numpy()
        got = getattr(retorch.from_numpy(v), name)().numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=2.4e-7, atol=1e-30)
        inplace = retorch.from_numpy(v.copy())  # out is the input: poles read before written
        getattr(inplace, name + "_")()
        np.testing.assert_array_equal(inplace.numpy(), got)
    check(g32)
    # a chunk of positive values only (no reflection) and a tail shorter than a vector
    check(g32[np.isfinite(g32) & (g32 > 0)][:517])


def test_float32_lgamma_next_to_its_zeros():
    """lgamma's zeros (1, 2, and one in each negative interval) cancel its terms down to the
    result (Note [Vector lgamma]): 40 floats either side of each, within 2.4e-7 of torch's
    float64 lgamma rounded once (torch's own float32 lgamma is off by up to 6e-3 there), and
    exactly 0 at 1 and 2."""
    vals = []
    for r in (1.0, 2.0, -2.4570247, -2.7476826, -3.1435886, -3.9552986, -4.0390588, -4.9989684):
        for direction in (np.inf, -np.inf):
            v = np.float32(r)
            for _ in range(40):
                vals.append(v)
                v = np.nextafter(v, np.float32(direction))
    x = np.array(vals, dtype=np.float32)
    want = torch.from_numpy(x).double().lgamma().float().numpy()
    got = retorch.from_numpy(x).lgamma().numpy()
    np.testing.assert_allclose(got, want, rtol=2.4e-7, atol=1e-30)
    assert got[0] == 0.0 and got[80] == 0.0


def test_special_namespace(rng):
    x = P(rng, (3, 4), domain="positive")
    u = P(rng, (3, 4), domain="unit")
    for name in ("erfinv", "i0", "digamma", "sinc", "logit", "i1", "erfc", "gammaln", "psi",
                 "expit", "exp2", "expm1", "log1p", "erf"):
        arg = u if name in ("erfinv", "logit") else x
        both(lambda L, x: getattr(L.special, name)(x), arg, what=f"special.{name}")
    both(lambda L, x: L.special.polygamma(2, x), x)
    both(lambda L, x: L.special.xlogy(x, x), x)
    both(lambda L, x: L.special.logit(x, 0.1), u)
    both(lambda L, x: L.special.log_softmax(x, 1), x)
    both(lambda L, x: L.special.softmax(x, 0), x)


IGAMMA_OPS = {
    "igamma": lambda L, a, x: L.igamma(a, x), "igammac": lambda L, a, x: L.igammac(a, x),
    "igamma_": lambda L, a, x: a.clone().igamma_(x),
    "igammac_": lambda L, a, x: a.clone().igammac_(x),
    "igamma out=": lambda L, a, x: L.igamma(a, x, out=L.empty(0, dtype=a.dtype)),
    "Tensor.igammac": lambda L, a, x: a.igammac(x)}


@pytest.mark.parametrize("name", sorted(IGAMMA_OPS))
def test_igamma_ops(rng, name):
    """torch.igamma / igammac (what torch.special.gammainc / gammaincc are) in every form:
    values across layouts, dtypes and broadcasting (each regime's values are in
    test_special_swa_prune.py), promotion of an integer operand, integers refused, the gradient
    with respect to other and the refused one with respect to self, both as torch's."""
    f = IGAMMA_OPS[name]
    pos = {"domain": "positive"}
    for dt in ("float32", "float64"):
        for lay in LAYOUTS:
            both(f, P(rng, (3, 700), dt, lay, **pos), P(rng, (3, 700), dt, lay, **pos),
                 what=f"{name} {dt} {lay}")
    both(f, P(rng, (4, 5), "float64", **pos), P(rng, (5,), "float64", **pos), what="broadcast")
    if not name.endswith("_"):
        both(f, P(rng, (5,), "float32", **pos), P(rng, (4, 5), "float64", **pos), what="promote")
        both(f, I([1, 2, 3], "int64"), P(rng, (3,), "float32", **pos), what="int and float")
    raises_like_torch(f, I([1, 2], "int64"), I([1, 2], "int64"), what="integers")
    raises_like_torch(f, P(rng, (3,), **pos), P(rng, (4,), **pos), what="shape mismatch")
    both(f, I([-1.0, 0.0, 0.0, 2.0, np.inf, np.nan, 3.0], "float64"),
         I([1.0, 0.0, 2.0, 0.0, 1.0, 1.0, np.inf], "float64"), what="boundaries")
    if name in ("igamma", "igammac"):
        a, x = P(rng, (3, 4), "float64", **pos), P(rng, (3, 4), "float64", **pos)
        grads(lambda L, a, x: f(L, a.detach(), x), a, x, what="grad other")
        gradcheck(lambda L, x: f(L, a.r, x), x)
        for L in (torch, retorch):
            y = f(L, L.tensor([2.0, 3.0], requires_grad=True), L.tensor([1.5, 2.5]))
            with pytest.raises(NotImplementedError,
                               match=f"the derivative for '{name}: input' is not implemented"):
                y.sum().backward()


def test_scaled_bessel_gradients(rng):
    """i0e and i1e differentiate as torch's (to second order), with torch's node names and the
    limit 1/2 of i1e's derivative at 0; the modified Bessel functions I and K do not."""
    x = P(rng, (2, 3), "float64")
    for name in ("i0e", "i1e"):
        f = (lambda n: lambda L, t: getattr(L.special, n)(t))(name)
        gradcheck(f, x)
        gradgradcheck(f, x)
        grads(f, I([0.0, 1e-9, -2.5, 9.0, -40.0], "float32"), what=name + " at 0 and far")
        grads(f, I([0.0, 1e-20, -3.0], "float64"), what=name + " float64 at 0")
        for L in (torch, retorch):
            y = getattr(L.special, name)(L.tensor([0.5], requires_grad=True))
            assert y.grad_fn.name() == "Special" + name.upper() + "Backward0", L
    for name in ("modified_bessel_i0", "modified_bessel_k1", "scaled_modified_bessel_k0"):
        for L in (torch, retorch):
            y = getattr(L.special, name)(L.tensor([0.5, 2.5], requires_grad=True))
            assert not y.requires_grad and y.grad_fn is None, (name, L)


def test_polynomial_ops(rng):
    """The orthogonal polynomials (every regime's values are in test_special_swa_prune.py):
    layouts, broadcasting, dtype promotion (integers compute in the default dtype), a number for
    either argument, out=, both numbers refused, and results that do not require grad, as
    torch's."""
    for name in POLYNOMIALS:
        def f(L, x, n, name=name):
            return getattr(L.special, name)(x, n)
        for dt in ("float32", "float64"):
            for lay in LAYOUTS:
                x = P(rng, (3, 70), dt, lay, domain="unit")
                n = pair_from_values(np.floor(rng.uniform(-1, 12, (3, 70))), dt, lay)
                both(f, x, n, what=f"{name} {dt} {lay}")
        n = pair_from_values(np.array([0.0, 1.0, 3.0, 7.0, 10.0]), "float64")
        both(f, P(rng, (4, 1), "float64", domain="unit"), n, what=f"{name} broadcast")
        both(f, P(rng, (5,), "float32", domain="unit"), n, what=f"{name} promote")
        both(f, I([0, 1, 2], "int64"), I([2, 3, 4], "int64"), what=f"{name} integers")
        both(lambda L, x: getattr(L.special, name)(x, 5), P(rng, (6,), domain="unit"),
             what=f"{name} (x, 5)")
        both(lambda L, x: getattr(L.special, name)(x, 2.5), I([1, 2], "int64"),
             what=f"{name} (int x, 2.5)")
        both(lambda L, n: getattr(L.special, name)(0.25, n), n, what=f"{name} (0.25, n)")
        both(lambda L, x, n: getattr(L.special, name)(x, n, out=L.empty(0, dtype=x.dtype)),
             P(rng, (5,), "float64", domain="unit"), n, what=f"{name} out=")
        # One degree over a long contiguous span runs kLanes elements at a time (Note
        # [Polynomials a block at a time]); the special points fall inside blocks.
        xs = np.concatenate([np.linspace(-1.5, 1.5, 97), [1.0, -1.0, 0.0, -0.0, 0.5, np.nan,
                                                          np.inf, -np.inf, 1e-30]])
        # Chebyshev T and U past their degree bound take vector closed forms inside (-1, 1) an
        # L1-sized chunk at a time: a long span, mostly inside, the other points among them.
        long = np.concatenate([np.linspace(-0.999, 0.999, 1100), xs])
        for dt in ("float32", "float64"):
            for deg in (2, 5, 9, 30):
                both(lambda L, x: getattr(L.special, name)(x, deg),
                     pair_from_values(np.roll(xs, deg), dt), what=f"{name} span n={deg} {dt}")
            both(lambda L, x: getattr(L.special, name)(x, 50),
                 pair_from_values(np.roll(long, 530), dt), what=f"{name} long span {dt}")
        for L in (torch, retorch):
            with pytest.raises(TypeError):
                getattr(L.special, name)(0.5, 3)
            y = getattr(L.special, name)(L.tensor([0.5, -0.25], requires_grad=True), 4)
            assert not y.requires_grad, (name, L)
