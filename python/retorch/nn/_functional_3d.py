"""The 3-d (volumetric, N C D H W) ops of torch.nn.functional composed of retorch's 2-d ones:
conv3d, conv_transpose3d, the max/avg/adaptive 3-d pools, and the separable per-dim resampling
behind F.interpolate (nearest, linear and cubic, in any number of dims). They are plain
compositions, so autograd, tracing and device routing apply. functional.py installs them into its
namespace."""

import numpy as np

from .. import _C

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
           "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices"]


def _triple(v, op, name):
    t = tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3
    if len(t) == 1:
        t = t * 3
    if len(t) != 3:
        raise RuntimeError(f"{op}: expected {name} to be a single int or 3 ints, got {v}")
    return tuple(int(x) for x in t)


def _as_5d(input, op):
    """input as N C D H W, and whether it came unbatched (C D H W)."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    return (input, False) if input.dim() == 5 else (input.unsqueeze(0), True)


def _out_len(size, k, s, p, d, ceil_mode):
    """A pooling window count along one dim; in ceil mode the last window must start inside
    the input or its left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    n = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (n - 1) * s >= size + p:
        n -= 1
    return n


# Convolutions ---------------------------------------------------------------------------------
# Note [Depth folding]: a 3-d convolution is one 2-d convolution over (N * D_out) images whose
# channels are (C, kD): im2col over depth alone (a (kD, 1) window on (N, C, D, H*W)) gathers
# the kD depth slices each output plane reads next to the channels, so weight
# (O, C/g, kD, kH, kW) reshapes in place to (O, C/g * kD, kH, kW), and channel order (c, kd)
# keeps the groups contiguous. im2col also does the depth stride, dilation and zero padding,
# and its backward is one col2im; stacking strided slices or summing kD separate conv2d calls
# measured slower (bench/bench_conv3d.py). The transposed op runs the same fold backwards: one
# conv_transpose2d makes every (co, kd) plane and col2im adds them into their output depths.
def _conv_checks(op, x, weight, bias, groups, transposed):
    if weight.dim() != 5:
        raise RuntimeError(f"{op}: expected a 5-D weight, but got weight of size "
                           f"{list(weight.shape)}")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups}")
    c = x.shape[1]
    want = weight.shape[0] if transposed else weight.shape[1] * groups
    if c != want:
        raise RuntimeError(f"{op}: given groups={groups}, weight of size {list(weight.shape)} "
                           f"expects input of size {list(x.shape)} to have {want} channels, but "
                           f"got {c} channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"{op}: given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{list(weight.shape)} instead")
    out_c = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and tuple(bias.shape) != (out_c,):
        raise RuntimeError(f"{op}: expected bias of size [{out_c}], but got bias of size "
                           f"{list(bias.shape)}")


def _positive(op, **params):
    for name, v in params.items():
        if any(x <= 0 for x in v):
            raise RuntimeError(f"{op}: {name} should be greater than zero, got {name}={v}")


def _same_padding(op, kernel, stride, dilation):
    """Per-dim (left, right) padding of padding='same' (the odd one out goes right, as in
    torch)."""
    if any(s != 1 for s in stride):
        raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for d, k in zip(dilation, kernel)]
    return [(t // 2, t - t // 2) for t in total]


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution of input (N, C, D, H, W) or (C, D, H, W) with weight
    (O, C/groups, kD, kH, kW); padding is ints, 'same' or 'valid'. See Note [Depth folding]."""
    x, unbatched = _as_5d(input, "conv3d")
    _conv_checks("conv3d", x, weight, bias, groups, False)
    stride = _triple(stride, "conv3d", "stride")
    dilation = _triple(dilation, "conv3d", "dilation")
    _positive("conv3d", stride=stride, dilation=dilation)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"conv3d: invalid padding string '{padding}', expected 'same' "
                               "or 'valid'")
        pads = _same_padding("conv3d", kernel, stride, dilation) if padding == "same" else \
            [(0, 0)] * 3
    else:
        pads = [(p, p) for p in _triple(padding, "conv3d", "padding")]
        if any(p < 0 for p, _ in pads):
            raise RuntimeError(f"conv3d: negative padding is not supported, got {padding}")
    # Only an uneven 'same' remainder is padded explicitly; im2col and conv2d pad the rest.
    extra = [0, pads[2][1] - pads[2][0], 0, pads[1][1] - pads[1][0], 0, pads[0][1] - pads[0][0]]
    if any(extra):
        x = _C.pad(x, extra)
    n, c, depth, h, w = x.shape
    padded = [depth + 2 * pads[0][0], h + 2 * pads[1][0], w + 2 * pads[2][0]]
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(size < span for size, span in zip(padded, spans)):
        raise RuntimeError(f"conv3d: padded input of size ({padded[0]} x {padded[1]} x "
                           f"{padded[2]}) is smaller than the dilated kernel ({spans[0]} x "
                           f"{spans[1]} x {spans[2]}); input {list(input.shape)}, weight "
                           f"{list(weight.shape)}")
    kd = kernel[0]
    d_out = (padded[0] - spans[0]) // stride[0] + 1
    cols = _C.im2col(x.reshape(n, c, depth, h * w), [kd, 1], [dilation[0], 1], [pads[0][0], 0],
                     [stride[0], 1])  # N (C kD) (Do H W)
    cols = cols.reshape(n, c * kd, d_out, h, w).transpose(1, 2).reshape(n * d_out, c * kd, h, w)
    out_c = weight.shape[0]
    y = _C.conv2d(cols, weight.reshape(out_c, weight.shape[1] * kd, kernel[1], kernel[2]), bias,
                  stride[1:], [pads[1][0], pads[2][0]], dilation[1:], groups)
    y = y.reshape(n, d_out, out_c, y.shape[2], y.shape[3]).transpose(1, 2).contiguous()
    return y.squeeze(0) if unbatched else y


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transposed 3-d convolution (the gradient of conv3d with respect to its input) of
    input (N, C_in, D, H, W) with weight (C_in, C_out/groups, kD, kH, kW). See Note [Depth
    folding]."""
    op = "conv_transpose3d"
    x, unbatched = _as_5d(input, op)
    _conv_checks(op, x, weight, bias, groups, True)
    stride = _triple(stride, op, "stride")
    padding = _triple(padding, op, "padding")
    output_padding = _triple(output_padding, op, "output_padding")
    dilation = _triple(dilation, op, "dilation")
    _positive(op, stride=stride, dilation=dilation)
    if any(p < 0 for p in padding + output_padding):
        raise RuntimeError(f"{op}: negative padding is not supported, got padding={padding}, "
                           f"output_padding={output_padding}")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or "
                           f"dilation, but got output_padding={output_padding}, "
                           f"stride={stride}, dilation={dilation}")
    n, c, depth, h, w = x.shape
    kd, kh, kw = weight.shape[2:]
    sd, pd, dd = stride[0], padding[0], dilation[0]
    full = (depth - 1) * sd + dd * (kd - 1) + 1  # output depth before cropping the padding
    d_out = full - 2 * pd + output_padding[0]
    if d_out <= 0:
        raise RuntimeError(f"{op}: input of size {list(input.shape)} with weight "
                           f"{list(weight.shape)}, stride={stride}, padding={padding} gives a "
                           f"non-positive output depth {d_out}")
    xf = x.transpose(1, 2).reshape(n * depth, c, h, w)
    planes = _C.conv_transpose2d(xf, weight.reshape(c, weight.shape[1] * kd, kh, kw), None,
                                 stride[1:], padding[1:], output_padding[1:], groups,
                                 dilation[1:])  # (N D) (C_out kD) Ho Wo
    out_c, ho, wo = weight.shape[1] * groups, planes.shape[2], planes.shape[3]
    cols = planes.reshape(n, depth, out_c * kd, ho * wo).transpose(1, 2).reshape(
        n, out_c * kd, depth * ho * wo)
    # col2im folds floating tensors only (torch's fold too): integer planes fold in float64,
    # exact for sums below 2^53.
    integral = not x.dtype.is_floating_point
    y = _C.col2im(cols.to(_C.float64) if integral else cols, [full, ho * wo], [kd, 1], [dd, 1],
                  [0, 0], [sd, 1])  # N C_out full HoWo
    y = y.to(x.dtype) if integral else y
    y = y[:, :, pd:min(full, pd + d_out)]
    if y.shape[2] < d_out:  # output padding past the cropped end reads nothing
        y = _C.pad(y, [0, 0, 0, d_out - y.shape[2]])
    y = y.reshape(n, out_c, d_out, ho, wo)
    if bias is not None:
        y = y + bias.reshape(1, out_c, 1, 1, 1)
    return y.squeeze(0) if unbatched else y


# Pooling --------------------------------------------------------------------------------------
# Note [Separable pools]: max, average and adaptive pooling over a box are separable: pool H and
# W with the 2-d op over (N, C * D) images, then pool D with the 2-d op over (D, H_out * W_out)
# "images" and a (k, 1) window. Averages divide by the product of per-dim counts in torch (with
# or without the padding), so each stage dividing by its own count is exact; a divisor_override
# is applied once, in the depth stage, after a plain sum over H and W. Max ties resolve to the
# first element in (d, h, w) order as torch's scan does, since each stage keeps its first max.
def _pooling_output_shape(size, k, p, s, d, ceil_mode):
    """torch's pooling_output_shape: its argument checks, then the window count."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > (k // 2 if k >= 0 else -(-k // 2)):  # C++'s k / 2, rounding toward zero
        raise RuntimeError(f"pad should be at most half of kernel size, but got pad={p} and "
                           f"kernel_size={k}")
    return _out_len(size, k, s, p, d, ceil_mode)


def _pool_args(op, x, kernel_size, stride, padding, dilation, ceil_mode, divisor_override=None):
    """torch 1.13's max_pool3d / avg_pool3d argument checks, in its order (see Note [Pool argument
    checks] in functional.py); (k, s, p, d) as triples."""
    avg = op == "avg_pool3d"
    k, s, p, d = ([] if v is None else list(v) if isinstance(v, (tuple, list)) else [v] * 3
                  for v in (kernel_size, stride, padding, dilation))
    must = "must be" if avg else "must either be"
    if len(k) not in (1, 3):
        raise RuntimeError(f"{op}: kernel_size {must} a single int, or a tuple of three ints")
    if len(s) not in (0, 1, 3):
        raise RuntimeError(f"{op}: stride {must} omitted, a single int, or a tuple of three ints")
    if len(p) not in (1, 3):
        raise RuntimeError(f"{op}: padding {'must' if avg else 'must be either'} be a single int, "
                           "or a tuple of three ints")
    if len(d) not in (1, 3):
        raise RuntimeError(f"{op}: dilation must be either a single int, or a tuple of three ints")
    k, s, p, d = (tuple(v * 3 if len(v) == 1 else v) for v in (k, s or k, p, d))
    if x.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    shape = list(x.shape)
    out = [_pooling_output_shape(shape[i - 3], k[i], p[i], s[i], d[i], ceil_mode)
           for i in range(3)]
    # torch's pool3d_shape_check
    if not all(v > 0 for v in k):
        raise RuntimeError("kernel size should be greater than zero, but got kT: {} kH: {} kW: {}"
                           .format(*k))
    if not all(v > 0 for v in s):
        raise RuntimeError("stride should be greater than zero, but got dT: {} dH: {} dW: {}"
                           .format(*s))
    if not all(v > 0 for v in d):
        raise RuntimeError("dilation should be greater than zero, but got dilationT: {} "
                           "dilationH: {} dilationW: {}".format(*d))
    fn = "avg_pool3d()" if avg else "max_pool3d_with_indices_out_cpu_template()"
    if any(v <= 0 for v in shape[len(shape) - 4:]):
        # torch prints the zero length where it means the dimension's index
        raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive length, "
                           f"but input has a shape of {shape} and non-batch dimension 0 has "
                           "length zero!")
    if avg and any(shape[i - 3] < k[i] for i in range(3)):
        raise RuntimeError("input image (T: {} H: {} W: {}) smaller than kernel size "
                           "(kT: {} kH: {} kW: {})".format(*shape[-3:], *k))
    if any(v < 1 for v in out):
        c, t, h, w = shape[-4:]
        raise RuntimeError(f"Given input size: ({c}x{t}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")
    return k, s, p, d


def _flat_indices(hw_idx, d_idx, spatial, pooled_hw):
    """Flat D*H*W indices from the H-W stage's (N, C*D, Ho, Wo) indices and the depth stage's
    (N, C, Do, Ho*Wo) indices into (D, Ho*Wo). See Note [Separable pools]."""
    n, c, d_out, hw_out = d_idx.shape
    depth, h, w = spatial
    flat_d = d_idx.reshape(n, c, d_out * hw_out)
    hw = hw_idx.reshape(n, c, depth * pooled_hw).gather(2, flat_d)
    src_depth = _C.div(flat_d, hw_out, rounding_mode="floor")
    return (src_depth * (h * w) + hw).reshape(n, c, d_out, hw_out)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over kD x kH x kW windows of (N, C, D, H, W) or (C, D, H, W); indices are flat over
    D*H*W like torch's. See Note [Separable pools]."""
    k, s, p, d = _pool_args("max_pool3d", input, kernel_size, stride, padding, dilation,
                            ceil_mode)
    x, unbatched = _as_5d(input, "max_pool3d")
    n, c, depth, h, w = x.shape
    pool = _C.max_pool2d_with_indices if return_indices else _C.max_pool2d
    a = pool(x.reshape(n, c * depth, h, w), k[1:], s[1:], p[1:], d[1:], ceil_mode)
    a, a_idx = a if return_indices else (a, None)
    ho, wo = a.shape[2], a.shape[3]
    b = pool(a.reshape(n, c, depth, ho * wo), [k[0], 1], [s[0], 1], [p[0], 0], [d[0], 1],
             ceil_mode)
    b, b_idx = b if return_indices else (b, None)
    out = b.reshape(n, c, b.shape[2], ho, wo)
    if return_indices:
        idx = _flat_indices(a_idx, b_idx, (depth, h, w), ho * wo).reshape(out.shape)
        return (out.squeeze(0), idx.squeeze(0)) if unbatched else (out, idx)
    return out.squeeze(0) if unbatched else out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over kD x kH x kW windows. See Note [Separable pools]."""
    k, s, p, _ = _pool_args("avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode,
                            divisor_override)
    x, unbatched = _as_5d(input, "avg_pool3d")
    integral = not x.is_floating_point()

    def pool(t, divisor):
        n, c, depth, h, w = t.shape
        a = _C.avg_pool2d(t.reshape(n, c * depth, h, w), k[1:], s[1:], p[1:], ceil_mode,
                          count_include_pad, None if divisor is None else 1)
        ho, wo = a.shape[2], a.shape[3]
        b = _C.avg_pool2d(a.reshape(n, c, depth, ho * wo), [k[0], 1], [s[0], 1], [p[0], 0],
                          ceil_mode, count_include_pad, divisor)
        return b.reshape(n, c, b.shape[2], ho, wo)

    if not integral:
        out = pool(x, divisor_override)
    else:
        # torch truncates sum / divisor once; truncating per stage rounds twice. So sum, and
        # divide by the whole divisor, read off a float pool of ones (its sum over its mean).
        out = pool(x, 1)
        divisor = divisor_override
        if divisor is None:
            ones = _C.ones([1, 1] + list(x.shape[2:]), dtype=_C.float64, device=x.device)
            divisor = (pool(ones, 1) / pool(ones, None)).round().to(out.dtype)
        out = _C.div(out, divisor, rounding_mode="trunc")
    return out.squeeze(0) if unbatched else out


def _adaptive_size(op, x, output_size):
    size = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    if len(size) != 3:
        raise RuntimeError(f"{op}: output_size must be an int or 3 values, got {output_size}")
    size = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(size))
    if any(v <= 0 for v in size):
        raise RuntimeError(f"{op}: output_size must be positive, got {output_size}")
    return size


def adaptive_avg_pool3d(input, output_size):
    """Mean over torch's adaptive windows [floor(i*L/O), ceil((i+1)*L/O)) per dim; a None in
    output_size keeps that dim. See Note [Separable pools]."""
    x, unbatched = _as_5d(input, "adaptive_avg_pool3d")
    od, oh, ow = _adaptive_size("adaptive_avg_pool3d", x, output_size)
    n, c, depth, h, w = x.shape
    a = _C.adaptive_avg_pool2d(x.reshape(n, c * depth, h, w), [oh, ow])
    b = _C.adaptive_avg_pool2d(a.reshape(n, c, depth, oh * ow), [od, oh * ow])
    out = b.reshape(n, c, od, oh, ow)
    return out.squeeze(0) if unbatched else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over the adaptive windows of adaptive_avg_pool3d, indices flat over D*H*W."""
    x, unbatched = _as_5d(input, "adaptive_max_pool3d")
    od, oh, ow = _adaptive_size("adaptive_max_pool3d", x, output_size)
    n, c, depth, h, w = x.shape
    a, a_idx = _C.adaptive_max_pool2d(x.reshape(n, c * depth, h, w), [oh, ow])
    b, b_idx = _C.adaptive_max_pool2d(a.reshape(n, c, depth, oh * ow), [od, oh * ow])
    out = b.reshape(n, c, od, oh, ow)
    if return_indices:
        idx = _flat_indices(a_idx, b_idx, (depth, h, w), oh * ow).reshape(out.shape)
        return (out.squeeze(0), idx.squeeze(0)) if unbatched else (out, idx)
    return out.squeeze(0) if unbatched else out


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool3d(input, output_size, True)


# Interpolation --------------------------------------------------------------------------------
# Note [Separable resampling]: nearest, linear and cubic interpolation are separable, so
# F.interpolate resamples one spatial dim at a time, last dim first as torch's kernels nest their
# sums: index_select the taps, weight them and add, in the input's dtype as torch does. The
# backward pass is then index_add, which is torch's scatter of each output gradient to its taps.
# Source indices and weights are computed on the host with torch's CPU roundings: nearest in
# float32; linear and cubic with the scale and weights in the input's dtype and the source index
# in its float type (float32 for half types).
def _rounder(dtype):
    """A function rounding numpy values to dtype's precision (half types come back as float32
    holding the rounded values), to replay torch's arithmetic in that dtype on the host."""
    if dtype in (_C.float64, _C.float32):
        return np.float64 if dtype == _C.float64 else np.float32

    def rnd(v):
        t = _C.from_numpy(np.ascontiguousarray(v, dtype=np.float32)).to(dtype)
        return t.to(_C.float32).numpy()
    return rnd


def _nearest_source(in_size, out_size, scale, exact):
    """torch's nearest (or nearest-exact: pixel-centre) source index of each output position."""
    dst = np.arange(out_size)
    ratio = np.float32(1.0 / scale) if scale else np.float32(in_size) / np.float32(out_size)
    pos = (dst + 0.5).astype(np.float32) * ratio if exact else dst.astype(np.float32) * ratio
    return np.minimum(np.floor(pos).astype(np.int64), in_size - 1)


def _source_index(in_size, out_size, scale, align_corners, rnd):
    """torch's area_pixel_compute_source_index of every output position, unclamped; the
    half-pixel form is evaluated in double and rounded once, as in C++."""
    dst = np.arange(out_size)
    opmath = np.float64 if rnd is np.float64 else np.float32
    if align_corners:
        ratio = rnd(opmath(in_size - 1) / opmath(out_size - 1)) if out_size > 1 else 0
        return opmath(ratio) * dst.astype(opmath)
    ratio = rnd(1.0 / scale) if scale else rnd(opmath(in_size) / opmath(out_size))
    return (np.float64(ratio) * (dst + 0.5) - 0.5).astype(opmath)


def _linear_source(in_size, out_size, scale, align_corners, rnd):
    """(index0, index1) and their weights per output position along one dim."""
    src = np.maximum(_source_index(in_size, out_size, scale, align_corners, rnd), 0)
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < in_size - 1)
    lam1 = rnd(np.minimum(src - i0.astype(src.dtype), 1))
    return [i0, i1], [rnd(1 - lam1), lam1]


def _cubic_weights(t, rnd=lambda v: v):
    """The cubic convolution weights (A = -0.75, as torch and OpenCV) of the taps at -1, 0, 1 and
    2 around a point t past tap 0, 0 <= t <= 1; t is a numpy array or a tensor. rnd rounds every
    step, since torch evaluates these polynomials in the input's dtype."""
    a = -0.75

    def near(x):  # |x| <= 1
        return rnd(rnd(rnd(rnd(rnd((a + 2) * x) - (a + 3)) * x) * x) + 1)

    def far(x):  # 1 < |x| < 2
        return rnd(rnd(rnd(rnd(rnd(rnd(a * x) - 5 * a) * x) + 8 * a) * x) - 4 * a)

    u = rnd(1 - t)
    return [far(rnd(t + 1)), near(t), near(u), far(rnd(u + 1))]


def _cubic_source(in_size, out_size, scale, align_corners, rnd):
    """The 4 taps (clamped to the border) and cubic weights of each output position along one
    dim."""
    src = _source_index(in_size, out_size, scale, align_corners, rnd)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    t = rnd(np.clip(src - i0.astype(src.dtype), 0, 1))
    taps = [np.clip(i0 + j, 0, in_size - 1) for j in (-1, 0, 1, 2)]
    return taps, _cubic_weights(t, rnd)


def _host(x, values, dtype):
    from .. import tensor
    return tensor(values, dtype=dtype, device=x.device)


def _resize_dim(x, dim, out_size, scale, mode, align_corners):
    """x resampled along dim. See Note [Separable resampling]."""
    in_size = x.shape[dim]
    if mode in ("nearest", "nearest-exact"):
        src = _nearest_source(in_size, out_size, scale, mode == "nearest-exact")
        return x.index_select(dim, _host(x, src, _C.int64))
    source = _cubic_source if mode == "bicubic" else _linear_source
    taps, weights = source(in_size, out_size, scale, align_corners, _rounder(x.dtype))
    shape = [1] * x.dim()
    shape[dim] = out_size
    out = None
    for idx, w in zip(taps, weights):
        term = x.index_select(dim, _host(x, idx, _C.int64)) * \
            _host(x, np.asarray(w, np.float64), x.dtype).reshape(shape)
        out = term if out is None else out + term
    return out


def _resample(input, out, scales, mode, align_corners):
    """input (N, C, *spatial) resampled to the spatial size out with nearest, nearest-exact,
    (bi/tri)linear or bicubic interpolation. See Note [Separable resampling]."""
    if mode not in ("nearest", "nearest-exact") and not input.is_floating_point():
        from ._functional_extra import _type_name
        raise RuntimeError(f"\"upsample_{mode}\" not implemented for '{_type_name(input.dtype)}'")
    x = input
    for i in reversed(range(len(out))):
        if out[i] != x.shape[2 + i] or scales[i] is not None:  # else the identity
            x = _resize_dim(x, 2 + i, out[i], scales[i], mode, bool(align_corners))
    return x
