"""Multivariate families of retorch.distributions: MultivariateNormal,
LowRankMultivariateNormal and MixtureSameFamily, as torch.distributions."""
import math

from .. import _C
from . import constraints
from .discrete import Categorical
from .distribution import Distribution
from .utils import (_batch_mahalanobis, _batch_mv, _broadcast_shapes, _diag_embed, _fmt_size,
                    _numel, _size, _standard_normal, lazy_property)

__all__ = ["MultivariateNormal", "LowRankMultivariateNormal", "MixtureSameFamily"]


def _precision_to_scale_tril(P):
    # the Cholesky factor of P's flip gives inv(P)'s factor without inverting P
    Lf = _C.linalg_cholesky(_C.flip(P, [-2, -1]))
    L_inv = _C.flip(Lf, [-2, -1]).transpose(-2, -1)
    eye = _C.eye(P.shape[-1], dtype=P.dtype).expand(tuple(L_inv.shape))
    return _C.linalg_solve_triangular(L_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is None:
                continue
            if m.dim() < 2:
                what = "scale_tril matrix" if name == "scale_tril" else name
                raise ValueError(f"{what} must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = _broadcast_shapes(tuple(m.shape[:-2]), tuple(loc.shape[:-1]))
            setattr(self, name, m.expand(batch_shape + tuple(m.shape[-2:])))
        self.loc = loc.expand(batch_shape + tuple(loc.shape[-1:]))
        super().__init__(batch_shape, tuple(self.loc.shape[-1:]), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _C.linalg_cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return self._expand_params(MultivariateNormal, batch_shape,
                                   ("loc", "covariance_matrix", "scale_tril",
                                    "precision_matrix"), new)

    def _full(self, *event):
        return self._batch_shape + self._event_shape * len(event)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._full(1, 1))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return L.matmul(L.transpose(-2, -1)).expand(self._full(1, 1))

    @lazy_property
    def precision_matrix(self):
        from .. import cholesky_inverse
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._full(1, 1))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._full(1))

    def rsample(self, sample_shape=()):
        eps = _standard_normal(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H.expand(self._batch_shape) if self._batch_shape else H


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of I + W^T D^-1 W (the capacitance of W W^T + D)."""
    m = W.shape[-1]
    K = (W.transpose(-2, -1) / D.unsqueeze(-2)).matmul(W) + _C.eye(m, dtype=W.dtype)
    return _C.linalg_cholesky(K)


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + D) by the matrix determinant lemma."""
    return 2 * capacitance_tril.diagonal(0, -2, -1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x by the Woodbury identity."""
    Wt_Dinv = W.transpose(-2, -1) / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """Normal with covariance cov_factor @ cov_factor.T + diag(cov_diag)."""
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        from ..functional import broadcast_tensors
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, "
                             "with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError("cov_factor must be a batch of matrices with shape {} x m"
                             .format(event_shape[0]))
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError("cov_diag must be a batch of vectors with shape {}"
                             .format(_fmt_size(event_shape)))
        try:
            loc_, self.cov_factor, cov_diag_ = broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError("Incompatible batch shapes: loc {}, cov_factor {}, cov_diag {}"
                             .format(*(_fmt_size(t.shape) for t in (loc, cov_factor, cov_diag))
                                     )) from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(tuple(self.loc.shape[:-1]), event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        for name in ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag",
                     "_capacitance_tril"):
            setattr(new, name, getattr(self, name))
        return self._expand_params(LowRankMultivariateNormal, batch_shape,
                                   ("loc", "cov_diag", "cov_factor"), new)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze
        K = Dinvsqrt_W.matmul(Dinvsqrt_W.transpose(-2, -1)) + _C.eye(n, dtype=Dinvsqrt_W.dtype)
        scale_tril = cov_diag_sqrt_unsqueeze * _C.linalg_cholesky(K)
        return scale_tril.expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        cov = W.matmul(W.transpose(-2, -1)) + _diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - A^T A with A = C^-1 W^T D^-1, C the capacitance factor
        Wt_Dinv = (self._unbroadcasted_cov_factor.transpose(-2, -1)
                   / self._unbroadcasted_cov_diag.unsqueeze(-2))
        A = _C.linalg_solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision = (_diag_embed(self._unbroadcasted_cov_diag.reciprocal())
                     - A.transpose(-2, -1).matmul(A))
        return precision.expand(self._batch_shape + self._event_shape * 2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps_W = _standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), self.loc.dtype)
        eps_D = _standard_normal(shape, self.loc.dtype)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                     self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, value - self.loc,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H.expand(self._batch_shape) if self._batch_shape else H


class MixtureSameFamily(Distribution):
    """A Categorical mixture over the rightmost batch dim of component_distribution."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distribtutions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError("`mixture_distribution.batch_shape` ({0}) is not compatible "
                                 "with `component_distribution.batch_shape`({1})"
                                 .format(mdbs, cdbs))
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError("`mixture_distribution component` ({0}) does not equal "
                             "`component_distribution.batch_shape[-1]` ({1})".format(km, kc))
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        return self._expand_params(MixtureSameFamily, batch_shape, (), new,
                                   new._component_distribution.event_shape)

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        mean_cond_var = (probs * self.component_distribution.variance).sum(
            -1 - self._event_ndims)
        var_cond_mean = (probs * (self.component_distribution.mean
                                  - self._pad(self.mean)).pow(2.0)).sum(-1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # [S, B, k]
        log_mix_prob = _C.log_softmax(self.mixture_distribution.logits, -1)  # [B, k]
        return (log_prob_x + log_mix_prob).logsumexp(-1)  # [S, B]

    def sample(self, sample_shape=()):
        from ..autograd import no_grad
        sample_shape = _size(sample_shape)
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = self.event_shape
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.repeat(*((1,) * len(mix_shape) + (1,) + es))
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        # torch compares the batch shapes' element counts here, not their lengths
        dist_batch_numel = _numel(self.batch_shape)
        cat_batch_numel = _numel(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_numel == 1 else dist_batch_numel - cat_batch_numel
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self):
        return "MixtureSameFamily(\n  {},\n  {})".format(self.mixture_distribution,
                                                         self.component_distribution)
