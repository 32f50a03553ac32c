"""Bessel-family special functions: i0e, i1e, the modified Bessel functions I0, I1, K0, K1 (and
scaled K), spherical j0 and Airy Ai, as vectorized ports of torch's Cephes kernels (every branch
is evaluated, then where() picks, in torch's order). J0, J1, Y0 and Y1 are ops
(special_bessel_j0 and kin)."""
import math

from .. import _C
from . import _bessel_tables as T
from ._common import any_true, chbevl, const, polevl, select, unary_op

def _i0e(x):
    a = _C.abs(x)
    return select(chbevl(32.0 / a - 2.0, T.I0_B) / _C.sqrt(a), a <= 8.0,
                  chbevl(a / 2.0 - 2.0, T.I0_A))


def _i1e_abs(a):
    return select(chbevl(32.0 / a - 2.0, T.I1_B) / _C.sqrt(a), a <= 8.0,
                  chbevl(a / 2.0 - 2.0, T.I1_A) * a)


def _i1e(x):
    r = _i1e_abs(_C.abs(x))
    return select(r, x < 0, -r)


def _i0e_backward(grad, x, y):
    return grad * (i1e(x) - _C.sign(x) * y)


def _i1e_backward(grad, x, y):
    # At x = 0 the formula is 0/0; the limit there is 1/2 (as torch's i1e_backward).
    from .. import finfo
    eps = finfo(x.dtype).eps
    not_tiny = _C.abs(x) > eps
    sx = select(const(x, eps), not_tiny, x)
    dx = i0e(sx) - y * (_C.sign(sx) + sx.reciprocal())
    return grad * select(const(x, 0.5), not_tiny, dx)


i0e = unary_op("i0e", _i0e, _i0e_backward, "SpecialI0EBackward0")
i1e = unary_op("i1e", _i1e, _i1e_backward, "SpecialI1EBackward0")


def _modified_i0(x):
    a = _C.abs(x)
    return _C.exp(a) * _i0e(a)


def _modified_i1(x):
    a = _C.abs(x)
    r = _C.exp(a) * _i1e_abs(a)
    return select(r, x < 0, -r)


def _k_small_large(x, small, large):
    """K0/K1's shared frame: +inf at 0, NaN below, a fit on (0, 2], another above."""
    r = select(large, x <= 2.0, small)
    r = select(r, x < 0, math.nan)
    return select(r, x == 0, math.inf)


def _k0_parts(x):
    small = chbevl(x * x - 2.0, T.K0_A) - _C.log(0.5 * x) * _modified_i0(x)
    large = chbevl(8.0 / x - 2.0, T.K0_B) / _C.sqrt(x)
    return small, large


def _k1_parts(x):
    small = _C.log(0.5 * x) * _modified_i1(x) + chbevl(x * x - 2.0, T.K1_A) / x
    large = chbevl(8.0 / x - 2.0, T.K1_B) / _C.sqrt(x)
    return small, large


def _modified_k0(x):
    small, large = _k0_parts(x)
    return _k_small_large(x, small, _C.exp(-x) * large)


def _modified_k1(x):
    small, large = _k1_parts(x)
    return _k_small_large(x, small, _C.exp(-x) * large)


def _scaled_k0(x):
    small, large = _k0_parts(x)
    return _k_small_large(x, small * _C.exp(x), large)


def _scaled_k1(x):
    small, large = _k1_parts(x)
    return _k_small_large(x, small * _C.exp(x), large)


_SPHERICAL_J0_SERIES = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
                        1.0 / 120.0, -1.0 / 6.0, 1.0)


def _spherical_bessel_j0(x):
    r = select(_C.sin(x) / x, _C.abs(x) < 0.5, polevl(x * x, _SPHERICAL_J0_SERIES))
    return select(r, _C.isinf(x), 0.0)


def _airy_series(x):
    """Ai's Maclaurin series f and g (Ai = c1 f - c2 g), summed until m/f < eps."""
    eps = 2.220446049250313e-16
    z = x * x * x
    f = const(x, 1.0)
    g = x
    m = const(x, 1.0)
    n = x
    k = 1.0
    active = const(x, 1.0) > 0
    while any_true(active):
        m = m * z
        k += 1.0
        m = m / k
        n = n * z
        k += 1.0
        n = n / k
        m = m / k
        f = select(f, active, f + m)
        k += 1.0
        n = n / k
        g = select(g, active, g + n)
        active = active & (_C.abs(m / f) > eps)
    return 0.355028053887817239260 * f - 0.258819403792806798405 * g


def _airy_ai(x):
    left = x < -2.09
    right = x >= 2.09
    # Oscillatory asymptotic form for x < -2.09.
    xl = select(const(x, -3.0), left, x)
    tl = -2.0 * xl * _C.sqrt(-xl) / 3.0
    z = 1.0 / tl
    zz = z * z
    phase = tl + 0.25 * math.pi
    osc = 5.64189583547756286948e-01 / _C.sqrt(_C.sqrt(-xl)) * (
        _C.sin(phase) * (1.0 + zz * polevl(zz, T.AIRY_AFN) / polevl(zz, T.AIRY_AFD)) -
        _C.cos(phase) * (z * polevl(zz, T.AIRY_AGN) / polevl(zz, T.AIRY_AGD)))
    # Decaying asymptotic form for x >= 2.09.
    xr = select(const(x, 3.0), right, x)
    zeta = 2.0 * xr * _C.sqrt(xr) / 3.0
    iz = 1.0 / zeta
    decay = 5.64189583547756286948e-01 * (polevl(iz, T.AIRY_AN) / polevl(iz, T.AIRY_AD)) / (
        2.0 * _C.sqrt(_C.sqrt(xr)) * _C.exp(zeta))
    mid = ~left & ~right  # (NaN stays here, and the series propagates it)
    r = _airy_series(select(const(x, 0.0), mid, x))
    r = select(select(r, right, decay), left, osc)
    r = select(r, x > 103.892, 0.0)
    return select(r, _C.isinf(x), math.nan)


modified_bessel_i0 = unary_op("modified_bessel_i0", _modified_i0)
modified_bessel_i1 = unary_op("modified_bessel_i1", _modified_i1)
modified_bessel_k0 = unary_op("modified_bessel_k0", _modified_k0)
modified_bessel_k1 = unary_op("modified_bessel_k1", _modified_k1)
scaled_modified_bessel_k0 = unary_op("scaled_modified_bessel_k0", _scaled_k0)
scaled_modified_bessel_k1 = unary_op("scaled_modified_bessel_k1", _scaled_k1)
spherical_bessel_j0 = unary_op("spherical_bessel_j0", _spherical_bessel_j0)
airy_ai = unary_op("airy_ai", _airy_ai)
