"""FisherSnedecor (the F distribution, a ratio of scaled chi-squares) and VonMises (the circular
normal, sampled by Best and Fisher's rejection method), as torch.distributions has them."""
import math
from numbers import Number

from .. import _C
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _finfo, broadcast_all, lazy_property

__all__ = ["FisherSnedecor", "VonMises"]


def _nan_where(mask, value):
    return _C.where(mask, _C.full_like(value, math.nan), value)


class FisherSnedecor(Distribution):
    """F(df1, df2) = (X1 / df1) / (X2 / df2) for independent X1 ~ Chi2(df1), X2 ~ Chi2(df2)."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        # Chi2(df) / df is Gamma(df / 2, rate=df)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        scalar = isinstance(df1, Number) and isinstance(df2, Number)
        super().__init__(() if scalar else tuple(self.df1.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return self._expand_params(FisherSnedecor, batch_shape, ("df1", "df2"), new)

    @property
    def mean(self):
        return _nan_where(self.df2 <= 2, self.df2 / (self.df2 - 2))

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _nan_where(self.df1 <= 2, mode)

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        var = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return _nan_where(df2 <= 4, var)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = _finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        # log of 1 / B(df1/2, df2/2) * ratio^(df1/2) * x^(df1/2 - 1) * (1 + ratio x)^-(df1+df2)/2
        log_inv_beta = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_inv_beta + half1 * ratio.log() + (half1 - 1) * _C.log(value)
                - (half1 + half2) * _C.log1p(ratio * value))


def _log_bessel_i(x, order):
    """log I_order(x) for x > 0 and order 0 or 1, from the exponentially scaled Bessel
    functions (torch 1.13 uses polynomial fits that agree to ~1e-7)."""
    from .. import special
    scaled = special.i0e(x) if order == 0 else special.i1e(x)
    return scaled.log() + x


def _best_fisher_sample(loc, concentration, proposal_r, shape):
    """Angles in [-pi, pi) from VonMises(loc, concentration): Best and Fisher's (1979) wrapped
    Cauchy envelope, redrawing the rejected entries. Drawn in float64, whose rounding the
    acceptance test needs when concentration is large."""
    dtype = loc.dtype
    kappa = concentration.to(_C.float64).expand(list(shape)).reshape(-1)
    r = proposal_r.to(_C.float64).expand(list(shape)).reshape(-1)
    n = kappa.numel()
    angle = _C.zeros([n], dtype=_C.float64)
    todo = _C.arange(n)
    while todo.numel() > 0:
        u = _C.rand([3, todo.numel()], dtype=_C.float64)
        k, rr = kappa[todo], r[todo]
        z = _C.cos(math.pi * u[0])
        f = (1 + rr * z) / (rr + z)
        c = k * (rr - f)
        accept = ((c * (2 - c) - u[1]) > 0) | ((c / u[1]).log() + 1 - c >= 0)
        angle[todo[accept]] = ((u[2] - 0.5).sign() * f.acos())[accept]
        todo = todo[~accept]
    angle = angle.reshape(list(shape)).to(dtype)
    return (angle + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The circular von Mises distribution: density exp(concentration * cos(x - loc)) /
    (2 pi I0(concentration)). loc and values may be any real angle (taken modulo 2 pi);
    mean and variance are the circular ones."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        self._proposal_r = self._envelope(self.concentration)
        super().__init__(tuple(self.loc.shape), (), validate_args=validate_args)

    @staticmethod
    def _envelope(kappa):
        # the wrapped Cauchy envelope's parameter, Best and Fisher's r = (1 + rho^2) / (2 rho)
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return (1 + rho ** 2) / (2 * rho)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        new._proposal_r = self._proposal_r.expand(tuple(batch_shape))
        return self._expand_params(VonMises, batch_shape, ("loc", "concentration"), new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * _C.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_bessel_i(self.concentration, 0))

    def sample(self, sample_shape=()):
        from ..autograd import no_grad
        with no_grad():
            return _best_fisher_sample(self.loc, self.concentration, self._proposal_r,
                                       self._extended_shape(sample_shape))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        # 1 - E[cos(x - loc)] = 1 - I1(k) / I0(k)
        return 1 - (_log_bessel_i(self.concentration, 1)
                    - _log_bessel_i(self.concentration, 0)).exp()
