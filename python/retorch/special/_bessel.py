"""Spherical j0 and Airy Ai, as vectorized ports of torch's Cephes kernels (every branch is
evaluated, then where() picks, in torch's order). The other Bessel functions are ops
(special_bessel_j0, special_i0e, special_modified_bessel_k0 and kin)."""
import math

from .. import _C
from . import _bessel_tables as T
from ._common import any_true, const, polevl, select, unary_op

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


spherical_bessel_j0 = unary_op("spherical_bessel_j0", _spherical_bessel_j0)
airy_ai = unary_op("airy_ai", _airy_ai)
