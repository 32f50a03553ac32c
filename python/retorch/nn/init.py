"""retorch.nn.init: torch.nn.init's initializers over the C++ ones (in place, no autograd)."""
import warnings

from .. import _C
from ..autograd import no_grad

_nn = _C._nn

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "trunc_normal_", "sparse_"]


def calculate_gain(nonlinearity, param=None):
    return _nn.calculate_gain(nonlinearity, param)


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    return _nn._calculate_fan_in_and_fan_out(tensor)


# Each returns the tensor object it was given, as torch's do.
def uniform_(tensor, a=0.0, b=1.0, generator=None):
    _nn.uniform_(tensor, a, b, generator)
    return tensor


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    _nn.normal_(tensor, mean, std, generator)
    return tensor


def constant_(tensor, val):
    _nn.constant_(tensor, val)
    return tensor


def ones_(tensor):
    _nn.ones_(tensor)
    return tensor


def zeros_(tensor):
    _nn.zeros_(tensor)
    return tensor


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    _nn.eye_(tensor)
    return tensor


def dirac_(tensor, groups=1):
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = tensor.shape[0] // groups
    min_dim = min(out_per_group, tensor.shape[1])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min_dim):
                idx = (g * out_per_group + d, d) + tuple(s // 2 for s in tensor.shape[2:])
                tensor[idx] = 1
    return tensor


def xavier_uniform_(tensor, gain=1.0):
    _nn.xavier_uniform_(tensor, gain)
    return tensor


def xavier_normal_(tensor, gain=1.0):
    _nn.xavier_normal_(tensor, gain)
    return tensor


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    _nn.kaiming_uniform_(tensor, a, mode, nonlinearity)
    return tensor


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    _nn.kaiming_normal_(tensor, a, mode, nonlinearity)
    return tensor


def orthogonal_(tensor, gain=1):
    _nn.orthogonal_(tensor, gain)
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    _nn.trunc_normal_(tensor, mean, std, a, b)
    return tensor


def sparse_(tensor, sparsity, std=0.01):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(-(-sparsity * rows // 1))
    with no_grad():
        tensor.normal_(0, std)
        for c in range(cols):
            rows_idx = _C.randperm(rows)[:num_zeros]
            for r in rows_idx.tolist():
                tensor[r, c] = 0
    return tensor


def _make_deprecate(meth):
    """The deprecated name without the trailing underscore: warns, then calls meth."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"nn.init.{old_name} is now deprecated in favor of nn.init.{new_name}.",
                      stacklevel=2)
        return meth(*args, **kwargs)
    deprecated_init.__doc__ = f"""{old_name}(...): deprecated; use nn.init.{new_name}."""
    deprecated_init.__name__ = old_name
    return deprecated_init


# Deprecated names torch still exports.
uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
