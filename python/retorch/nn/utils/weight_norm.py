"""torch.nn.utils.weight_norm: a parameter re-expressed as g * v / ||v|| (g the norm over every
dim but `dim`), recomputed before each forward by a pre-hook; remove_weight_norm undoes it."""
from ..parameter import Parameter

__all__ = ["weight_norm", "remove_weight_norm"]


def _norm_except_dim(v, dim):
    if dim == -1:  # torch's convention (dim=None becomes -1): the norm of the whole tensor
        return v.norm()
    d = dim % v.dim() if v.dim() else 0
    dims = [i for i in range(v.dim()) if i != d]
    return (v * v).sum(dims, keepdim=True).sqrt() if dims else v.abs()


class _WeightNorm:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute(module))


def weight_norm(module, name="weight", dim=0):
    for hook in getattr(module, "_weight_norm_hooks", {}).values():
        if hook[0].name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
    if dim is None:
        dim = -1
    fn = _WeightNorm(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute(module))
    handle = module.register_forward_pre_hook(fn)
    if "_weight_norm_hooks" not in module.__dict__:
        module.__dict__["_weight_norm_hooks"] = {}
    module.__dict__["_weight_norm_hooks"][name] = (fn, handle)
    return module


def remove_weight_norm(module, name="weight"):
    hooks = module.__dict__.get("_weight_norm_hooks", {})
    if name not in hooks:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    fn, handle = hooks.pop(name)
    weight = fn.compute(module).detach()
    handle.remove()
    del module._parameters[name + "_g"]
    del module._parameters[name + "_v"]
    if name in module.__dict__:
        del module.__dict__[name]
    module.register_parameter(name, Parameter(weight))
    return module
