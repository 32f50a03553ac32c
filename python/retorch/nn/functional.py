"""retorch.nn.functional: torch.nn.functional's signatures over retorch's C++ operators."""
import math
import warnings

from .. import _C
from ..autograd import no_grad
from .._C import Tensor
from ..linalg import _multi_head_attention_forward as multi_head_attention_forward  # noqa: F401
from ._functional_3d import _out_len, _pooling_output_shape

# Operators whose C++ schema already is torch.nn.functional's.
conv1d = _C.conv1d
conv2d = _C.conv2d
conv_transpose1d = _C.conv_transpose1d
conv_transpose2d = _C.conv_transpose2d
linear = _C.linear
gelu = _C.gelu
logsigmoid = _C.logsigmoid
softsign = _C.softsign
tanhshrink = _C.tanhshrink
hardshrink = _C.hardshrink
softshrink = _C.softshrink
softplus = _C.softplus
glu = _C.glu
prelu = _C.prelu
pixel_shuffle = _C.pixel_shuffle
pixel_unshuffle = _C.pixel_unshuffle
cosine_similarity = _C.cosine_similarity
pairwise_distance = _C.pairwise_distance
scaled_dot_product_attention = _C.scaled_dot_product_attention
local_response_norm = _C.local_response_norm
tanh = _C.tanh
sigmoid = _C.sigmoid


def _reduction(size_average, reduce, reduction):
    """torch's legacy size_average/reduce flags folded into reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


# Activations ----------------------------------------------------------------------------------
def _inplace(fn, fn_):
    def act(input, inplace=False):
        return fn_(input) if inplace else fn(input)
    act.__name__ = fn.__name__
    return act


relu = _inplace(_C.relu, _C.relu_)
relu6 = _inplace(_C.relu6, _C.relu6_)
selu = _inplace(_C.selu, _C.selu_)
silu = _inplace(_C.silu, _C.silu_)
mish = _inplace(_C.mish, _C.mish_)
hardswish = _inplace(_C.hardswish, _C.hardswish_)
hardsigmoid = _inplace(_C.hardsigmoid, _C.hardsigmoid_)


def relu_(input):
    return _C.relu_(input)


def elu(input, alpha=1.0, inplace=False):
    return _C.elu_(input, alpha) if inplace else _C.elu(input, alpha)


def celu(input, alpha=1.0, inplace=False):
    return _C.celu_(input, alpha) if inplace else _C.celu(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _C.leaky_relu_(input, negative_slope) if inplace else \
        _C.leaky_relu(input, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _C.hardtanh_(input, min_val, max_val) if inplace else \
        _C.hardtanh(input, min_val, max_val)


def threshold(input, threshold, value, inplace=False):
    return _C.threshold_(input, threshold, value) if inplace else \
        _C.threshold(input, threshold, value)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _C.rrelu_(input, lower, upper, training) if inplace else \
        _C.rrelu(input, lower, upper, training)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.log_softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return _C.softmin(input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p over dim, eps); with out=, written into out (resized) and returned."""
    denom = _C.linalg_vector_norm(input, p, [dim], True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    _C.div(input, denom, out=out)
    return out


def one_hot(tensor, num_classes=-1):
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor.")
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    out = _C.zeros(list(tensor.shape) + [num_classes], dtype=_C.int64)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


# Dropout --------------------------------------------------------------------------------------
def _dropout(op, input, p, training, inplace):
    _check_p(p)
    out = op(input, p, training)
    return input.copy_(out) if inplace else out


def dropout(input, p=0.5, training=True, inplace=False):
    return _dropout(_C.dropout, input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _dropout(_C.alpha_dropout, input, p, training, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _dropout(_C.feature_alpha_dropout, input, p, training, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    out = _C.feature_dropout(x, p, training)
    out = out if batched else out.squeeze(0)
    return input.copy_(out) if inplace else out


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _dropout(_C.feature_dropout, input, p, training, inplace)


# Normalization --------------------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if training and input.shape[0] * math.prod(input.shape[2:]) == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{_size(input)}")
    if input.numel() == 0:
        # torch's shortcut, taken before any shape check: a copy (so the graph goes on), times
        # weight[0] plus bias[0]; the running stats are left alone.
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        return out + bias[0] if bias is not None else out
    return _C.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                         eps, False)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    return _C.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                            momentum, eps, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _C.layer_norm(input, list(normalized_shape), weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _C.rms_norm(input, list(normalized_shape), weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _C.group_norm(input, num_groups, weight, bias, eps)


# Pooling --------------------------------------------------------------------------------------
# Note [Pool argument checks]: torch checks pooling arguments in its C++ kernels, in an order and
# with messages that differ per function (and, for max_pool1d, per path: with indices, or with
# grad enabled on an input that requires it, it goes through max_pool1d_with_indices). The checks
# below replay torch 1.13's, in its order; they are integer comparisons only. max_pool2d and
# avg_pool2d and the 1-d pools without indices run them only after their kernel refuses the
# arguments (they cost about 3 us, twice the call); the others run them first.
# The 1-d pools run the 2-d checks on (..., 1, L), so their later errors name the unsqueezed
# sizes, as torch's do.
def _ints(v, n):
    """An int-list argument as torch's parser reads it: an int fills n slots, None is empty."""
    if v is None:
        return []
    return list(v) if isinstance(v, (tuple, list)) else [v] * n


def _check_dim_range(op, input, lo, hi):
    if not lo <= input.dim() < hi:
        raise RuntimeError(f"Expected {lo} to {hi - 1} dimensions, but got {input.dim()}-"
                           "dimensional tensor for argument #1 'self' (while checking arguments "
                           f"for {op})")


def _check1d(op, name, v):
    if len(v) != 1:
        raise RuntimeError(f"{op}() argument '{name}' should contain one int (got {len(v)})")


def _pool2d_sizes(op, kernel_size, stride, padding):
    """(kH, kW), (dH, dW), (padH, padW) of a 2-d pool, after torch's length checks."""
    k, s, p = _ints(kernel_size, 2), _ints(stride, 2), _ints(padding, 2)
    if len(k) not in (1, 2):
        raise RuntimeError(f"{op}: kernel_size must either be a single int, or a tuple of two ints")
    if len(s) > 2:
        raise RuntimeError(f"{op}: stride must either be omitted, a single int, or a tuple of two "
                           "ints")
    if len(p) not in (1, 2):
        must = "must be either" if op == "max_pool2d" else "must either"  # sic, torch's words
        raise RuntimeError(f"{op}: padding {must} be a single int, or a tuple of two ints")
    s = s or k
    return (k[0], k[-1]), (s[0], s[-1]), (p[0], p[-1])


def _pool2d_shape_check(input, k, s, d, out):
    """torch's pool2d_shape_check (its pad check is pooling_output_shape's, already made)."""
    if not (k[1] > 0 and k[0] > 0):
        raise RuntimeError("kernel size should be greater than zero, but got "
                           f"kH: {k[0]} kW: {k[1]}")
    if not (s[1] > 0 and s[0] > 0):
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if not (d[0] > 0 and d[1] > 0):
        raise RuntimeError("dilation should be greater than zero, but got dilationH: "
                           f"{d[0]} dilationW: {d[1]}")
    shape = list(input.shape)
    valid = shape[1] != 0 and shape[2] != 0
    if not ((len(shape) == 3 and shape[0] != 0 and valid) or
            (len(shape) == 4 and valid and shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{shape}")
    if out[1] < 1 or out[0] < 1:
        c, h, w = shape[-3:]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}). Output size is too small")


def _check_max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode):
    """torch's max_pool2d_with_indices checks. See Note [Pool argument checks]."""
    k, s, p = _pool2d_sizes("max_pool2d", kernel_size, stride, padding)
    d = _ints(dilation, 2)
    if len(d) not in (1, 2):
        raise RuntimeError("max_pool2d: dilation must be either a single int, or a tuple of two "
                           "ints")
    d = (d[0], d[-1])
    if input.dim() not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    out = [_pooling_output_shape(input.shape[i - 2], k[i], p[i], s[i], d[i], ceil_mode)
           for i in range(2)]
    _pool2d_shape_check(input, k, s, d, out)
    return k, s, p, d


def _check_max_pool1d(input, k, s, p, d, ceil_mode):
    """torch's check_max_pool1d, on the plain (no indices, no grad) path."""
    if len(k) != 1:
        raise RuntimeError("max_pool1d() kernel_size must be an int, list of ints or tuple of ints "
                           f"of size 1 but got size {len(k)}")
    if len(s) > 1:
        raise RuntimeError("max_pool1d() stride must be None, an int, list of ints, or tuple of "
                           f"ints of size 1 but got size {len(s)}")
    if len(p) != 1:
        raise RuntimeError("max_pool1d() padding must be an int, list of ints, or tuple of ints of "
                           f"size 1 but got size {len(p)}")
    if len(d) != 1:
        raise RuntimeError("max_pool1d() dilation must be an int, list of ints or tuple of ints of "
                           f"size 1 but got size {len(d)}")
    (k,), (s,), (p,), (d,) = k, s or k, p, d
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _out_len(input.shape[-1], k, s, p, d, ceil_mode)
    if out < 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    return out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if not return_indices:
        try:  # the checks run only when the kernel refuses (Note [Pool argument checks])
            return _C.max_pool1d(input, kernel_size, [] if stride is None else stride, padding,
                                 dilation, ceil_mode)
        except (RuntimeError, IndexError, TypeError):
            k, s, p, d = (_ints(v, 1) for v in (kernel_size, stride, padding, dilation))
            shape = list(input.shape)
            if not ((len(shape) == 2 and shape[0] != 0 and shape[1] != 0) or
                    (len(shape) == 3 and shape[1] != 0 and shape[2] != 0)):
                raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with "
                                   f"optional 0 dim batch size for input, but got:{shape}") \
                    from None
            if not (input.requires_grad and _C.is_grad_enabled()):
                if _check_max_pool1d(input, k, s, p, d, ceil_mode) == 0:  # torch allows no windows
                    return input.new_empty(tuple(input.shape[:-1]) + (0,))
                raise
            _check_max_pool1d_with_indices(input, k, s, p, d, ceil_mode)
            raise
    x, k, s, p, d = _check_max_pool1d_with_indices(
        input, *(_ints(v, 1) for v in (kernel_size, stride, padding, dilation)), ceil_mode)
    out, idx = _C.max_pool2d_with_indices(x, k, s, p, d, ceil_mode)
    return out.squeeze(-2), idx.squeeze(-2)


def _check_max_pool1d_with_indices(input, k, s, p, d, ceil_mode):
    """torch's max_pool1d_with_indices checks, then the 2-d ones on (..., 1, L) (See Note [Pool
    argument checks]); that input and the 2-d (k, s, p, d)."""
    s = s or k
    _check_dim_range("max_pool1d", input, 2, 4)
    for name, v in (("kernel_size", k), ("stride", s), ("padding", p), ("dilation", d)):
        _check1d("max_pool1d", name, v)
    x = input.unsqueeze(-2)
    k, s, p, d = (1, k[0]), (1, s[0]), (0, p[0]), (1, d[0])
    _check_max_pool2d(x, k, s, p, d, ceil_mode)
    return x, k, s, p, d


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    try:  # the checks run only when the kernel refuses (Note [Pool argument checks])
        if return_indices:
            return _C.max_pool2d_with_indices(input, kernel_size, [] if stride is None else
                                              stride, padding, dilation, ceil_mode)
        return _C.max_pool2d(input, kernel_size, [] if stride is None else stride, padding,
                             dilation, ceil_mode)
    except (RuntimeError, IndexError, TypeError):
        _check_max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
        raise


def _check_avg_pool2d(input, kernel_size, stride, padding, ceil_mode, divisor_override):
    """torch's avg_pool2d checks. See Note [Pool argument checks]."""
    k, s, p = _pool2d_sizes("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if input.dim() < 3:  # torch reads input.size(-3) here
        n = input.dim()
        raise IndexError("Dimension specified as -3 but tensor has no dimensions" if n == 0 else
                         f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         "but got -3)")
    out = [_pooling_output_shape(input.shape[i - 2], k[i], p[i], s[i], 1, ceil_mode)
           for i in range(2)]
    _pool2d_shape_check(input, k, s, (1, 1), out)
    return k, s, p


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    k, s, p = _ints(kernel_size, 1), _ints(stride, 1), _ints(padding, 1)
    s = s or k
    if len(k) == len(s) == len(p) == 1 and input.dim() in (2, 3):
        try:  # the checks run only when the kernel refuses (Note [Pool argument checks])
            return _C.avg_pool2d(input.unsqueeze(-2), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode,
                                 count_include_pad, None).squeeze(-2)
        except (RuntimeError, IndexError, TypeError):
            pass
    _check_dim_range("avg_pool1d", input, 2, 4)
    for name, v in (("kernel_size", k), ("stride", s), ("padding", p)):
        _check1d("avg_pool1d", name, v)
    return avg_pool2d(input.unsqueeze(-2), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode,
                      count_include_pad).squeeze(-2)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    try:  # the checks run only when the kernel refuses (Note [Pool argument checks])
        return _C.avg_pool2d(input, kernel_size, [] if stride is None else stride, padding,
                             ceil_mode, count_include_pad, divisor_override)
    except (RuntimeError, IndexError, TypeError):
        _check_avg_pool2d(input, kernel_size, stride, padding, ceil_mode, divisor_override)
        raise


def adaptive_avg_pool1d(input, output_size):
    return _C.adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size))).squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out, idx = _C.adaptive_max_pool2d(input.unsqueeze(-2), (1, _one(output_size)))
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, idx = _C.adaptive_max_pool2d(input, _adaptive_size(input, output_size))
    return (out, idx) if return_indices else out


def adaptive_avg_pool2d(input, output_size):
    return _C.adaptive_avg_pool2d(input, _adaptive_size(input, output_size))


def _adaptive_size(input, output_size):
    if isinstance(output_size, int):
        return (output_size, output_size)
    return tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size))


def _one(v):
    return v[0] if isinstance(v, (tuple, list)) else v


# Embeddings -----------------------------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.shape[0], "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.shape[0], "Padding_idx must be within num_embeddings"
            padding_idx = weight.shape[0] + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        with no_grad():
            _C.embedding_renorm_(weight, input.contiguous(), max_norm, norm_type)
    out = _C.embedding(weight, input, padding_idx, scale_grad_by_freq, False)
    return _sparse_gradient("embedding", out, scale_grad_by_freq) if sparse else out


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxes of the bags of weight's rows that input lists, with torch's checks in
    its order; a 2-D input (and per_sample_weights) is one bag per row."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets)}")
        offsets = _C.arange(0, input.numel(), input.shape[1], dtype=input.dtype,
                            device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        with no_grad():
            _C.embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if include_last_offset and offsets.numel():
        # Indices past the last offset are in no bag (a 2-D input's last row among them, as in
        # torch, whose 1.13 kernel reads out of bounds there). The C++ backward pass would still
        # give their per-sample weights a gradient, so they are cut here.
        end = int(offsets[-1].item())
        if end < input.numel():
            input = input[:end]
            per_sample_weights = None if per_sample_weights is None else per_sample_weights[:end]
    out = _C.embedding_bag(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode], False,
                           per_sample_weights, include_last_offset, padding_idx)[0]
    return _sparse_gradient("embedding_bag", out, scale_grad_by_freq) if sparse else out


_DENSE_WARNED = set()


def _sparse_gradient(op, out, scale_grad_by_freq):
    """out of op(..., sparse=True). retorch has no sparse tensors, so the gradient comes dense,
    with the values of torch's sparse one (its to_dense()), and a warning once per op. torch
    can't scale a sparse gradient by frequency and fails in the backward pass; so does this."""
    if op not in _DENSE_WARNED:
        _DENSE_WARNED.add(op)
        warnings.warn(f"{op}: sparse=True gives a dense gradient here (retorch has no sparse "
                      "tensors); its values are those of torch's sparse gradient", UserWarning,
                      stacklevel=3)
    if scale_grad_by_freq and out.requires_grad:
        def refuse(grad):
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                               "gradients")
        out.register_hook(refuse)
    return out


# Losses ---------------------------------------------------------------------------------------
def _broadcast_pair(input, target):
    """input and target broadcast to one shape, with torch's warning when their sizes differ
    and its broadcasting error when they do not broadcast (torch's Python does both)."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({_size(target)}) that is different to the input size "
                      f"({_size(input)}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)
        from ..functional import broadcast_tensors
        return broadcast_tensors(input, target)
    return input, target


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    input, target = _broadcast_pair(input, target)
    return _C.mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    input, target = _broadcast_pair(input, target)
    return _C.l1_loss(input, target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    input, target = _broadcast_pair(input, target)
    return _C.smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0):
    input, target = _broadcast_pair(input, target)
    return _C.huber_loss(input, target, reduction, delta)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    return _C.nll_loss(input, target, weight, ignore_index,
                       _reduction(size_average, reduce, reduction))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    return _C.cross_entropy(input, target, weight, ignore_index,
                            _reduction(size_average, reduce, reduction), label_smoothing)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_size(target)}) that is different to the input "
                         f"size ({_size(input)}) is deprecated. Please ensure they have the same "
                         "size.")
    return _C.binary_cross_entropy(input, target, weight,
                                   _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_size(target)}) must be the same as input size "
                         f"({_size(input)})")
    return _C.binary_cross_entropy_with_logits(input, target, weight,
                                               _reduction(size_average, reduce, reduction),
                                               pos_weight)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    return _C.kl_div(input, target, _reduction(size_average, reduce, reduction), log_target)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")  # torch's own check, before the op's
    return _C.poisson_nll_loss(input, target, log_input, full, eps, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _C.soft_margin_loss(input, target, _reduction(size_average, reduce, reduction))


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    return _C.multi_margin_loss(input, target, p, margin, weight,
                                _reduction(size_average, reduce, reduction))


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {_size(input1)}, input2: {_size(input2)}, "
                           f"target: {_size(target)} ")
    return _C.margin_ranking_loss(input1, input2, target, margin,
                                  _reduction(size_average, reduce, reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    return _C.hinge_embedding_loss(input, target, margin,
                                   _reduction(size_average, reduce, reduction))


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    return _C.cosine_embedding_loss(input1, input2, target, margin,
                                    _reduction(size_average, reduce, reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    return _C.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                  _reduction(size_average, reduce, reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    from .. import tensor

    def as_t(v):
        return v if isinstance(v, Tensor) else tensor(list(v), dtype=_C.int64)
    return _C.ctc_loss(log_probs, targets, as_t(input_lengths), as_t(target_lengths), blank,
                       reduction, zero_infinity)


# Shape ----------------------------------------------------------------------------------------
def pad(input, pad, mode="constant", value=None):
    return _C.pad(input, list(pad), mode, value)


_INTERP_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_INTERP_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5}  # the input rank each mode needs


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch's F.interpolate of (N, C, L), (N, C, H, W) or (N, C, D, H, W) input, with torch's
    argument checks in torch's order and its output-size and scale-factor rules."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes:"
                             " linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    spatial = list(input.shape[2:])
    out, scales = _interp_size(spatial, dim, size, scale_factor, recompute_scale_factor)
    if mode == "area":  # it takes the output size, never the scale factors
        scales = [None] * len(scales)
    if antialias and not (mode in ("bilinear", "bicubic") and dim == 2):
        raise ValueError("Anti-alias option is only supported for bilinear and bicubic modes")
    rank = _INTERP_RANK.get(mode)
    if input.dim() in (3, 4, 5) and rank not in (None, input.dim()):
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {rank}D "
                                  "input")
    if input.dim() not in (3, 4, 5) or mode not in _INTERP_MODES or \
            (mode == "bicubic" and dim != 2):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | area | nearest-exact (got {mode})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported here")
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dim - 1](input, out)
    if any(o <= 0 for o in out):
        names = "DHW"[3 - dim:]
        got = ", ".join(f"{d}: {n}" for d, n in zip(names, spatial))
        want = ", ".join(f"{d}: {n}" for d, n in zip(names, out))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({got}) and output ({want})")
    # torch's linear kernels copy a dim whose size is unchanged whatever the scale factor, and so
    # does its channels-last nearest kernel (taken by any input whose strides also fit that
    # layout, as with one channel), which also halves the index of a doubled dim. Without the
    # scale factor (or with one of exactly 1 or 2 there) every kernel here computes the same.
    channels_last = dim > 1 and _channels_last_strided(input)
    copies = mode in _INTERP_RANK or (mode == "nearest" and channels_last)

    def moot(o, n, s):
        return (o == n or (o == 2 * n and mode == "nearest")) and (copies or s == o / n)
    scales = [None if moot(o, n, s) else s for o, n, s in zip(out, spatial, scales)]
    # retorch's nearest2d kernel takes those shortcuts for every input, so an input torch sends
    # to its plain nearest kernel with another scale factor on such a dim is resampled here.
    shortcut = any(s is not None and o in (n, 2 * n) for o, n, s in zip(out, spatial, scales))
    if dim == 2 and mode == "nearest" and not shortcut:
        return _C.upsample_nearest2d(input, out, *scales)
    if dim == 2 and mode == "bilinear":
        return _C.upsample_bilinear2d(input, out, align_corners, *scales)
    from ._functional_3d import _resample
    return _resample(input, out, scales, mode, align_corners)


def _interp_size(spatial, dim, size, scale_factor, recompute_scale_factor):
    """F.interpolate's output size and per-dim scale factors (None where the kernels derive the
    scale from the sizes), with torch's checks."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales = [None] * max(dim, 0)
    if size is not None:
        if isinstance(size, (list, tuple)) and len(size) != dim:
            raise ValueError("Input and output must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {spatial} and output "
                             f"size of {size}. Please provide input tensor in (N, C, d1, d2, "
                             "...,dK) format and output size in (o1, o2, ...,oK) format.")
        out = list(size) if isinstance(size, (list, tuple)) else [size] * max(dim, 0)
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)) and len(scale_factor) != dim:
            raise ValueError("Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {spatial} "
                             f"and scale_factor of shape {scale_factor}. Please provide input "
                             "tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             "s2, ...,sK) format.")
        scales = [float(s) for s in scale_factor] if isinstance(scale_factor, (list, tuple)) \
            else [float(scale_factor)] * max(dim, 0)
        out = [int(math.floor(float(n) * s)) for n, s in zip(spatial, scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    return out, [None] * len(scales) if recompute_scale_factor else scales


def _channels_last_strided(x):
    """Whether x's strides are those of a (N, *spatial, C) memory layout, size-1 dims taking any
    stride: torch's test for its channels-last kernels, true of contiguous one-channel input."""
    expected = 1
    for d in [1] + list(range(x.dim() - 1, 1, -1)) + [0]:
        if x.shape[d] != 1:
            if x.stride(d) != expected:
                return False
            expected *= x.shape[d]
    return True


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _C.im2col(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _C.col2im(input, output_size, kernel_size, dilation, padding, stride)


def _size(t):
    return repr(t.shape)  # torch.Size([...]), as torch's messages


def bilinear(input1, input2, weight, bias=None):
    from ..linalg import _einsum
    dtype = input1.dtype
    # torch's half/bfloat16 bilinear (_trilinear: two bmm contractions per output feature)
    # rounds each partial sum; float32 throughout and one rounding is as close to exact or closer.
    low = dtype in (_C.bfloat16, _C.float16) and all(
        t is None or t.dtype == dtype for t in (input2, weight, bias))
    if low:
        input1, input2, weight = input1.float(), input2.float(), weight.float()
        bias = None if bias is None else bias.float()
    out = _einsum("...i,oij,...j->...o", input1, weight, input2)
    out = out + bias if bias is not None else out
    return out.to(dtype) if low else out


from ._functional_extra import *  # noqa: E402,F401,F403  (in-place forms, LP/unpool, more losses)
from ._functional_3d import *  # noqa: E402,F401,F403  (conv3d, 3-d pools)
from ._functional_more import *  # noqa: E402,F401,F403  (dropout3d, fractional pools, ...)
