"""Spherical j0, as a vectorized port of torch's Cephes kernel (both branches are evaluated, then
where() picks, in torch's order). The other Bessel functions and Airy's Ai are ops
(special_bessel_j0, special_i0e, special_modified_bessel_k0, special_airy_ai and kin)."""
from .. import _C
from ._common import polevl, select, unary_op

_SPHERICAL_J0_SERIES = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
                        1.0 / 120.0, -1.0 / 6.0, 1.0)


def _spherical_bessel_j0(x):
    r = select(_C.sin(x) / x, _C.abs(x) < 0.5, polevl(x * x, _SPHERICAL_J0_SERIES))
    return select(r, _C.isinf(x), 0.0)


spherical_bessel_j0 = unary_op("spherical_bessel_j0", _spherical_bessel_j0)
airy_ai = _C.special_airy_ai
