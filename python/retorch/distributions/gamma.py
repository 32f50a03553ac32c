"""The gamma family of retorch.distributions: Gamma, Chi2, Beta and Dirichlet, with a
Marsaglia-Tsang standard-gamma sampler whose gradient is torch's implicit reparameterization."""
from numbers import Number, Real

from .. import _C
from ..autograd.function import Function
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _finfo, broadcast_all

__all__ = ["Gamma", "Chi2", "Beta", "Dirichlet"]


def _sample_standard_gamma(alpha):
    """Gamma(alpha, 1) draws, one per element of alpha, by Marsaglia and Tsang's squeeze-free
    rejection (alpha < 1 boosted to alpha + 1 and scaled by U ** (1 / alpha)), in float64."""
    a = alpha.detach().reshape(-1).to(_C.float64)
    n = a.numel()
    drawn = _C.isfinite(a) & (a > 0)
    small = a < 1
    boost = _C.where(small, (1 - _C.rand([n], dtype=_C.float64)).pow(1 / a), _C.ones_like(a))
    a = _C.where(small, a + 1, a)
    d = a - 1.0 / 3.0
    c = 1.0 / (9.0 * d).sqrt()
    # as torch: inf stays inf, nan and alpha <= 0 give the smallest positive value
    out = _C.where(a == float("inf"), a, _C.zeros_like(a))
    todo = drawn.nonzero().reshape(-1)
    # Each round accepts > 95% of what is left, so a handful of rounds finish any size.
    while todo.numel() > 0:
        dd, cc = d[todo], c[todo]
        x = _C.randn([todo.numel()], dtype=_C.float64)
        u = _C.rand([todo.numel()], dtype=_C.float64)
        v = (1 + cc * x) ** 3
        ok = (v > 0) & (u.log() < 0.5 * x * x + dd - dd * v + dd * v.clamp(min=1e-300).log())
        out[todo[ok]] = (dd * v)[ok]
        todo = todo[~ok]
    out = (out * boost).clamp(min=_finfo(alpha.dtype).tiny)
    return out.to(alpha.dtype).reshape(list(alpha.shape))


# Rows of the bivariate rational approximation torch's standard_gamma_grad uses for
# alpha <= 8, x >= 0.8: p(u, v) / q(u, v), u = log(x / alpha), v = log(alpha).
_COEF_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343,
             1, 0.32668115, 0.10406089, 0.0014179084),
            (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
             0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
            (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
             0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07))


def _standard_gamma_grad(alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1) held at its CDF value (implicit
    reparameterization), torch's _standard_gamma_grad: a series in x for x < 0.8, Rice's
    saddle-point expansion for alpha > 8, a rational fit otherwise. Computed in float64."""
    dtype = x.dtype
    a, x = alpha.detach().to(_C.float64), x.detach().to(_C.float64)
    # x < 0.8: -dCDF/dalpha / pdf, the CDF's alpha-derivative from its power series
    numer, denom = _C.ones_like(x), a.clone()
    series1, series2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x.pow(a)
    gamma_pdf = x.pow(a - 1) * (-x).exp()
    gamma_cdf = pow_x_alpha * series1
    gamma_cdf_alpha = (x.log() - _C.digamma(a)) * gamma_cdf - pow_x_alpha * series2
    small = -gamma_cdf_alpha / gamma_pdf
    small = _C.where(_C.isnan(small), _C.zeros_like(small), small)
    # alpha > 8, x within 10% of alpha: the saddle-point expansion's limit
    numer_1 = 1 + 24 * a * (1 + 12 * a)
    numer_2 = 1440 * a * a + 6 * x * (53 - 120 * x) - 65 * x * x / a + a * (107 + 3600 * x)
    near = numer_1 * numer_2 / (1244160 * a * a * a * a)
    # alpha > 8 elsewhere
    denom = (8 * a).sqrt()
    term2 = denom / (a - x)
    term3 = (x - a - a * (x / a).log()).pow(-1.5)
    term23 = _C.where(x < a, term2 - term3, term2 + term3)
    term1 = (x / a).log() * term23 - (2 / a).sqrt() * (a + x) / ((a - x) * (a - x))
    stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
    far = -stirling * x * term1 / denom
    # the rest: the rational approximation
    u, v = (x / a).log(), a.log()
    cv = [_COEF_UV[0][i] + u * (_COEF_UV[1][i] + u * _COEF_UV[2][i]) for i in range(8)]
    p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
    q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
    rational = (p / q).exp()
    saddle = _C.where((0.9 * a <= x) & (x <= 1.1 * a), near, far)
    grad = _C.where(x < 0.8, small, _C.where(a > 8, saddle, rational))
    return grad.to(dtype)


class _StandardGamma(Function):
    _backward_name = "StandardGammaBackward0"

    @staticmethod
    def forward(ctx, alpha):
        x = _sample_standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x)


def _standard_gamma(concentration):
    """torch._standard_gamma: Gamma(concentration, 1) samples, differentiable in
    concentration through the implicit reparameterization gradient."""
    return _StandardGamma.apply(concentration)


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(() if scalar else tuple(self.concentration.shape),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, ("concentration", "rate"), _instance)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = list(self._extended_shape(sample_shape))
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=_finfo(value.dtype).tiny)  # as torch: not seen by autograd
        return value

    def log_prob(self, value):
        if not isinstance(value, _C.Tensor):
            value = _C.full([], float(value), dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (_C.xlogy(self.concentration, self.rate) + _C.xlogy(self.concentration - 1, value)
                - self.rate * value - _C.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - _C.log(self.rate) + _C.lgamma(self.concentration)
                + (1.0 - self.concentration) * _C.digamma(self.concentration))

    @property
    def _natural_params(self):
        # t(x) = (log x, x): eta = (concentration - 1, -rate)
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _C.lgamma(x + 1) + (x + 1) * _C.log(-y.reciprocal())


class Chi2(Gamma):
    """Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """Normalized Gamma(concentration) draws; rsample differentiates through the gamma
    draws (an unbiased pathwise gradient, not torch's _dirichlet_grad)."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, ("concentration",), _instance)

    def rsample(self, sample_shape=()):
        shape = list(self._extended_shape(sample_shape))
        gammas = _standard_gamma(self.concentration.expand(shape))
        x = gammas / gammas.sum(-1, keepdim=True)
        x.detach().clamp_(min=_finfo(x.dtype).tiny)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((_C.log(value) * (self.concentration - 1.0)).sum(-1)
                + _C.lgamma(self.concentration.sum(-1))
                - _C.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        from ..nn.functional import one_hot
        concentrationm1 = (self.concentration - 1).clamp(min=0.)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # every concentration < 1: the density peaks at a vertex; torch picks the first
        mask = (self.concentration < 1).all(-1, keepdim=True)
        vertex = one_hot(_C.zeros(list(mode.shape[:-1]), dtype=_C.int64),
                         mode.shape[-1]).to(mode.dtype)
        return _C.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (_C.lgamma(self.concentration).sum(-1) - _C.lgamma(a0)
                - (k - a0) * _C.digamma(a0)
                - ((self.concentration - 1.0) * _C.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - _C.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0) as the first coordinate of a two-component
    Dirichlet, as torch builds it."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Real) and isinstance(concentration0, Real):
            from .. import tensor
            both = tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = _C.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        return self._expand_params(Beta, batch_shape, (), new)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(_C.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return _C.lgamma(x) + _C.lgamma(y) - _C.lgamma(x + y)

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]
