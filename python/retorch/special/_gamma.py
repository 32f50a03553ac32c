"""The regularized incomplete gamma functions (gammainc, gammaincc) and the Hurwitz zeta
function: vectorized ports of torch's Cephes/SciPy kernels. Each regime (series, continued
fraction, Temme's asymptotic expansion) runs only on its own elements, and its loop stops when
all of them have converged."""
import math

from .. import _C
from ..autograd.function import Function
from ._common import (MACHEP, any_true, binary_args, const, finish, in_float64, not_implemented,
                      on_subset, polevl, select)
from ._igamma_table import IGAM_D

_MAXITER = 2000
_MAXLOG = 7.09782712893383996843E2
_BIG = 4.503599627370496e15
_BIGINV = 2.22044604925031308085e-16
_PI_F = 3.1415927410125732  # torch's asymptotic series uses c10::pi<float> here

# Boost's Lanczos approximation (g = 6.02...), as lanczos_sum_expg_scaled(x) = num(x) / den(x).
_LANCZOS_G = 6.024680040776729583740234375
_LANCZOS_NUM = (0.006061842346248906525783753964555936883222,
                0.5098416655656676188125178644804694509993,
                19.51992788247617482847860966235652136208,
                449.9445569063168119446858607650988409623,
                6955.999602515376140356310115515198987526,
                75999.29304014542649875303443598909137092,
                601859.6171681098786670226533699352302507,
                3481712.15498064590882071018964774556468,
                14605578.08768506808414169982791359218571,
                43338889.32467613834773723740590533316085,
                86363131.28813859145546927288977868422342,
                103794043.1163445451906271053616070238554,
                56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (1., 66., 1925., 32670., 357423., 2637558., 13339535., 45995730., 105258076.,
                150917976., 120543840., 39916800., 0.)


def _lanczos_sum_expg_scaled(x):
    # ratevl: a polynomial in x for |x| <= 1, in 1/x (coefficients reversed) above.
    big = _C.abs(x) > 1
    y = select(x, big, 1 / x)
    num = select(polevl(y, _LANCZOS_NUM), big, polevl(y, _LANCZOS_NUM[::-1]))
    den = select(polevl(y, _LANCZOS_DEN), big, polevl(y, _LANCZOS_DEN[::-1]))
    return num / den


def _igam_fac(a, x):
    """x^a exp(-x) / gamma(a), through Lanczos where a and x are close (cancellation)."""
    ax = a * _C.log(x) - x - _C.lgamma(a)
    far = select(_C.exp(ax), ax < -_MAXLOG, 0.0)
    fac = a + _LANCZOS_G - 0.5
    res = _C.sqrt(fac / math.e) / _lanczos_sum_expg_scaled(a)
    small = res * _C.exp(a - x) * _C.pow(x / fac, a)
    numfac = (x - a - _LANCZOS_G + 0.5) / fac
    large = res * _C.exp(a * (_C.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac)
    near = select(large, (a < 200) & (x < 200), small)
    return select(near, _C.abs(a - x) > 0.4 * _C.abs(a), far)


def _igam_series(a, x):
    """igam by DLMF 8.11.4."""
    ax = _igam_fac(a, x)
    r = a
    c = const(a, 1.0)
    ans = const(a, 1.0)
    active = ax != 0
    for _ in range(_MAXITER):
        if not any_true(active):
            break
        r = r + 1.0
        c = c * x / r
        ans = select(ans, active, ans + c)
        active = active & ~(c <= MACHEP * ans)
    return select(ans * ax / a, ax == 0, 0.0)


def _igamc_series(a, x):
    """igamc by DLMF 8.7.3, arranged against cancellation (small x)."""
    fac = const(a, 1.0)
    total = const(a, 0.0)
    active = const(a, 1.0) > 0
    for n in range(1, _MAXITER):
        if not any_true(active):
            break
        fac = fac * (-x / n)
        term = fac / (a + n)
        total = select(total, active, total + term)
        active = active & ~(_C.abs(term) <= MACHEP * _C.abs(total))
    logx = _C.log(x)
    return -_C.expm1(a * logx - _C.lgamma(1 + a)) - _C.exp(a * logx - _C.lgamma(a)) * total


def _igamc_continued_fraction(a, x):
    """igamc by DLMF 8.9.2 (large x)."""
    ax = _igam_fac(a, x)
    y = 1.0 - a
    z = x + y + 1.0
    pkm2 = const(a, 1.0)
    qkm2 = x
    pkm1 = x + 1.0
    qkm1 = z * x
    ans = pkm1 / qkm1
    active = ax != 0
    c = 0.0
    for _ in range(_MAXITER):
        if not any_true(active):
            break
        c += 1.0
        y = y + 1.0
        z = z + 2.0
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk != 0
        r = pk / qk
        t = select(const(a, 1.0), nonzero, _C.abs((ans - r) / r))
        ans = select(ans, active & nonzero, r)
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        big = _C.abs(pk) > _BIG
        pkm2, pkm1 = select(pkm2, big, pkm2 * _BIGINV), select(pkm1, big, pkm1 * _BIGINV)
        qkm2, qkm1 = select(qkm2, big, qkm2 * _BIGINV), select(qkm1, big, qkm1 * _BIGINV)
        active = active & ~(t <= MACHEP)
    return select(ans * ax, ax == 0, 0.0)


def _igam_asymptotic(a, x, igam):
    """igam (igam=True) or igamc by Temme's expansion, DLMF 8.12.3/8.12.4 (large a near x)."""
    sgn = -1.0 if igam else 1.0
    sigma = (x - a) / a
    e = _C.sqrt(-2 * (_C.log1p(sigma) - sigma))
    lam = x / a
    eta = select(select(const(a, 0.0), lam < 1, -e), lam > 1, e)
    res = 0.5 * _C.erfc(sgn * eta * _C.sqrt(a / 2))
    etapow = [const(a, 1.0)]
    for _ in range(24):
        etapow.append(etapow[-1] * eta)
    total = const(a, 0.0)
    afac = const(a, 1.0)
    absold = const(a, math.inf)
    outer = const(a, 1.0) > 0
    for k in range(25):
        if not any_true(outer):
            break
        ck = const(a, IGAM_D[k][0])
        inner = outer
        for n in range(1, 25):
            if not any_true(inner):
                break
            ckterm = IGAM_D[k][n] * etapow[n]
            ck = select(ck, inner, ck + ckterm)
            inner = inner & ~(_C.abs(ckterm) < MACHEP * _C.abs(ck))
        term = ck * afac
        absterm = _C.abs(term)
        outer = outer & ~(absterm > absold)
        total = select(total, outer, total + term)
        outer = outer & ~(absterm < MACHEP * _C.abs(total))
        absold = absterm
        afac = afac / a
    return res + sgn * _C.exp(-0.5 * a * eta * eta) * total / _C.sqrt(2 * _PI_F * a)


def _asymptotic_regime(a, x):
    ratio = _C.abs(x - a) / a
    return (((a > 20) & (a < 200) & (ratio < 0.3)) |
            ((a > 200) & (ratio < 4.5 / _C.sqrt(a))))


def _igammac_regular(a, x):
    """igammac for 0 < a, x < inf, choosing the regime as torch's calc_igammac does."""
    out = _C.empty_like(a)
    asym = _asymptotic_regime(a, x)
    gt = x > 1.1
    small = x <= 0.5
    lower = (gt & (x < a)) | (small & (-0.4 / _C.log(x) < a)) | (~gt & ~small & (x * 1.1 < a))
    lower = ~asym & lower
    frac = ~asym & gt & ~(x < a)
    series = ~asym & ~lower & ~frac
    on_subset(out, asym, lambda a, x: _igam_asymptotic(a, x, False), a, x)
    on_subset(out, lower, lambda a, x: 1.0 - _igam_series(a, x), a, x)
    on_subset(out, frac, _igamc_continued_fraction, a, x)
    return on_subset(out, series, _igamc_series, a, x)


def _igamma_regular(a, x):
    out = _C.empty_like(a)
    asym = _asymptotic_regime(a, x)
    upper = ~asym & (x > 1.0) & (x > a)
    on_subset(out, asym, lambda a, x: _igam_asymptotic(a, x, True), a, x)
    on_subset(out, upper, lambda a, x: 1.0 - _igammac_regular(a, x), a, x)
    return on_subset(out, ~asym & ~upper, _igam_series, a, x)


def _incomplete_gamma(a, x, lower):
    """SciPy's boundary values, tested in torch's order, then the regular kernel on the rest
    (a NaN that no boundary test catches gives NaN)."""
    a, x = a.contiguous(), x.contiguous()
    lo, hi = (0.0, 1.0) if lower else (1.0, 0.0)
    bad = (x < 0) | (a < 0)
    a_zero = a == 0
    x_zero = x == 0
    a_inf = _C.isinf(a)
    x_inf = _C.isinf(x)
    edge = bad | a_zero | x_zero | a_inf | x_inf | _C.isnan(a) | _C.isnan(x)
    out = const(a, math.nan)
    on_subset(out, ~edge, _igamma_regular if lower else _igammac_regular, a, x)
    out = select(out, x_inf, hi)
    out = select(out, a_inf, select(const(a, lo), x_inf, math.nan))
    out = select(out, x_zero, lo)
    out = select(out, a_zero, select(const(a, math.nan), x > 0, hi))
    return select(out, bad, math.nan)


def _gamma_density_term(a, x):
    return _C.exp((a - 1) * _C.log(x) - x - _C.lgamma(a))


class _Igamma(Function):
    _backward_name = "IgammaBackward0"

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return in_float64(lambda a, x: _incomplete_gamma(a, x, True), a, x)

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            raise not_implemented("igamma: input")
        a, x = ctx.saved_tensors
        return None, grad * _gamma_density_term(a, x)


class _Igammac(Function):
    _backward_name = "IgammacBackward0"

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return in_float64(lambda a, x: _incomplete_gamma(a, x, False), a, x)

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            raise not_implemented("igammac: input")
        a, x = ctx.saved_tensors
        return None, -grad * _gamma_density_term(a, x)


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function P(input, other)."""
    return finish(_Igamma.apply(*binary_args("special_gammainc", input, other, False)), out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function Q(input, other)."""
    return finish(_Igammac.apply(*binary_args("special_gammaincc", input, other, False)), out)


# Euler-Maclaurin: (2k)! / B_2k, the denominators of the tail correction terms.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta_series(x, q):
    """Cephes zeta for x > 1: direct sum until q + i > 9 (at least 9 terms), then the
    Euler-Maclaurin tail; an element stops as soon as a term falls below MACHEP of the sum."""
    s = _C.pow(q, -x)
    a = q
    b = const(q, 0.0)
    done = const(q, 0.0) > 0
    looping = ~done
    i = 0
    while True:
        cont = looping if i < 9 else looping & (a <= 9.0)
        if not any_true(cont):
            break
        i += 1
        a = select(a, cont, a + 1.0)
        term = _C.pow(a, -x)
        b = select(b, cont, term)
        s = select(s, cont, s + term)
        early = cont & (-MACHEP * s < b) & (b < MACHEP * s)
        done = done | early
        looping = cont & ~early
    active = ~done
    w = a
    s = select(s, active, s + b * w / (x - 1.0) - 0.5 * b)
    fac = const(q, 1.0)
    k = 0.0
    for coef in _ZETA_A:
        if not any_true(active):
            break
        fac = fac * (x + k)
        b = b / w
        t = fac * b / coef
        s_new = s + t
        s = select(s, active, s_new)
        active = active & ~(_C.abs(t / s_new) < MACHEP)
        k += 1.0
        fac = fac * (x + k)
        b = b / w
        k += 1.0
    return s


def _zeta(x, q):
    x, q = x.contiguous(), q.contiguous()
    pole = (x == 1) | ((q <= 0) & (q == _C.floor(q)))
    nan = (x < 1) | ((q <= 0) & (x != _C.floor(x)))
    out = const(x, math.nan)
    on_subset(out, ~pole & ~nan, _zeta_series, x, q)
    # torch tests x == 1, then x < 1, then the poles of q.
    out = select(select(out, (q <= 0) & (q == _C.floor(q)), math.inf), x < 1, math.nan)
    return select(out, x == 1, math.inf)


class _Zeta(Function):
    _backward_name = "SpecialZetaBackward0"

    @staticmethod
    def forward(ctx, x, q):
        ctx.save_for_backward(x, q)
        return in_float64(_zeta, x, q)

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            raise not_implemented("zeta")
        x, q = ctx.saved_tensors
        return None, grad * -x * zeta(x + 1.0, q)


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function sum_k (other + k)^-input."""
    return finish(_Zeta.apply(*binary_args("special_zeta", input, other)), out)
