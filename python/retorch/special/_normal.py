"""The normal-distribution and elementary special functions: ndtr, log_ndtr, ndtri, erfcx,
entr, xlog1py, multigammaln and round, with torch's derivative formulas."""
import math

from .. import _C
from ..autograd.function import Function
from ._common import binary_args, finish, in_float64, polevl, select, unary_arg, unary_op

_SQRT1_2 = math.sqrt(0.5)
_ISQRT_PI = 1 / math.sqrt(math.pi)


def ndtr(input, *, out=None):
    # torch composes it the same way (so very negative x rounds to 0, not to a tiny value).
    x = unary_arg("special_ndtr", input)
    return finish((1 + _C.erf(x * _SQRT1_2)) * 0.5, out)


# erfcx(x) = exp(x^2) erfc(x). torch uses Johnson's piecewise Chebyshev fit (Faddeeva); here
# exp(x^2) erfc(x) itself serves below x = 26 (relative error about x^2 eps, under 1e-13), and
# above it, where erfc underflows, the asymptotic series in u = 1/(2x^2), whose eighth term is
# below 1e-18 there. Below x = -26.63 exp(x^2) overflows to inf, as torch's result does.
_ERFCX_ASYMPTOTIC = (-135135.0, 10395.0, -945.0, 105.0, -15.0, 3.0, -1.0, 1.0)


def _erfcx(x):
    direct = _C.exp(x * x) * _C.erfc(x)
    u = 1 / (2 * x * x)
    asymptotic = polevl(u, _ERFCX_ASYMPTOTIC) * _ISQRT_PI / x
    return select(direct, x >= 26.0, asymptotic)


erfcx = unary_op("erfcx", _erfcx,
                 lambda g, x, y: (2.0 * x * y - 2.0 / math.sqrt(math.pi)) * g,
                 "SpecialErfcxBackward0")


# SciPy's split, as torch's (the erfcx form keeps the far left tail from underflowing), and
# torch's entr: ops (SpecialAiryNdtr.cpp).
log_ndtr = _C.special_log_ndtr
entr = _C.special_entr


def _xlog1py(x, y):
    r = select(x * _C.log1p(y), x == 0, 0.0)
    return select(r, _C.isnan(y), math.nan)


class _Xlog1py(Function):
    _backward_name = "SpecialXlog1PyBackward0"

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return in_float64(_xlog1py, x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = grad * xlog1py((x != 0).to(x.dtype), y) if ctx.needs_input_grad[0] else None
        gy = grad * x / (y + 1) if ctx.needs_input_grad[1] else None
        return gx, gy


def xlog1py(input, other, *, out=None):
    """input * log1p(other), 0 where input is 0 (unless other is NaN)."""
    return finish(_Xlog1py.apply(*binary_args("special_xlog1py", input, other)), out)


def multigammaln(input, p, *, out=None):
    from .. import mvlgamma
    return finish(mvlgamma(input, p), out)


round = _C.round
