"""More of torch.nn.functional composed of retorch's operators: dropout3d, max_unpool3d, the
fractional max pools, native_channel_shuffle and conv_tbc. functional.py installs them."""
import math
import warnings

import numpy as np

from .. import _C
from ..autograd import no_grad

__all__ = ["dropout3d", "max_unpool3d", "fractional_max_pool2d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices", "native_channel_shuffle", "conv_tbc"]


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    dim = input.dim()
    if dim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {dim}-D input to dropout3d, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead. Note that dropout3d "
                      "exists to provide channel-wise dropout on inputs with 3 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 4D "
                      "or 5D inputs).")
    batched = dim == 5
    out = _C.feature_dropout(input if batched else input.unsqueeze(0), p, training)
    out = out if batched else out.squeeze(0)
    return input.copy_(out) if inplace else out


# Max unpooling --------------------------------------------------------------------------------
def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """torch's output size of max_unpool: the pool's input size, or output_size (with or
    without the N, C dims) if it is within a stride of it."""
    n = len(kernel_size)
    default = [(input.shape[input.dim() - n + d] - 1) * stride[d] + kernel_size[d] -
               2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(n):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            # Printed as given (a list, tuple or Size), as torch does.
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be '
                             f"between {low} and {high})")
    return list(output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Scatters input (N, C, D, H, W) or (C, D, H, W) to the flat D*H*W positions that
    max_pool3d's indices name, zeros elsewhere; the gradient gathers from the same places."""
    kernel_size = _ntuple(kernel_size, 3)
    stride = _ntuple(stride, 3) if stride is not None else kernel_size
    padding = _ntuple(padding, 3)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    if input.dim() not in (4, 5):
        raise RuntimeError("Input to max_unpooling3d should be a 4d or 5d Tensor, but got a "
                           f"tensor with {input.dim()} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    plane = math.prod(size)
    if indices.numel() and (indices.min().item() < 0 or indices.max().item() >= plane):
        bad = indices.max().item() if indices.max().item() >= plane else indices.min().item()
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{size[0]}x{size[1]}x{size[2]}")
    lead = tuple(input.shape[:-3])
    out = _C.zeros(lead + (plane,), dtype=input.dtype, device=input.device)
    out = out.scatter(-1, indices.reshape(lead + (-1,)), input.reshape(lead + (-1,)))
    return out.reshape(lead + tuple(size))


# Fractional max pooling -----------------------------------------------------------------------
# Note [Fractional windows]: torch's fractional max pool (Graham, 2014) draws one sample u in
# [0, 1) per (batch, plane, dim) and starts output i's window of size k at
# int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1), the last one at in - k.
# torch does this arithmetic in the input's dtype (float32 for float32 input), so the starts are
# computed in numpy in that dtype: float64 arithmetic rounds some products across an integer and
# moves a window. _random_samples' last dim holds (W, H) in 2-d and (T, H, W) in 3-d, the order
# torch's kernels read. Each window's max (the first of equal values, the last
# NaN, as torch's scan keeps) is found without grad, and the output is a gather of the input at
# those flat indices, so its gradient is torch's scatter-add to the argmax.
def _starts(samples, in_size, out_size, k):
    """(B, C) samples -> (B, C, out_size) window starts. See Note [Fractional windows]."""
    dt = samples.dtype.type
    seq = np.empty(samples.shape + (out_size,), np.int64)
    if out_size > 1:
        alpha = dt(in_size - k) / dt(out_size - 1)
        u = samples[..., None]
        i = np.arange(out_size - 1).astype(samples.dtype)
        seq[..., :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out_size > 0:
        seq[..., -1] = in_size - k
    return seq


def _fractional(op, input, kernel_size, output_size, output_ratio, samples, n):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    spatial = [input.size(d) for d in range(-n, 0)]
    if output_size is None:
        ratio = _ntuple(output_ratio, n)
        output_size = [int(spatial[d] * ratio[d]) for d in range(n)]
    if samples is None:
        batch = 1 if input.dim() == n + 1 else input.size(0)
        samples = _C.rand([batch, input.size(-n - 1), n], dtype=input.dtype,
                          device=input.device)
    kernel = _ntuple(kernel_size, n)
    out = _ntuple(output_size, n)
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    for d in range(1, input.dim()):  # dim 0 may be empty, batch or not, as in torch
        if input.shape[d] == 0:
            where = "fractional_max_pool3d_out" if n == 3 else op  # torch's own prefixes
            raise RuntimeError(f"{where}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(input.shape)} with dimension {d} "
                               "being empty.")
    names = ("height", "width") if n == 2 else ("time", "height", "width")
    for d in range(n):
        if out[d] + kernel[d] - 1 > spatial[d]:
            raise RuntimeError(f"{op}(): pool {names[d]} {kernel[d]} too large relative to "
                               f"input {names[d]} {spatial[d]}")
    x = input if input.dim() == n + 2 else input.unsqueeze(0)
    b, c = x.shape[0], x.shape[1]
    if tuple(samples.shape) != (b, c, n):
        raise RuntimeError(f"{op}(): expected _random_samples of shape {[b, c, n]}, but got "
                           f"{list(samples.shape)}")
    u = samples.detach().cpu().numpy()
    if u.dtype not in (np.float32, np.float64):
        u = u.astype(np.float32)
    # Sample slot per dim: (W, H) in 2-d, (T, H, W) in 3-d. See Note [Fractional windows].
    slot = (1, 0) if n == 2 else (0, 1, 2)
    starts = [_starts(u[..., slot[d]], spatial[d], out[d], kernel[d]) for d in range(n)]
    # Flat index of every window element: (B, C, *out, *kernel), row-major over the input dims.
    # (This index array, B*C*prod(out)*prod(kernel) int64s, is where the memory goes.)
    flat = np.zeros((b, c) + tuple(out) + tuple(kernel), np.int64)
    for d in range(n):
        start = starts[d].reshape((b, c) + (1,) * d + (out[d],) + (1,) * (2 * n - 1 - d))
        offset = np.arange(kernel[d]).reshape((1,) * (2 + n + d) + (kernel[d],) +
                                              (1,) * (n - 1 - d))
        flat = flat + (start + offset) * math.prod(spatial[d + 1:])
    plane = math.prod(spatial)
    window = math.prod(kernel)
    xf = x.reshape(b, c, plane)
    count = math.prod(out)  # sizes spelled out: a -1 can't be inferred for an empty batch
    taps = _C.from_numpy(np.ascontiguousarray(flat.reshape(b, c, count * window)))
    taps = taps.to(x.device)
    with no_grad():
        vals = xf.gather(2, taps).reshape(b, c, count, window)
        nan = vals.isnan()
        pos = _C.arange(1, window + 1, device=x.device)
        last_nan = (nan.to(_C.int64) * pos).argmax(-1, keepdim=True)
        pick = _C.where(nan.any(-1, keepdim=True), last_nan, vals.argmax(-1, keepdim=True))
        indices = taps.reshape(b, c, count, window).gather(3, pick).reshape(b, c, count)
    output = xf.gather(2, indices).reshape((b, c) + tuple(out))
    indices = indices.reshape((b, c) + tuple(out))
    if input.dim() == n + 1:
        return output.squeeze(0), indices.squeeze(0)
    return output, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """(output, indices) of 2-d fractional max pooling of (N, C, H, W) or (C, H, W); indices
    are flat over H*W. See Note [Fractional windows]."""
    return _fractional("fractional_max_pool2d", input, kernel_size, output_size, output_ratio,
                       _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """(output, indices) of 3-d fractional max pooling of (N, C, T, H, W) or (C, T, H, W);
    indices are flat over T*H*W. See Note [Fractional windows]."""
    return _fractional("fractional_max_pool3d", input, kernel_size, output_size, output_ratio,
                       _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


def native_channel_shuffle(input, groups):
    from ._functional_extra import channel_shuffle
    return channel_shuffle(input, groups)


def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution of time-major input (T, N, C_in) with weight (k, C_in, C_out) and bias
    (C_out), zero-padded by pad on both ends of time: (T + 2 pad - k + 1, N, C_out)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = _C.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)
