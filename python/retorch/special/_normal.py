"""The normal-distribution and elementary special functions: ndtr, log_ndtr, ndtri, erfcx,
entr, xlog1py, multigammaln and round, with torch's derivative formulas."""
import math

from .. import _C
from ..autograd.function import Function
from ._common import binary_args, finish, in_float64, polevl, select, unary_arg, unary_op

_SQRT1_2 = math.sqrt(0.5)
_SQRT_2PI = math.sqrt(2 * math.pi)
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


def _log_ndtr(x):
    # SciPy's split, as torch: the erfcx form keeps the far left tail from underflowing.
    t = x * _SQRT1_2
    left = _C.log(_erfcx(-t) / 2) - t * t
    right = _C.log1p(-_C.erfc(t) / 2)
    return select(right, x < -1.0, left)


log_ndtr = unary_op("log_ndtr", _log_ndtr,
                    lambda g, x, y: g / _SQRT_2PI * (-(y + x.pow(2) / 2)).exp(),
                    "SpecialLogNdtrBackward0")

# Cephes ndtri: a rational fit for |p - 1/2| <= 1/2 - exp(-2), and in z = sqrt(-2 log p) two
# fits for the tails (z < 8 and z >= 8).
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2,
             -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)
_EXP_M2 = 0.13533528323661269189  # exp(-2)


def _ndtri(p):
    upper = p > 1 - _EXP_M2
    y = select(p, upper, 1 - p)
    c = y - 0.5
    c2 = c * c
    central = (c + c * (c2 * polevl(c2, _NDTRI_P0) / polevl(c2, _NDTRI_Q0))) * _SQRT_2PI
    t = _C.sqrt(-2.0 * _C.log(y))
    z = 1 / t
    near = z * polevl(z, _NDTRI_P1) / polevl(z, _NDTRI_Q1)
    far = z * polevl(z, _NDTRI_P2) / polevl(z, _NDTRI_Q2)
    tail = t - _C.log(t) / t - select(near, t >= 8.0, far)
    r = select(select(-tail, upper, tail), y > _EXP_M2, central)
    r = select(r, p == 0, -math.inf)
    r = select(r, p == 1, math.inf)
    return select(r, (p < 0) | (p > 1), math.nan)


ndtri = unary_op("ndtri", _ndtri,
                 lambda g, x, y: g * _SQRT_2PI * (y.square() / 2).exp(),
                 "SpecialNdtriBackward0")


def _entr(x):
    r = select(_C.full_like(x, -math.inf), x > 0, -x * _C.log(x))
    r = select(r, x == 0, 0.0)
    return select(r, _C.isnan(x), x)


entr = unary_op("entr", _entr, lambda g, x, y: g * (-(1 + x.log())), "SpecialEntrBackward0")


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
