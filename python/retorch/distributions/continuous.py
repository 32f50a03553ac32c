"""Continuous location-scale families over retorch's operators: Normal, Laplace, Uniform,
Exponential, Cauchy, StudentT and ContinuousBernoulli, as torch.distributions has them."""
import math
from numbers import Number

from .. import _C
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Chi2
from .utils import (_finfo, _standard_normal, broadcast_all, clamp_probs, lazy_property,
                    logits_to_probs, probs_to_logits)

__all__ = ["Normal", "Laplace", "Uniform", "Exponential", "Cauchy", "StudentT",
           "ContinuousBernoulli"]


def _batch_shape(tensor, *args):
    return () if all(isinstance(a, Number) for a in args) else tuple(tensor.shape)


def _rand(shape, like):
    return _C.rand(list(shape), dtype=like.dtype, device=like.device)


class _LocScale(Distribution):
    """The real-valued loc-scale families (Normal, Laplace, Cauchy): loc and scale broadcast
    together, loc the mode (and, where it exists, the mean). Each family keeps its own expand,
    so a subclass that does not override it is refused as in torch."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape(self.loc, loc, scale), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


class Normal(_LocScale, ExponentialFamily):
    _mean_carrier_measure = 0

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, ("loc", "scale"), _instance)

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        eps = _standard_normal(self._extended_shape(sample_shape), self.loc.dtype, self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = math.log(self.scale) if isinstance(self.scale, Number) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(
            math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + _C.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * _C.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + _C.log(self.scale)

    @property
    def _natural_params(self):
        # t(x) = (x, x^2): eta = (loc / var, -1 / (2 var))
        var = self.scale.pow(2)
        return (self.loc / var, -0.5 * var.reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * _C.log(-math.pi / y)


class Laplace(_LocScale):
    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, ("loc", "scale"), _instance)

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=()):
        eps = _finfo(self.loc.dtype).eps
        u = _rand(self._extended_shape(sample_shape), self.loc) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * _C.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -_C.log(2 * self.scale) - _C.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * _C.expm1(-d.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * _C.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + _C.log(2 * self.scale)


class Uniform(Distribution):
    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(_batch_shape(self.low, low, high), validate_args=validate_args)
        if self._validate_args and not bool(_C.lt(self.low, self.high).all()):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Uniform, batch_shape, ("low", "high"), _instance)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        u = _rand(self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return _C.log(lb.mul(ub)) - _C.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return _C.log(self.high - self.low)


class Exponential(ExponentialFamily):
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(_batch_shape(self.rate, rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, ("rate",), _instance)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return _C.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        u = _rand(self._extended_shape(sample_shape), self.rate)
        return -_C.log1p(-u) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - _C.exp(-self.rate * value)

    def icdf(self, value):
        return -_C.log(1 - value) / self.rate

    def entropy(self):
        return 1.0 - _C.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -_C.log(-x)


class Cauchy(_LocScale):
    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, ("loc", "scale"), _instance)

    @property
    def mean(self):
        return _C.full(list(self._extended_shape()), math.nan, dtype=self.loc.dtype)

    @property
    def variance(self):
        return _C.full(list(self._extended_shape()), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        u = _rand(self._extended_shape(sample_shape), self.loc)
        return self.loc + _C.tan(math.pi * (u - 0.5)) * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (1 + ((value - self.loc) / self.scale) ** 2).log())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _C.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return _C.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0., scale=1., validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        new._chi2 = self._chi2.expand(batch_shape)
        return self._expand_params(StudentT, batch_shape, ("df", "loc", "scale"), new)

    @property
    def mean(self):
        return _C.where(self.df <= 1, _C.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        m = _C.where(df > 2, finite, _C.full_like(df, math.inf))
        return _C.where(df <= 1, _C.full_like(df, math.nan), m)

    def rsample(self, sample_shape=()):
        # X ~ Normal(0, 1), Z ~ Chi2(df): X / sqrt(Z / df) ~ StudentT(df)
        x = _standard_normal(self._extended_shape(sample_shape), self.df.dtype, self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * _C.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + _C.lgamma(0.5 * self.df) - _C.lgamma(0.5 * (self.df + 1.)))
        return -0.5 * (self.df + 1.) * _C.log1p(y ** 2. / self.df) - z

    def entropy(self):
        lbeta = (_C.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - _C.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log() + 0.5 * (self.df + 1)
                * (_C.digamma(0.5 * (self.df + 1)) - _C.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)


class ContinuousBernoulli(ExponentialFamily):
    """The continuous relaxation of Bernoulli on [0, 1] (Loaiza-Ganem & Cunningham), with
    torch's Taylor expansions inside the unstable region lims around probs = 0.5."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            self.probs, = broadcast_all(probs)
            # checked before the clamp below would hide an out-of-range value
            if validate_args is not None:
                if not bool(self.arg_constraints["probs"].check(self.probs).all()):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            self.logits, = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(() if is_scalar else tuple(self._param.shape),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        return self._expand_params(ContinuousBernoulli, batch_shape, ("probs", "logits"), new)

    def _outside_unstable_region(self):
        return _C.le(self.probs, self._lims[0]) | _C.gt(self.probs, self._lims[1])

    def _cut_probs(self):
        return _C.where(self._outside_unstable_region(), self.probs,
                        self._lims[0] * _C.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below = _C.where(_C.le(cut, 0.5), cut, _C.zeros_like(cut))
        above = _C.where(_C.ge(cut, 0.5), cut, _C.ones_like(cut))
        log_norm = _C.log(_C.abs(_C.log1p(-cut) - _C.log(cut))) - _C.where(
            _C.le(cut, 0.5), _C.log1p(-2.0 * below), _C.log(2.0 * above - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _C.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (_C.log1p(-cut) - _C.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return _C.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        vs = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (
            _C.log1p(-cut) - _C.log(cut)).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128. / 945.0 * x) * x
        return _C.where(self._outside_unstable_region(), vs, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    def sample(self, sample_shape=()):
        from ..autograd import no_grad
        u = _rand(self._extended_shape(sample_shape), self.probs)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        return self.icdf(_rand(self._extended_shape(sample_shape), self.probs))

    def log_prob(self, value):
        from ..nn.functional import binary_cross_entropy_with_logits
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + \
            self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = _C.where(self._outside_unstable_region(), cdfs, value)
        return _C.where(_C.le(value, 0.0), _C.zeros_like(value),
                        _C.where(_C.ge(value, 1.0), _C.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        return _C.where(self._outside_unstable_region(),
                        (_C.log1p(-cut + value * (2.0 * cut - 1.0)) - _C.log1p(-cut))
                        / (_C.log(cut) - _C.log1p(-cut)), value)

    def entropy(self):
        log_probs0 = _C.log1p(-self.probs)
        log_probs1 = _C.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        # log((e^x - 1) / x), by its Taylor series where x is near 0 (torch compares the
        # logits with lims - 0.5 here)
        outside = _C.le(x, self._lims[0] - 0.5) | _C.gt(x, self._lims[1] - 0.5)
        cut = _C.where(outside, x, _C.full_like(x, self._lims[0] - 0.5))
        exact = _C.log(_C.abs(_C.expm1(cut))) - _C.log(_C.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return _C.where(outside, exact, taylor)
