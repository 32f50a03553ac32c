"""retorch.nn.grad (torch.nn.grad): the gradients of conv1d/2d/3d with respect to their input
and weight, given grad_output, as differentiable retorch ops."""
from .. import _C
from ._functional_3d import conv_transpose3d

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _expand(v, n, name):
    t = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if len(t) == 1:
        t = t * n
    if len(t) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values "
                           f"to match the convolution dimensions, but got {name}={list(t)}")
    return [int(x) for x in t]


def _params(n, stride, padding, dilation):
    stride = _expand(stride, n, "stride")
    padding = _expand(padding, n, "padding")
    dilation = _expand(dilation, n, "dilation")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    return stride, padding, dilation


def _check_shapes(input_size, weight_size, grad_output, stride, padding, dilation, groups):
    """torch's forward shape checks on (input_size, weight_size), then that grad_output has the
    shape that convolution gives; returns the spatial output size."""
    input_size, weight_size = list(input_size), list(weight_size)
    n = len(weight_size)
    if len(input_size) != n:
        raise RuntimeError(f"Expected {n}-dimensional input for {n}-dimensional weight "
                           f"{weight_size}, but got {len(input_size)}-dimensional input of size "
                           f"{input_size} instead")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight_size[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{weight_size}] instead")
    if input_size[1] != weight_size[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {weight_size}, expected "
                           f"input{input_size} to have {weight_size[1] * groups} channels, but "
                           f"got {input_size[1]} channels instead")
    padded = [s + 2 * p for s, p in zip(input_size[2:], padding)]
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, weight_size[2:])]
    if any(p < k for p, k in zip(padded, spans)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, spans))}). Kernel size can't be greater than "
                           "actual input size")
    out = [(p - k) // s + 1 for p, k, s in zip(padded, spans, stride)]
    want = [input_size[0], weight_size[0]] + out
    if list(grad_output.shape) != want:
        raise RuntimeError(f"grad_output of size {list(grad_output.shape)} does not match the "
                           f"output size {want} of a convolution of an input of size "
                           f"{input_size} with a weight of size {weight_size}, stride={stride}, "
                           f"padding={padding}, dilation={dilation}")
    return out


def _input_grad(n, input_size, weight, grad_output, stride, padding, dilation, groups):
    # The input gradient of a convolution is the transposed convolution of grad_output; the
    # output padding restores the input rows that the strided windows never reached.
    stride, padding, dilation = _params(n, stride, padding, dilation)
    out = _check_shapes(input_size, weight.shape, grad_output, stride, padding, dilation, groups)
    k = weight.shape[2:]
    extra = [int(size) - ((o - 1) * s - 2 * p + d * (kk - 1) + 1)
             for size, o, s, p, d, kk in zip(list(input_size)[2:], out, stride, padding,
                                             dilation, k)]
    if n == 3:
        return conv_transpose3d(grad_output, weight, None, stride, padding, extra, groups,
                                dilation)
    return _C.convolution(grad_output, weight, None, stride, padding, dilation, True, extra,
                          groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to an input of size input_size (N, C, L)."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to an input of size input_size (N, C, H, W)."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to an input of size input_size (N, C, D, H, W)."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def _weight_grad(n, input, weight_size, grad_output, stride, padding, dilation, groups):
    stride, padding, dilation = _params(n, stride, padding, dilation)
    _check_shapes(input.shape, weight_size, grad_output, stride, padding, dilation, groups)
    weight_size = [int(s) for s in weight_size]
    if n < 3:
        return _C._convolution_backward_weight(grad_output, input, weight_size, stride, padding,
                                               dilation, False, groups)
    # conv3d is a 2-d convolution over depth-unfolded columns (See Note [Depth folding] in
    # _functional_3d.py), so its weight gradient is that convolution's, reshaped back.
    batch, c, depth, h, w = input.shape
    o, cg, kd, kh, kw = weight_size
    d_out = grad_output.shape[2]
    cols = _C.im2col(input.reshape(batch, c, depth, h * w), [kd, 1], [dilation[0], 1],
                     [padding[0], 0], [stride[0], 1])  # N (C kD) (Do H W)
    cols = cols.reshape(batch, c * kd, d_out, h, w).transpose(1, 2).reshape(
        batch * d_out, c * kd, h, w)
    go = grad_output.transpose(1, 2).reshape(batch * d_out, o, grad_output.shape[3],
                                             grad_output.shape[4])
    gw = _C._convolution_backward_weight(go, cols, [o, cg * kd, kh, kw], stride[1:],
                                         padding[1:], dilation[1:], False, groups)
    return gw.reshape(weight_size)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to a weight of size weight_size (O, C/groups, K)."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to a weight of size weight_size
    (O, C/groups, kH, kW)."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to a weight of size weight_size
    (O, C/groups, kD, kH, kW)."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
