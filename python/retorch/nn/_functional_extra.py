"""More of torch.nn.functional, composed of retorch's operators: in-place activation forms,
the *_with_indices pools, LP pooling, max unpooling, channel shuffle, affine_grid, grid_sample,
pdist, gumbel_softmax and the Gaussian NLL, multilabel and triplet-with-distance losses.
functional.py installs them into its namespace."""
import math
import warnings

from .. import _C
from .._tensor import _TYPE_NAMES as _TENSOR_TYPES
from ._functional_more import _unpool_output_size

__all__ = ["elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_", "rrelu_",
           "max_pool1d_with_indices", "max_pool2d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "upsample_nearest", "upsample_bilinear", "lp_pool1d", "lp_pool2d", "max_unpool1d",
           "max_unpool2d", "channel_shuffle", "affine_grid", "pdist", "gumbel_softmax",
           "gaussian_nll_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss", "grid_sample"]


def _F():
    from . import functional
    return functional


def elu_(input, alpha=1.0):
    return _F().elu(input, alpha, inplace=True)


def celu_(input, alpha=1.0):
    return _F().celu(input, alpha, inplace=True)


def selu_(input):
    return _F().selu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return _F().leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _F().hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    return _F().threshold(input, threshold, value, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _F().rrelu(input, lower, upper, training, inplace=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _F().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return _F().adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _F().adaptive_max_pool2d(input, output_size, True)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return _F().interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return _F().interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _pair(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n):
    k = _pair(kernel_size, n)
    pool = _F().avg_pool1d if n == 1 else _F().avg_pool2d
    out = pool(input.pow(norm_type), k if n == 2 else k[0],
               stride if stride is None or n == 1 else _pair(stride, 2), 0, ceil_mode)
    area = math.prod(k)
    return (_C.sign(out) * _C.relu(_C.abs(out))).mul(area).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n):
    """max_unpool1d/2d with torch's checks and messages: torch runs the 1-d op as the 2-d one on
    (..., L, 1), so a 1-d call reports the 2-d op's dims and sizes."""
    k = _pair(kernel_size, n)
    s = _pair(stride if stride is not None else kernel_size, n)
    p = _pair(padding, n)
    size = _unpool_output_size(input, k, s, p, output_size)
    if n == 1:
        input, indices, size = input.unsqueeze(-1), indices.unsqueeze(-1), size + [1]
    _check_unpool2d(input, indices, size)
    lead = tuple(input.shape[:-2])
    out = _C.zeros(lead + (math.prod(size),), dtype=input.dtype, device=input.device)
    plane = (input.shape[-2] * input.shape[-1],)
    out = out.scatter(-1, indices.reshape(lead + plane), input.reshape(lead + plane))
    return out.reshape(lead + tuple(size[:n]))


def _type_name(dtype):
    """c10's name of a dtype ("Float"), as torch's messages print it."""
    return _TENSOR_TYPES[dtype][:-len("Tensor")]


def _check_unpool2d(input, indices, size):
    """torch's max_unpool2d checks on (C, H, W) or (N, C, H, W) input, in torch's order."""
    if indices.dtype != _C.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{_type_name(indices.dtype)}")
    if input.dim() not in (3, 4):
        raise RuntimeError("Input to max_unpooling2d should be a 3d or 4d Tensor, but got a "
                           f"tensor with {input.dim()} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    for d in range(1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError("max_unpooling2d_forward_out_cpu(): Expected input to have "
                               "non-zero size for non-batch dimensions, but got "
                               f"{list(input.shape)} with dimension {d} being empty.")
    if input.device.type == "cpu" and input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"\"max_unpool2d\" not implemented for '{_type_name(input.dtype)}'")
    # torch's kernel reports the last out-of-range index it meets, in memory order.
    plane = size[0] * size[1]
    bad = ((indices < 0) | (indices >= plane)).reshape(-1)
    if indices.numel() and bad.any().item():
        last = int(_C.nonzero(bad)[-1, 0].item())
        raise RuntimeError(f"Found an invalid max index: {indices.reshape(-1)[last].item()} "
                           f"(output volumes are of size {size[0]}x{size[1]}")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def channel_shuffle(input, groups):
    if input.dim() <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(
        (n, c) + rest)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) of 2-d affine matrices theta (N, 2, 3), in [-1, 1]
    coordinates (pixel centres unless align_corners)."""
    if align_corners is None:
        align_corners = False
    if len(size) != 4:
        raise NotImplementedError("affine_grid only supports 4D sizes, for 2D affine "
                                  "transformations, here")
    n, _, h, w = size

    def line(steps):
        if steps <= 1:
            return _C.zeros([max(steps, 1)], dtype=theta.dtype)
        x = _C.linspace(-1.0, 1.0, steps, dtype=theta.dtype)
        return x if align_corners else x * ((steps - 1) / steps)
    xs = line(w).reshape(1, w).expand(h, w)
    ys = line(h).reshape(h, 1).expand(h, w)
    base = _C.stack([xs, ys, _C.ones([h, w], dtype=theta.dtype)], -1)  # (H, W, 3)
    grid = base.reshape(1, h * w, 3).matmul(theta.transpose(1, 2))  # (N, H*W, 2)
    return grid.reshape(n, h, w, 2)


def pdist(input, p=2):
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    from .. import triu_indices  # empty for n < 2: the result is still in input's graph
    from ..linalg import vector_norm
    i, j = triu_indices(n, n, 1)
    return vector_norm(input.index_select(0, i) - input.index_select(0, j), ord=p, dim=1)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    gumbels = -_C.empty_like(logits).exponential_().log()
    y = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y
    index = y.argmax(dim, keepdim=True)
    y_hard = _C.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y.detach() + y


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    from .. import no_grad
    var = var.clone()
    with no_grad():  # the clamp is not differentiated through, as in torch
        var.clamp_(min=eps)
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _F()._reduction(size_average, reduce, reduction)
    loss = -(target * _F().logsigmoid(input) + (1 - target) * _F().logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The sum over listed target classes j and unlisted classes i of max(0, 1 - (x[j] - x[i])),
    over C; a row's targets are its leading non-negative entries (up to the first -1). A 0-d or
    1-d input is one row."""
    reduction = _F()._reduction(size_average, reduce, reduction)
    _check_multilabel_margin(input, target)
    x = input.reshape(1, -1) if input.dim() <= 1 else input
    t = target.reshape(x.shape)
    c = x.shape[1]
    valid = (t >= 0).to(_C.int64).cumprod(1).to(_C.bool)  # up to the first -1
    safe = _C.where(valid, t, _C.zeros_like(t))
    # A class listed twice counts twice on the target side, as torch's loop over the list does.
    times = _C.zeros(x.shape, dtype=_C.int64).scatter_add(1, safe, valid.to(_C.int64))
    margins = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)  # [n, j, i]
    pairs = times.unsqueeze(2).to(x.dtype) * (times == 0).unsqueeze(1).to(x.dtype)
    loss = (margins * pairs).sum((1, 2)) / c
    if input.dim() <= 1:
        loss = loss.reshape(())
    if reduction == "mean" and loss.numel() == 0:  # torch's mean over no rows is 0, not NaN
        return loss.sum()
    return _reduce(loss, reduction)


def _check_multilabel_margin(input, target):
    """torch's multilabel_margin_loss shape and range checks."""
    if not (input.dim() == 0 or (input.dim() in (1, 2) and input.shape[-1] != 0)):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if input.dim() <= 1:
        ok = target.dim() <= 1 and target.numel() == max(input.numel(), 1)
    else:
        ok = tuple(target.shape) == tuple(input.shape)
    if not ok:
        raise RuntimeError(f"inconsistent size {list(target.shape)} for argument #2 'target'")
    classes = input.shape[-1] if input.dim() else 1
    if target.numel() and (target.min().item() < -1 or target.max().item() >= classes):
        raise RuntimeError("argument #2 'target' is out of range")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    dist = distance_function if distance_function is not None else _F().pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def _check_grid_sample(input, grid, mode):
    """torch's grid_sampler checks, in its order."""
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    for d in range(2, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")
    want = 4 if input.dim() == 4 else 5
    if input.dim() != want or grid.dim() != want:
        raise RuntimeError(f"grid_sampler(): expected {want}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if want == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found "
                           f"{_type_name(grid.dtype)}")


def _reflect(x, twice_low, twice_high):
    """torch's reflect_coordinates: x mirrored at twice_low / 2 and twice_high / 2 until it lies
    between them."""
    if twice_low == twice_high:
        return _C.zeros_like(x)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = (x - low).abs()
    extra = _C.fmod(x, span)
    even = _C.fmod(_C.floor(x / span), 2) == 0
    return _C.where(even, extra + low, span - extra + low)


def _pad_coord(x, size, padding_mode, align_corners):
    """A source coordinate moved inside [0, size - 1] by border or reflection padding, as
    torch's compute_coordinates; zeros padding leaves it (taps outside read 0)."""
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
    return x.clamp(0, size - 1) if padding_mode != "zeros" else x


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples input (N, C, H, W) at grid's (N, Ho, Wo, 2) points, or (N, C, D, H, W) at
    (N, Do, Ho, Wo, 3) points, in [-1, 1] coordinates (x first); (bi/tri)linear, nearest or
    bicubic (4-D), with zeros, border or reflection padding. Composed of gathers over the
    flattened input, so it is differentiable in input and grid."""
    if mode not in _GRID_MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' "
                         f"or 'bicubic', but got: '{mode}'")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                      "old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=2)
        align_corners = False
    _check_grid_sample(input, grid, mode)
    n, c, spatial = input.shape[0], input.shape[1], list(input.shape[2:])
    out_shape = [n, c] + list(grid.shape[1:-1])
    count = math.prod(out_shape[2:])  # sizes spelled out: an empty batch leaves -1 undefined
    flat = input.reshape(n, c, math.prod(spatial))

    def tap(index):
        """input at integer points, one (N, *out) coordinate per spatial dim; 0 outside."""
        inside, linear = None, 0
        for i, size in zip(index, spatial):
            ok = (i >= 0) & (i <= size - 1)
            inside = ok if inside is None else inside & ok
            linear = linear * size + i.clamp(0, size - 1)
        linear = linear.to(_C.int64).reshape(n, 1, count).expand(n, c, count)
        vals = flat.gather(2, linear).reshape(out_shape)
        return vals * inside.to(input.dtype).unsqueeze(1)

    # grid's last dim lists x (the last input dim) first.
    coords = [grid[..., len(spatial) - 1 - d] for d in range(len(spatial))]
    if align_corners:
        coords = [(x + 1) / 2 * (size - 1) for x, size in zip(coords, spatial)]
    else:
        coords = [((x + 1) * size - 1) / 2 for x, size in zip(coords, spatial)]
    if mode == "bicubic":
        return _grid_bicubic(tap, coords, spatial, padding_mode, align_corners)
    coords = [_pad_coord(x, size, padding_mode, align_corners) for x, size in zip(coords, spatial)]
    if mode == "nearest":
        out = tap([_C.round(x) for x in coords])  # round half to even, as torch's nearbyint
        if grid.requires_grad:  # torch's grid gradient here is zero, not absent
            x = grid[..., 0].unsqueeze(1).expand(out.shape)
            out = _C.where(_C.ones_like(out, dtype=_C.bool), out, x)
        return out
    lows = [_C.floor(x) for x in coords]
    fracs = [(x - x0).unsqueeze(1) for x, x0 in zip(coords, lows)]
    out = None
    for corner in range(2 ** len(spatial)):  # its bits pick the lower or upper neighbours
        upper = [(corner >> d) & 1 for d in range(len(spatial))]
        term = tap([x0 + u for x0, u in zip(lows, upper)])
        for u, f in zip(upper, fracs):
            term = term * (f if u else 1 - f)
        out = term if out is None else out + term
    return out


def _grid_bicubic(tap, coords, spatial, padding_mode, align_corners):
    """Bicubic grid sampling of 4-D input: 4 x 4 taps around each point, each padded on its own
    as torch does, weighted along x, then along y."""
    from ._functional_3d import _cubic_weights
    (y, x), (h, w) = coords, spatial
    y0, x0 = _C.floor(y), _C.floor(x)
    wy = [v.unsqueeze(1) for v in _cubic_weights(y - y0)]
    wx = [v.unsqueeze(1) for v in _cubic_weights(x - x0)]
    out = None
    for i in range(4):
        yi = _pad_coord(y0 + (i - 1), h, padding_mode, align_corners)
        row = None
        for j in range(4):
            xj = _pad_coord(x0 + (j - 1), w, padding_mode, align_corners)
            term = tap([yi, xj]) * wx[j]
            row = term if row is None else row + term
        out = row * wy[i] if out is None else out + row * wy[i]
    return out
