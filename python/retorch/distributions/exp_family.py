"""ExponentialFamily: the base of families whose density is exp(<t(x), eta> - A(eta) + k(x)),
with entropy from the gradient of the log-normalizer A (a Bregman divergence), as torch's."""
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


def _grad_of_log_normalizer(dist, natural_params):
    """A(eta) at detached copies of eta, and dA/deta there (kept in the graph so that the
    result can be differentiated again)."""
    from ..autograd import enable_grad, grad
    etas = [eta.detach().requires_grad_() for eta in natural_params]
    with enable_grad():
        log_norm = dist._log_normalizer(*etas)
        grads = grad(log_norm.sum(), etas, create_graph=True)
    return etas, log_norm, grads


class ExponentialFamily(Distribution):
    """A subclass supplies _natural_params (a tuple of tensors eta), _log_normalizer(*eta) and
    _mean_carrier_measure (E[k(x)]); entropy then is A(eta) - <eta, grad A(eta)> - E[k(x)]
    (Nielsen and Nock, Entropies and cross-entropies of exponential families)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        carrier = self._mean_carrier_measure
        etas, log_norm, grads = _grad_of_log_normalizer(self, self._natural_params)
        result = log_norm - carrier
        for eta, g in zip(etas, grads):
            result = result - (eta * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
