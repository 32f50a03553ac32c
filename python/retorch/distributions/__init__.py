"""retorch.distributions: torch.distributions' families written over retorch's operators (so
log_prob, entropy and rsample are differentiable), with torch's argument checks, constraints,
transforms, biject_to/transform_to and kl_divergence."""
from . import constraints, transforms  # noqa: F401
from .constraint_registry import biject_to, transform_to  # noqa: F401
from .continuous import (Cauchy, ContinuousBernoulli, Exponential, Laplace, Normal,  # noqa: F401
                         StudentT, Uniform)
from .continuous_more import FisherSnedecor, VonMises  # noqa: F401
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,  # noqa: F401
                       NegativeBinomial, OneHotCategorical, OneHotCategoricalStraightThrough,
                       Poisson)
from .distribution import Distribution  # noqa: F401
from .exp_family import ExponentialFamily  # noqa: F401
from .gamma import Beta, Chi2, Dirichlet, Gamma  # noqa: F401
from .independent import Independent  # noqa: F401
from .kl import kl_divergence, register_kl  # noqa: F401
from .matrix import LKJCholesky, Wishart  # noqa: F401
from .multivariate import (LowRankMultivariateNormal, MixtureSameFamily,  # noqa: F401
                           MultivariateNormal)
from .transformed import (ExpRelaxedCategorical, Gumbel, HalfCauchy, HalfNormal,  # noqa: F401
                          LogitRelaxedBernoulli, LogNormal, Pareto, RelaxedBernoulli,
                          RelaxedOneHotCategorical, TransformedDistribution)
from .transformed_more import Kumaraswamy, LogisticNormal, Weibull  # noqa: F401
from .transforms import (AbsTransform, AffineTransform, CatTransform,  # noqa: F401
                         ComposeTransform, CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform,
                         LowerCholeskyTransform, PowerTransform, ReshapeTransform,
                         SigmoidTransform, SoftmaxTransform, SoftplusTransform, StackTransform,
                         StickBreakingTransform, TanhTransform, Transform, identity_transform)

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ContinuousBernoulli", "Dirichlet", "Distribution", "ExpRelaxedCategorical",
           "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Gumbel",
           "HalfCauchy", "HalfNormal", "Independent", "Kumaraswamy", "LKJCholesky", "Laplace",
           "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli", "LowRankMultivariateNormal",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial",
           "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto",
           "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
           "kl_divergence", "register_kl", "transform_to", "constraints",
           "transforms"] + transforms.__all__
