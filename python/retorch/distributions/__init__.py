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


# torch's one-module-per-family import paths (`from retorch.distributions.normal import Normal`,
# `import retorch.distributions.studentT`): light modules in sys.modules that hold the classes
# defined in the family files above, so each class has one definition and one __module__.
_FAMILY_MODULES = {
    "bernoulli": ["Bernoulli"], "beta": ["Beta"], "binomial": ["Binomial"],
    "categorical": ["Categorical"], "cauchy": ["Cauchy"], "chi2": ["Chi2"],
    "continuous_bernoulli": ["ContinuousBernoulli"], "dirichlet": ["Dirichlet"],
    "exponential": ["Exponential"], "fishersnedecor": ["FisherSnedecor"],
    "geometric": ["Geometric"], "gumbel": ["Gumbel"], "half_cauchy": ["HalfCauchy"],
    "half_normal": ["HalfNormal"], "kumaraswamy": ["Kumaraswamy"], "laplace": ["Laplace"],
    "lkj_cholesky": ["LKJCholesky"], "log_normal": ["LogNormal"],
    "logistic_normal": ["LogisticNormal"],
    "lowrank_multivariate_normal": ["LowRankMultivariateNormal"],
    "mixture_same_family": ["MixtureSameFamily"], "multinomial": ["Multinomial"],
    "multivariate_normal": ["MultivariateNormal"], "negative_binomial": ["NegativeBinomial"],
    "normal": ["Normal"],
    "one_hot_categorical": ["OneHotCategorical", "OneHotCategoricalStraightThrough"],
    "pareto": ["Pareto"], "poisson": ["Poisson"],
    "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
    "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
    "studentT": ["StudentT"], "transformed_distribution": ["TransformedDistribution"],
    "uniform": ["Uniform"], "von_mises": ["VonMises"], "weibull": ["Weibull"],
    "wishart": ["Wishart"],
}


def _install_family_modules():
    import sys
    import types
    from importlib.machinery import ModuleSpec
    for name, classes in _FAMILY_MODULES.items():
        full = f"{__name__}.{name}"
        mod = types.ModuleType(full, f"{full}: torch's import path of {', '.join(classes)}.")
        mod.__spec__ = ModuleSpec(full, None)
        mod.__package__ = __name__
        mod.__all__ = list(classes)
        for c in classes:
            setattr(mod, c, globals()[c])
        sys.modules[full] = mod
        globals()[name] = mod


_install_family_modules()
del _install_family_modules
