"""Linear layers: Identity, Linear, Bilinear, Flatten and Unflatten."""
import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "Flatten", "Unflatten"]


def _factory(device, dtype):
    return {"device": device, "dtype": dtype if dtype is not None else _C.get_default_dtype()}


def _weight_and_bias(module, weight_shape, bias_size, bias, kw):
    """Registers weight (and bias, or a None bias) and gives them torch's default init:
    kaiming_uniform_(a=sqrt(5)) and U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    module.weight = Parameter(_C.empty(weight_shape, **kw))
    if bias:
        module.bias = Parameter(_C.empty(bias_size, **kw))
    else:
        module.register_parameter("bias", None)
    _reset_weight_and_bias(module)


def _reset_weight_and_bias(module):
    init.kaiming_uniform_(module.weight, a=math.sqrt(5))
    if module.bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(module.weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(module.bias, -bound, bound)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x A^T + b."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), out_features, bias, kw)

    def reset_parameters(self):
        _reset_weight_and_bias(self)

    def forward(self, input):
        return _C.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y = x1^T A x2 + b."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(_C.empty((out_features, in1_features, in2_features), **kw))
        if bias:
            self.bias = Parameter(_C.empty(out_features, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        d = self.dim if self.dim >= 0 else input.dim() + self.dim
        shape = list(input.shape)
        return input.reshape(shape[:d] + list(self.unflattened_size) + shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
