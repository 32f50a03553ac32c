"""Activation layers (ReLU … Softmax) and MultiheadAttention."""
from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import _factory
from .module import Module

__all__ = ["ReLU", "ReLU6", "SELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softsign", "Hardswish",
           "Hardsigmoid", "LogSigmoid", "Tanhshrink", "Softmax2d", "LeakyReLU", "ELU", "CELU",
           "GELU", "Softplus", "Hardtanh", "Softshrink", "Hardshrink", "RReLU", "GLU", "Softmax",
           "LogSoftmax", "Softmin", "Threshold", "PReLU", "MultiheadAttention"]


def _simple(name, fn, inplace_fn=None):
    """An activation without parameters; inplace_fn gives it torch's inplace=False switch."""
    if inplace_fn is None:
        def __init__(self):
            Module.__init__(self)

        def forward(self, input):
            return fn(input)
        body = {"__init__": __init__, "forward": forward}
    else:
        def __init__(self, inplace=False):
            Module.__init__(self)
            self.inplace = inplace

        def forward(self, input):
            return inplace_fn(input) if self.inplace else fn(input)

        def extra_repr(self):
            return "inplace=True" if self.inplace else ""
        body = {"__init__": __init__, "forward": forward, "extra_repr": extra_repr}
    body["__doc__"] = f"torch.nn.{name}: applies {name} elementwise."
    body["__module__"] = __name__
    return type(name, (Module,), body)


ReLU = _simple("ReLU", _C.relu, _C.relu_)
ReLU6 = _simple("ReLU6", _C.relu6, _C.relu6_)
SELU = _simple("SELU", _C.selu, _C.selu_)
SiLU = _simple("SiLU", _C.silu, _C.silu_)
Mish = _simple("Mish", _C.mish, _C.mish_)
Hardswish = _simple("Hardswish", _C.hardswish, _C.hardswish_)
Hardsigmoid = _simple("Hardsigmoid", _C.hardsigmoid, _C.hardsigmoid_)
Sigmoid = _simple("Sigmoid", _C.sigmoid)
Tanh = _simple("Tanh", _C.tanh)
Softsign = _simple("Softsign", _C.softsign)
LogSigmoid = _simple("LogSigmoid", _C.logsigmoid)
Tanhshrink = _simple("Tanhshrink", _C.tanhshrink)


class Softmax2d(Module):
    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return _C.softmax(input, -3)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return _C.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return _C.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError("max_val must be greater than min_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + \
            (", inplace=True" if self.inplace else "")


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return _C.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    def forward(self, input):
        return _C.hardshrink(input, self.lambd)


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                             else "")


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return _C.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _DimActivation(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self)._fn(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_DimActivation):
    _fn = staticmethod(F.softmax)


class LogSoftmax(_DimActivation):
    _fn = staticmethod(F.log_softmax)


class Softmin(_DimActivation):
    _fn = staticmethod(F.softmin)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + \
            (", inplace=True" if self.inplace else "")


class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(_C.empty(num_parameters, **_factory(device, dtype)))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return _C.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _LinearWithBias(Module):
    """MultiheadAttention's out_proj (torch's NonDynamicallyQuantizableLinear)."""

    def __init__(self, in_features, out_features, bias, kw):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_C.empty((out_features, in_features), **kw))
        self.bias = Parameter(_C.empty(out_features, **kw)) if bias else None
        if not bias:
            self.register_parameter("bias", None)

    def forward(self, input):
        return _C.linear(input, self.weight, self.bias)

    def _get_name(self):
        return "NonDynamicallyQuantizableLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        kw = _factory(device, dtype)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads"
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_C.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(_C.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(_C.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_C.empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_C.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = _LinearWithBias(embed_dim, embed_dim, bias, kw)
        if add_bias_kv:
            self.bias_k = Parameter(_C.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(_C.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if self.batch_first and batched:
            query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        kwargs = dict(training=self.training, key_padding_mask=key_padding_mask,
                      need_weights=need_weights, attn_mask=attn_mask,
                      average_attn_weights=average_attn_weights)
        if not self._qkv_same_embed_dim:
            kwargs.update(use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
                          k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight)
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, **kwargs)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights
