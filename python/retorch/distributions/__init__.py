"""retorch.distributions: torch.distributions' common families written over retorch's operators
(so log_prob, entropy and rsample are differentiable): Normal, Laplace, Uniform, Exponential,
Bernoulli, Categorical, OneHotCategorical, MultivariateNormal and Independent, with
kl_divergence for the pairs torch registers among them."""
import math

from .. import _C

__all__ = ["Distribution", "Normal", "Laplace", "Uniform", "Exponential", "Bernoulli",
           "Categorical", "OneHotCategorical", "MultivariateNormal", "Independent",
           "kl_divergence", "register_kl"]


def _tensor(v, like=None):
    if isinstance(v, _C.Tensor):
        return v
    dtype = like.dtype if isinstance(like, _C.Tensor) else _C.get_default_dtype()
    return _C.full([], float(v), dtype=dtype)


def _broadcast(*values):
    from ..functional import broadcast_tensors
    ref = next((v for v in values if isinstance(v, _C.Tensor)), None)
    return broadcast_tensors(*[_tensor(v, ref) for v in values])


def _size(sample_shape):
    return tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)


class Distribution:
    """batch_shape, event_shape, sample/rsample(sample_shape), log_prob, entropy, mean,
    variance, stddev, as torch.distributions.Distribution."""

    has_rsample = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return _size(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape=()):
        from .. import no_grad
        with no_grad():
            return self.rsample(sample_shape) if self.has_rsample else self._sample(
                sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def __repr__(self):
        return f"{type(self).__name__}()"


class Normal(Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast(loc, scale)
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale ** 2

    def rsample(self, sample_shape=()):
        eps = _C.randn(list(self._extended_shape(sample_shape)), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - \
            math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        return 0.5 * (1 + _C.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Laplace(Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast(loc, scale)
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale ** 2

    def rsample(self, sample_shape=()):
        u = _C.rand(list(self._extended_shape(sample_shape)), dtype=self.loc.dtype) * 2 - 1
        return self.loc - self.scale * u.sign() * _C.log1p(-u.abs().clamp(max=1 - 1e-7))

    def log_prob(self, value):
        return -_C.log(2 * self.scale) - _C.abs(value - self.loc) / self.scale

    def entropy(self):
        return 1 + _C.log(2 * self.scale)


class Uniform(Distribution):
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _broadcast(low, high)
        super().__init__(self.low.shape)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        u = _C.rand(list(self._extended_shape(sample_shape)), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        inside = (value >= self.low) & (value < self.high)
        lp = -_C.log(self.high - self.low)
        return _C.where(inside, lp, _C.full_like(lp, -math.inf))

    def entropy(self):
        return _C.log(self.high - self.low)


class Exponential(Distribution):
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        self.rate = _tensor(rate)
        super().__init__(self.rate.shape)

    @property
    def mean(self):
        return 1 / self.rate

    @property
    def variance(self):
        return self.rate ** -2

    def rsample(self, sample_shape=()):
        u = _C.rand(list(self._extended_shape(sample_shape)), dtype=self.rate.dtype)
        return -_C.log1p(-u) / self.rate

    def log_prob(self, value):
        return self.rate.log() - self.rate * value

    def entropy(self):
        return 1.0 - self.rate.log()


def _probs_logits(probs, logits, binary):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        probs = _tensor(probs)
        if binary:
            p = probs.clamp(1.1920928955078125e-07, 1 - 1.1920928955078125e-07)
            return probs, _C.log(p) - _C.log1p(-p)
        probs = probs / probs.sum(-1, keepdim=True)
        return probs, _C.log(probs.clamp(min=1.1754943508222875e-38))
    logits = _tensor(logits)
    if binary:
        return _C.sigmoid(logits), logits
    logits = logits - logits.logsumexp(-1, keepdim=True)
    return logits.exp(), logits


class Bernoulli(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _probs_logits(probs, logits, True)
        super().__init__(self.probs.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def _sample(self, sample_shape=()):
        shape = list(self._extended_shape(sample_shape))
        return (_C.rand(shape, dtype=self.probs.dtype) < self.probs.expand(shape)).to(
            self.probs.dtype)

    def log_prob(self, value):
        from ..nn.functional import binary_cross_entropy_with_logits
        logits, value = _broadcast(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value.to(logits.dtype),
                                                 reduction="none")

    def entropy(self):
        from ..nn.functional import binary_cross_entropy_with_logits
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


class Categorical(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _probs_logits(probs, logits, False)
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1])

    @property
    def param_shape(self):
        return self.probs.shape

    @property
    def mean(self):
        return _C.full(list(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def variance(self):
        return self.mean

    def _sample(self, sample_shape=()):
        from ..functional import multinomial
        n = 1
        for s in _size(sample_shape):
            n *= s
        flat = self.probs.reshape(-1, self._num_events)
        draws = multinomial(flat, n, True).transpose(0, 1)  # (n, batch)
        return draws.reshape(_size(sample_shape) + self._batch_shape)

    def log_prob(self, value):
        value = value.to(_C.int64).unsqueeze(-1)
        value, logits = _broadcast(value, self.logits)
        return logits.gather(-1, value.narrow(-1, 0, 1)).squeeze(-1)

    def entropy(self):
        p_log_p = self.logits.clamp(min=-3.4028234663852886e38) * self.probs
        return -p_log_p.sum(-1)


class OneHotCategorical(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        super().__init__(self._categorical.batch_shape, self.probs.shape[-1:])

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def _sample(self, sample_shape=()):
        from ..nn.functional import one_hot
        idx = self._categorical._sample(sample_shape)
        return one_hot(idx, self.probs.shape[-1]).to(self.probs.dtype)

    def log_prob(self, value):
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()


class MultivariateNormal(Distribution):
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if scale_tril is not None:
            self.scale_tril = scale_tril
        elif covariance_matrix is not None:
            self.scale_tril = _C.linalg_cholesky(covariance_matrix)
        else:
            self.scale_tril = _C.linalg_cholesky(_C.linalg_inv(precision_matrix))
        self.loc = loc
        batch = _broadcast_shape(tuple(loc.shape[:-1]), tuple(self.scale_tril.shape[:-2]))
        super().__init__(batch, loc.shape[-1:])

    @property
    def mean(self):
        return self.loc.expand(self._batch_shape + self._event_shape)

    @property
    def covariance_matrix(self):
        return self.scale_tril.matmul(self.scale_tril.transpose(-2, -1))

    @property
    def variance(self):
        return (self.scale_tril ** 2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        eps = _C.randn(list(self._extended_shape(sample_shape)), dtype=self.loc.dtype)
        return self.loc + self.scale_tril.matmul(eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self.scale_tril.diagonal(0, -2, -1).log().sum(-1)

    def log_prob(self, value):
        diff = (value - self.loc).unsqueeze(-1)
        shape = _broadcast_shape(tuple(diff.shape[:-2]), tuple(self.scale_tril.shape[:-2]))
        L = self.scale_tril.expand(shape + tuple(self.scale_tril.shape[-2:]))
        z = _C.linalg_solve_triangular(L, diff.expand(shape + tuple(diff.shape[-2:])),
                                       upper=False).squeeze(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + (z * z).sum(-1)) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(self._batch_shape) if self._batch_shape else h


def _broadcast_shape(a, b):
    from ..functional import broadcast_shapes
    return tuple(broadcast_shapes(a, b))


class Independent(Distribution):
    """Reinterprets the last `reinterpreted_batch_ndims` batch dims as event dims (log_prob and
    entropy sum over them)."""

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = reinterpreted_batch_ndims
        if n > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution."
                             f"batch_shape), actual {n} vs {len(base_distribution.batch_shape)}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        shape = base_distribution.batch_shape + base_distribution.event_shape
        cut = len(base_distribution.batch_shape) - n
        super().__init__(shape[:cut], shape[cut:])
        self.has_rsample = base_distribution.has_rsample

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def _sum_rightmost(self, v):
        n = self.reinterpreted_batch_ndims
        return v.sum(list(range(v.dim() - n, v.dim()))) if n else v

    def log_prob(self, value):
        return self._sum_rightmost(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum_rightmost(self.base_dist.entropy())


_KL = {}


def register_kl(type_p, type_q):
    def decorator(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return decorator


def kl_divergence(p, q):
    for (tp, tq), fn in _KL.items():
        if isinstance(p, tp) and isinstance(q, tq):
            return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for {type(p).__name__} and "
                              f"{type(q).__name__}")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    from ..nn.functional import softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _C.where(p.probs == 0, _C.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return p._sum_rightmost(kl_divergence(p.base_dist, q.base_dist))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    k = p.event_shape[0]
    m = _C.linalg_solve_triangular(q.scale_tril, p.scale_tril, upper=False)
    d = _C.linalg_solve_triangular(q.scale_tril, (q.loc - p.loc).unsqueeze(-1),
                                   upper=False).squeeze(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * (
        (m * m).sum((-2, -1)) + (d * d).sum(-1) - k)
