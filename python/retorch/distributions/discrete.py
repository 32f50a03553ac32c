"""Discrete families of retorch.distributions: Bernoulli, Categorical, OneHotCategorical (and its
straight-through variant), Geometric, Poisson, Binomial, NegativeBinomial and Multinomial."""
import math
from numbers import Number

from .. import _C
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Gamma
from .utils import (_finfo, _numel, _size, broadcast_all, lazy_property, logits_to_probs,
                    probs_to_logits)

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Geometric", "Poisson", "Binomial", "NegativeBinomial", "Multinomial"]


def _no_grad():
    from ..autograd import no_grad
    return no_grad()


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _Binary(Distribution):
    """Families parameterized by one probs-or-logits tensor (per element)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}

    def _set_param(self, probs, logits, *others):
        """Broadcasts the given parameter with others; returns (scalar?, broadcast others)."""
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        values = broadcast_all(given, *others)
        if probs is not None:
            self.probs = values[0]
        else:
            self.logits = values[0]
        self._param = values[0]
        return isinstance(given, Number), values[1:]

    def _expand_binary(self, cls, batch_shape, _instance, extra=()):
        return self._expand_params(cls, batch_shape, extra + ("probs", "logits"), _instance)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)


class Bernoulli(_Binary, ExponentialFamily):
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        scalar, _ = self._set_param(probs, logits)
        super().__init__(() if scalar else tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(Bernoulli, batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return _C.where(self.probs == 0.5, _C.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = list(self._extended_shape(sample_shape))
        with _no_grad():
            probs = self.probs.expand(shape)
            return (_C.rand(shape, dtype=probs.dtype) < probs).to(probs.dtype)

    def log_prob(self, value):
        from ..nn.functional import binary_cross_entropy_with_logits
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value.to(logits.dtype),
                                                 reduction="none")

    def entropy(self):
        from ..nn.functional import binary_cross_entropy_with_logits
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def _natural_params(self):
        return (_C.log(self.probs) - _C.log1p(-self.probs),)

    def _log_normalizer(self, x):
        return _C.log1p(_C.exp(x))

    def enumerate_support(self, expand=True):
        values = _C.arange(2, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        new._num_events = self._num_events
        return self._expand_params(Categorical, batch_shape, ("probs", "logits"), new)

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    @property
    def mean(self):
        return _C.full(list(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return _C.full(list(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        from ..functional import multinomial
        sample_shape = _size(sample_shape)
        with _no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = multinomial(probs_2d, _numel(sample_shape), True).transpose(0, 1)
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        from ..functional import broadcast_tensors
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=_finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = _C.arange(self._num_events, dtype=_C.int64)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        return self._expand_params(OneHotCategorical, batch_shape, (), new)

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        from ..nn.functional import one_hot
        probs = self._categorical.probs
        return one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        from ..nn.functional import one_hot
        indices = self._categorical.sample(sample_shape)
        return one_hot(indices, self._categorical._num_events).to(self._categorical.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = _C.eye(n, dtype=self._param.dtype)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + self.batch_shape + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample passes gradients straight through the one-hot draw to
    probs (Bengio et al., 2013): the value is the draw, the gradient that of probs."""
    has_rsample = True

    def rsample(self, sample_shape=()):
        draw = self.sample(sample_shape)
        probs = self._categorical.probs
        return draw + (probs - probs.detach())


class Geometric(_Binary):
    """Failures before the first success, each trial succeeding with probs."""
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        scalar, _ = self._set_param(probs, logits)
        super().__init__(() if scalar else tuple(self._param.shape), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(Geometric, batch_shape, _instance)

    @property
    def mean(self):
        return 1. / self.probs - 1.

    @property
    def mode(self):
        return _C.zeros_like(self.probs)

    @property
    def variance(self):
        return (1. / self.probs - 1.) / self.probs

    def sample(self, sample_shape=()):
        shape = list(self._extended_shape(sample_shape))
        tiny = _finfo(self.probs.dtype).tiny
        with _no_grad():
            u = _C.rand(shape, dtype=self.probs.dtype).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = _C.where((probs == 1) & (value == 0), _C.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        from ..nn.functional import binary_cross_entropy_with_logits
        return binary_cross_entropy_with_logits(self.logits, self.probs,
                                                reduction="none") / self.probs


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(() if isinstance(rate, Number) else tuple(self.rate.shape),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, ("rate",), _instance)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        from .. import poisson
        with _no_grad():
            return poisson(self.rate.expand(list(self._extended_shape(sample_shape))))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return _C.xlogy(value, rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (_C.log(self.rate),)

    def _log_normalizer(self, x):
        return _C.exp(x)


def _clamp_by_zero(x):
    # clamp(x, min=0) whose gradient at 0 is 0.5, as torch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_Binary):
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _, (total_count,) = self._set_param(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(Binomial, batch_shape, _instance, ("total_count",))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        from .. import binomial
        shape = list(self._extended_shape(sample_shape))
        with _no_grad():
            return binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = _C.lgamma(self.total_count + 1)
        log_factorial_k = _C.lgamma(value + 1)
        log_factorial_nmk = _C.lgamma(self.total_count - value + 1)
        # n * log(1 + e^logit) written as n * max(logit, 0) + n * log1p(e^-|logit|)
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * _C.log1p(_C.exp(-_C.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, what):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(_C.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_count("enumerate_support")
        values = _C.arange(1 + total_count, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class NegativeBinomial(_Binary):
    """Successes before total_count failures, each trial succeeding with probs."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0., 1.),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _, (total_count,) = self._set_param(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(NegativeBinomial, batch_shape, _instance, ("total_count",))

    @property
    def mean(self):
        return self.total_count * _C.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.)

    @property
    def variance(self):
        return self.mean / _C.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # not validated: total_count may be zero
        return Gamma(concentration=self.total_count, rate=_C.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=()):
        from .. import poisson
        with _no_grad():
            return poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        from ..nn.functional import logsigmoid
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * logsigmoid(-self.logits)
                                 + value * logsigmoid(self.logits))
        log_normalization = (-_C.lgamma(self.total_count + value) + _C.lgamma(1. + value)
                             + _C.lgamma(self.total_count))
        log_normalization = _C.where(self.total_count + value == 0.,
                                     _C.zeros_like(log_normalization), log_normalization)
        return log_unnormalized_prob - log_normalization


class Multinomial(Distribution):
    """Counts of total_count draws from a Categorical (total_count a Python int)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        return self._expand_params(Multinomial, batch_shape, (), new)

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = _size(sample_shape)
        with _no_grad():
            samples = self._categorical.sample((self.total_count,) + sample_shape)
            # (total_count, sample, batch) -> (sample, batch, total_count)
            order = list(range(1, samples.dim())) + [0]
            samples = samples.permute(*order)
            counts = _C.zeros(list(self._extended_shape(sample_shape)), dtype=samples.dtype)
            counts.scatter_add_(-1, samples, _C.ones_like(samples))
            return counts.type_as(self.probs)

    def entropy(self):
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = _C.exp(self._binomial.log_prob(support))
        weights = _C.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = _C.lgamma(value.sum(-1) + 1)
        log_factorial_xs = _C.lgamma(value + 1).sum(-1)
        logits = _C.where((value == 0) & (logits == -math.inf), _C.zeros_like(logits), logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
