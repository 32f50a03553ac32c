"""nn.utils.parametrizations: ready-made parametrizations registered through parametrize;
spectral_norm (the weight divided by an estimate of its largest singular value)."""
from ..._C import Tensor
from ...autograd import no_grad
from ..functional import normalize
from ..modules.module import Module
from . import _spectral, parametrize

__all__ = ["spectral_norm"]


class _SpectralNorm(Module):
    """weight / sigma(weight), sigma estimated by power iteration on the buffers _u and _v;
    a 1-d weight is just normalized. See Note [Spectral norm power iteration]"""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        self.dim = _spectral.check_args(weight, n_power_iterations, dim)
        self.eps = eps
        if weight.dim() > 1:
            self.n_power_iterations = n_power_iterations
            mat = _spectral.weight_matrix(weight, self.dim)
            h, w = mat.shape
            self.register_buffer("_u", _spectral.random_unit(h, mat, eps))
            self.register_buffer("_v", _spectral.random_unit(w, mat, eps))
            # Start from reasonable singular vectors rather than random ones.
            self._power_method(mat, 15)

    def _power_method(self, mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                _spectral.update_u(mat, self._u, self._v, self.eps)
                _spectral.update_v(mat, self._u, self._v, self.eps)

    def forward(self, weight):
        if weight.dim() == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = _spectral.weight_matrix(weight, self.dim)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        return weight / _spectral.sigma(mat, self._u.clone(), self._v.clone())

    def right_inverse(self, value):
        # Any weight is a valid original: the forward normalizes whatever is stored.
        return value


def _default_dim(module):
    # Transposed convolutions keep output channels in dim 1 of the weight.
    from .. import modules
    transposed = tuple(getattr(modules, n) for n in ("ConvTranspose1d", "ConvTranspose2d",
                                                     "ConvTranspose3d") if hasattr(modules, n))
    return 1 if isinstance(module, transposed) else 0


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Registers a spectral-norm parametrization on module.<name> (torch's new-style
    spectral_norm): the original lives in module.parametrizations.<name>.original and u, v in
    module.parametrizations.<name>[0]._u/_v. Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
