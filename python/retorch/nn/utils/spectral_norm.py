"""torch.nn.utils.spectral_norm (the hook form): the weight is recomputed before each forward as
weight_orig / sigma, with sigma from power iteration on the buffers weight_u and weight_v;
remove_spectral_norm turns it back into a plain parameter."""
from ...autograd import no_grad
from ..parameter import Parameter
from . import _spectral
from .parametrizations import _default_dim

__all__ = ["spectral_norm", "remove_spectral_norm"]


class _SpectralNormHook:
    """The forward pre-hook; in training mode it runs the power iteration first."""

    def __init__(self, name, n_power_iterations, dim, eps):
        self.name, self.n_power_iterations, self.dim, self.eps = \
            name, n_power_iterations, dim, eps

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = _spectral.weight_matrix(weight, self.dim)
        if do_power_iteration:
            # v before u here (the parametrization updates u first), as torch does.
            with no_grad():
                for _ in range(self.n_power_iterations):
                    _spectral.update_v(mat, u, v, self.eps)
                    _spectral.update_u(mat, u, v, self.eps)
            u, v = u.clone(), v.clone()  # See Note [Spectral norm power iteration]
        return weight / _spectral.sigma(mat, u, v)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))


def _find_hook(module, name):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, _SpectralNormHook) and hook.name == name:
            return key, hook
    return None, None


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Replaces parameter `name` by weight_orig (the same Parameter) and random unit buffers
    weight_u, weight_v; module.<name> is recomputed by a forward pre-hook. Returns module."""
    if _find_hook(module, name)[1] is not None:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                           f"{name}")
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"`SpectralNorm` cannot be applied: module {type(module).__name__} has "
                         f"no parameter `{name}` (or it is None)")
    if dim is None:
        dim = _default_dim(module)
    dim = _spectral.check_args(weight, n_power_iterations, dim)
    hook = _SpectralNormHook(name, n_power_iterations, dim, eps)
    with no_grad():
        h, w = _spectral.weight_matrix(weight, dim).shape
        u = _spectral.random_unit(h, weight, eps)
        v = _spectral.random_unit(w, weight, eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    # Code reading module.weight before the first forward still finds a tensor (not a
    # Parameter, which would register again): the unnormalized values.
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module, name="weight"):
    """Makes module.<name> a plain Parameter holding the current normalized weight (no power
    iteration) and drops weight_orig, weight_u, weight_v and the hook. Returns module."""
    key, hook = _find_hook(module, name)
    if hook is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    with no_grad():
        weight = hook.compute_weight(module, do_power_iteration=False)
    del module._forward_pre_hooks[key]
    for attr in (name, name + "_u", name + "_v", name + "_orig"):
        delattr(module, attr)
    module.register_parameter(name, Parameter(weight.detach()))
    return module
