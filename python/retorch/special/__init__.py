"""retorch.special: torch.special's functions, as aliases of retorch ops or composed of them."""
from .. import _C
from ._common import tensor_arg
from ._normal import ndtr, log_ndtr, erfcx, entr, xlog1py, multigammaln, round  # noqa: F401
from ._gamma import zeta  # noqa: F401
from ._bessel import spherical_bessel_j0, airy_ai  # noqa: F401
from ._polynomials import (chebyshev_polynomial_t, chebyshev_polynomial_u,  # noqa: F401
                           chebyshev_polynomial_v, chebyshev_polynomial_w,
                           shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u,
                           shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w,
                           hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l,
                           legendre_polynomial_p)

__all__ = ['airy_ai', 'bessel_j0', 'bessel_j1', 'bessel_y0', 'bessel_y1',
           'chebyshev_polynomial_t', 'chebyshev_polynomial_u', 'chebyshev_polynomial_v',
           'chebyshev_polynomial_w', 'digamma', 'entr', 'erf', 'erfc', 'erfcx', 'erfinv', 'exp2',
           'expit', 'expm1', 'gammainc', 'gammaincc', 'gammaln', 'hermite_polynomial_h',
           'hermite_polynomial_he', 'i0', 'i0e', 'i1', 'i1e', 'laguerre_polynomial_l',
           'legendre_polynomial_p', 'log1p', 'log_ndtr', 'log_softmax', 'logit', 'logsumexp',
           'modified_bessel_i0', 'modified_bessel_i1', 'modified_bessel_k0', 'modified_bessel_k1',
           'multigammaln', 'ndtr', 'ndtri', 'polygamma', 'psi', 'round',
           'shifted_chebyshev_polynomial_t', 'shifted_chebyshev_polynomial_u',
           'shifted_chebyshev_polynomial_v', 'shifted_chebyshev_polynomial_w',
           'scaled_modified_bessel_k0', 'scaled_modified_bessel_k1', 'sinc', 'softmax',
           'spherical_bessel_j0', 'xlog1py', 'xlogy', 'zeta']

erf = _C.erf
erfc = _C.erfc
erfinv = _C.erfinv
expit = _C.sigmoid
exp2 = _C.exp2
expm1 = _C.expm1
log1p = _C.log1p
gammaln = _C.lgamma
digamma = _C.digamma
psi = _C.digamma
polygamma = _C.polygamma
i0 = _C.i0
i1 = _C.special_i1
sinc = _C.sinc
logit = _C.logit
xlogy = _C.xlogy
softmax = _C.softmax
log_softmax = _C.log_softmax
logsumexp = _C.logsumexp
ndtri = _C.special_ndtri
bessel_j0 = _C.special_bessel_j0
bessel_j1 = _C.special_bessel_j1
bessel_y0 = _C.special_bessel_y0
bessel_y1 = _C.special_bessel_y1
i0e = _C.special_i0e
i1e = _C.special_i1e
modified_bessel_i0 = _C.special_modified_bessel_i0
modified_bessel_i1 = _C.special_modified_bessel_i1
modified_bessel_k0 = _C.special_modified_bessel_k0
modified_bessel_k1 = _C.special_modified_bessel_k1
scaled_modified_bessel_k0 = _C.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _C.special_scaled_modified_bessel_k1


def _tensors_call(op, name, input, other, out):
    """op(input, other[, out=out]) with torch's message for a non-tensor operand."""
    tensor_arg(name, input, "input", 1)
    tensor_arg(name, other, "other", 2)
    return op(input, other) if out is None else op(input, other, out=out)


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function P(input, other): retorch.igamma."""
    return _tensors_call(_C.igamma, "special_gammainc", input, other, out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function Q(input, other): retorch.igammac."""
    return _tensors_call(_C.igammac, "special_gammaincc", input, other, out)
