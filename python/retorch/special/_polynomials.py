"""The orthogonal polynomials of torch.special (Chebyshev T/U/V/W and their shifted forms,
Hermite H/He, Laguerre L, Legendre P) at x for integer degree n: ops (special_chebyshev_
polynomial_t and kin); these take a Python number for either argument, as torch's Number
overloads."""
import sys

from .. import _C
from ._common import float_dtype

Tensor = _C.Tensor


def _polynomial(name):
    op_name = "special_" + name
    op = getattr(_C, op_name)

    def fn(x, n, *, out=None):
        tx, tn = isinstance(x, Tensor), isinstance(n, Tensor)
        if not (tx and tn):
            if not (tx or tn):
                raise TypeError(
                    f"{op_name}() received an invalid combination of arguments - got "
                    f"({type(x).__name__}, {type(n).__name__}), but expected one of: "
                    "(Tensor x, Tensor n), (Number x, Tensor n), (Tensor x, Number n)")
            # A number takes the dtype the pair promotes to (as torch's wrapped scalar).
            dt = float_dtype(sys.modules["retorch"].result_type(x, n))
            dev = (x if tx else n).device
            if not tx:
                x = _C.full([], x, dtype=dt, device=dev)
            if not tn:
                n = _C.full([], n, dtype=dt, device=dev)
        return op(x, n) if out is None else op(x, n, out=out)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial("hermite_polynomial_h")
hermite_polynomial_he = _polynomial("hermite_polynomial_he")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l")
legendre_polynomial_p = _polynomial("legendre_polynomial_p")
