"""torch.nn.utils.fusion: a conv and the eval-mode batch norm after it folded into one conv."""
import copy

from ... import _C
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of conv whose weight and bias include bn's normalization (both in eval mode)."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    from ... import no_grad
    with no_grad():
        if conv_b is None:
            conv_b = _C.zeros_like(bn_rm)
        if bn_w is None:
            bn_w = _C.ones_like(bn_rm)
        if bn_b is None:
            bn_b = _C.zeros_like(bn_rm)
        scale = bn_w * _C.rsqrt(bn_rv + bn_eps)
        shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
        w = conv_w * scale.reshape(shape).to(conv_w.dtype)
        b = ((conv_b - bn_rm) * scale + bn_b).to(conv_b.dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)
