"""Matrix-valued families: LKJCholesky (Cholesky factors of random correlation matrices, by
the onion method) and Wishart (positive-definite matrices, by Bartlett's decomposition)."""
import math
import warnings
from numbers import Number

from .. import _C
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2
from .multivariate import _precision_to_scale_tril
from .utils import _broadcast_shapes, _diag_embed, _finfo, _size, broadcast_all, lazy_property

__all__ = ["LKJCholesky", "Wishart"]

_LOG_2 = math.log(2)


def _mvlgamma(x, p):
    from .. import mvlgamma
    return mvlgamma(x, p=p)


def _mvdigamma(x, p):
    """d/dx log Gamma_p(x) = sum_{i<p} digamma(x - i / 2)."""
    halves = _C.arange(p, dtype=x.dtype) / 2
    return _C.digamma(x.unsqueeze(-1) - halves).sum(-1)


def _log_diag_sum(tril):
    return tril.diagonal(0, -2, -1).log().sum(-1)


class LKJCholesky(Distribution):
    """Lower Cholesky factors L of dim x dim correlation matrices whose density in L L^T is
    proportional to det(L L^T)^(concentration - 1) (Lewandowski, Kurowicka and Joe, 2009);
    concentration 1 is uniform over correlation matrices.

    Note [LKJ onion rows]: extending a k x k correlation matrix by one row, the onion method
    draws the new row's squared off-diagonal norm from Beta(k / 2, .). torch 1.13 uses
    Beta(k - 1/2, .), so for dim >= 3 its draws do not follow its own log_prob (the
    correlations of later rows come out too spread); retorch follows the paper, and its
    draws have every correlation's variance 1 / (2 concentration + dim - 1)."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1., validate_args=None):
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        self.concentration, = broadcast_all(concentration)
        self._beta = self._row_beta(self.concentration, dim)
        super().__init__(tuple(self.concentration.shape), (dim, dim),
                         validate_args=validate_args)

    @staticmethod
    def _row_beta(eta, dim):
        """Beta laws of each row's squared off-diagonal norm, the onion method's: row i >= 1
        has Beta(i / 2, eta + (dim - 1 - i) / 2); row 0 (no off-diagonal) a placeholder.
        See Note [LKJ onion rows]."""
        steps = _C.arange(dim - 1, dtype=eta.dtype)
        steps = _C.cat([steps.new_zeros([1]), steps])  # row i uses i - 1, row 0 reuses 0
        conc1 = 0.5 * steps + 0.5
        conc0 = (eta + 0.5 * (dim - 2)).unsqueeze(-1) - 0.5 * steps
        # checked as LKJCholesky's concentration instead (torch reports it as a Beta's)
        return Beta(conc1, conc0, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        new.dim = self.dim
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return self._expand_params(LKJCholesky, batch_shape, ("concentration",), new)

    def sample(self, sample_shape=()):
        # Each row's off-diagonal part is a uniform direction of squared length y ~ Beta;
        # the diagonal entry makes the row a unit vector.
        from ..autograd import no_grad
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = list(self._extended_shape(sample_shape))
            normal = _C.randn(shape, dtype=y.dtype).tril(-1)
            norm = normal.norm(dim=-1, keepdim=True)
            direction = _C.where(norm > 0, normal / norm, _C.zeros_like(normal))
            w = y.sqrt() * direction
            tiny = _finfo(w.dtype).tiny
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + _diag_embed(diag)

    def log_prob(self, value):
        # det(L L^T)^(eta - 1) times the Jacobian prod_i L_ii^(dim - i - 1) of L -> L L^T
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(0, -2, -1)[..., 1:]
        rows = _C.arange(2, self.dim + 1, dtype=self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - rows
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_norm = (0.5 * dm1 * math.log(math.pi) + _mvlgamma(alpha - 0.5, dm1)
                    - dm1 * _C.lgamma(alpha))
        return unnormalized - log_norm


class Wishart(ExponentialFamily):
    """Wishart(df, Sigma): the law of X^T X for df rows X_i ~ MultivariateNormal(0, Sigma),
    given by one of covariance_matrix, precision_matrix or scale_tril (as
    MultivariateNormal), with real df > dim - 1."""
    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = _C.full([], float(df), dtype=param.dtype)
        else:
            batch_shape = _broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(batch_shape + (-1, -1)))
        # per instance: the bound on df depends on the dimension (torch rewrites the class's)
        self.arg_constraints = dict(Wishart.arg_constraints, df=constraints.greater_than(p - 1))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.")
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = _C.linalg_cholesky(param)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(param)
        self._dist_chi2 = self._bartlett_chi2()

    def _bartlett_chi2(self):
        """Chi2(df - i) for the squared i-th diagonal entry of Bartlett's factor."""
        p = self._event_shape[-1]
        steps = _C.arange(p, dtype=self._unbroadcasted_scale_tril.dtype)
        return Chi2(self.df.unsqueeze(-1) - steps.expand(self._batch_shape + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tuple(batch_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(
            batch_shape + self._event_shape)
        new.arg_constraints = self.arg_constraints
        new = self._expand_params(Wishart, batch_shape, ("df", "covariance_matrix",
                                                         "precision_matrix", "scale_tril"), new)
        new._dist_chi2 = new._bartlett_chi2()
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        from .. import cholesky_inverse
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._batch_shape + self._event_shape)

    def _df_matrix(self):
        return self.df.view(self._batch_shape + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self._event_shape[-1] - 1
        factor = _C.where(factor <= 0, _C.full_like(factor, math.nan), factor)
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        # Var(X_ij) = df (V_ij^2 + V_ii V_jj)
        V = self.covariance_matrix
        d = V.diagonal(0, -2, -1)
        return self._df_matrix() * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape):
        """(L A)(L A)^T with A lower triangular, A_ii = sqrt(Chi2(df - i)), A_ij ~ N(0, 1)."""
        eps = _finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        shape = list(_size(sample_shape) + self._batch_shape + self._event_shape)
        below = _C.randn(shape, dtype=diag.dtype).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (below + _diag_embed(diag))
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett draws; a draw that is numerically singular (possible when df < dim) is
        redrawn up to max_try_correction (default 10) times, with a warning, and may stay
        singular (its log_prob then is -inf)."""
        if max_try_correction is None:
            max_try_correction = 10
        sample = self._bartlett_sample(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.")
            for _ in range(max_try_correction):
                redraw = self._bartlett_sample(sample_shape)
                sample = _C.where(singular.unsqueeze(-1).unsqueeze(-1), redraw, sample)
                singular = singular & ~self.support.check(redraw)
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        from .. import cholesky_solve
        trace = cholesky_solve(value, L).diagonal(0, -2, -1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + _log_diag_sum(L)) - _mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * _C.linalg_slogdet(value)[1] - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _LOG_2 / 2 + _log_diag_sum(L)) + _mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        # t(X) = (X, log det X): eta = (-precision / 2, (df - dim - 1) / 2)
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        a = y + (p + 1) / 2  # df / 2
        return a * (-_C.linalg_slogdet(-2 * x)[1] + _LOG_2 * p) + _mvlgamma(a, p)
