"""More families built as TransformedDistribution: Kumaraswamy and Weibull (powers of uniform and
exponential draws) and LogisticNormal (a Normal pushed onto the simplex by stick breaking)."""
import math

from .. import _C
from . import constraints
from .continuous import Exponential, Normal, Uniform
from .transformed import TransformedDistribution
from .transforms import AffineTransform, PowerTransform, StickBreakingTransform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy", "Weibull", "LogisticNormal"]


def _kumaraswamy_moment(a, b, n):
    """E[X^n] = b * B(1 + n / a, b)."""
    k = 1 + n / a
    return b * _C.exp(_C.lgamma(k) + _C.lgamma(b) - _C.lgamma(k + b))


class Kumaraswamy(TransformedDistribution):
    """Density a b x^(a-1) (1 - x^a)^(b-1) on (0, 1), with a = concentration1 and
    b = concentration0; a draw is (1 - U^(1/b))^(1/a) for U ~ Uniform(0, 1)."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(_C.zeros_like(self.concentration0), _C.ones_like(self.concentration0),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1., scale=-1.),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # ((a - 1) / (a b - 1))^(1 / a) where a, b >= 1 (torch 1.13's log-space formula
        # has the two parameters swapped and returns nan there too)
        a, b = self.concentration1, self.concentration0
        mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return _C.where((a < 1) | (b < 1), _C.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return (_kumaraswamy_moment(self.concentration1, self.concentration0, 2)
                - self.mean.pow(2))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        # E[log(1 - X^a)] = -H_b, the harmonic number digamma(b + 1) + gamma
        harmonic = _C.digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()


class Weibull(TransformedDistribution):
    """scale * E^(1 / concentration) for E ~ Exponential(1): density
    (k / l) (x / l)^(k-1) exp(-(x / l)^k) on x > 0, l = scale and k = concentration."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(_C.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base_dist, self._transforms(self), validate_args=validate_args)

    @staticmethod
    def _transforms(dist):
        return [PowerTransform(exponent=dist.concentration_reciprocal),
                AffineTransform(loc=0, scale=dist.scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        batch_shape = tuple(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        new.base_dist = self.base_dist.expand(batch_shape)
        new.transforms = self._transforms(new)
        return self._expand_params(Weibull, batch_shape, (), new)

    @property
    def mean(self):
        return self.scale * _C.exp(_C.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        inv = self.concentration_reciprocal
        return self.scale.pow(2) * (_C.exp(_C.lgamma(1 + 2 * inv))
                                    - _C.exp(2 * _C.lgamma(1 + inv)))

    def entropy(self):
        inv = self.concentration_reciprocal
        return euler_constant * (1 - inv) + _C.log(self.scale * inv) + 1


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform(Normal(loc, scale)): a point on the K-simplex from K - 1 normal
    coordinates, log(x / (1 - cumsum(x)))[..., :-1] ~ Normal(loc, scale)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])  # a scalar gives a 2-simplex
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
