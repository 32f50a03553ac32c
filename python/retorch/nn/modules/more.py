"""The rest of torch.nn's layers: Dropout3d, the 3-d pads, MaxUnpool3d, fractional max pooling,
CrossMapLRN2d, NLLLoss2d and Container."""
import warnings

import numpy as np

from ... import _C
from ...autograd import Function
from .. import functional as F
from .dropout import _DropoutNd
from .extra import _MaxUnpoolNd
from .loss import NLLLoss
from .misc import _FixedPad, _Pad
from .module import Module

__all__ = ["Dropout3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "MaxUnpool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "CrossMapLRN2d", "NLLLoss2d",
           "Container"]


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class Dropout3d(_DropoutNd):
    _fn = staticmethod(F.dropout3d)


class ConstantPad3d(_Pad):
    _n = 3

    def __init__(self, padding, value):
        super().__init__(padding, value)


class ReflectionPad3d(_FixedPad):
    _n, _mode = 3, "reflect"


class ReplicationPad3d(_FixedPad):
    _n, _mode = 3, "replicate"


class MaxUnpool3d(_MaxUnpoolNd):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__(_ntuple(kernel_size, 3),
                         _ntuple(stride if stride is not None else kernel_size, 3),
                         _ntuple(padding, 3))

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    def forward(self, input):
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _n = 3

    def forward(self, input):
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       _random_samples=self._random_samples)


# Note [CrossMapLRN2d]: torch's CrossMapLRN2d (the Lua-torch SpatialCrossMapLRN port) keeps a
# running sum over channels that never subtracts channel 0 and starts subtracting one channel
# late, so channel c's scale sums x^2 over channel 0 plus a window that is not centred on c; its
# hand-written backward sums over yet another window, so it is not the gradient of its forward.
# Both are reproduced here as 0/1 channel-mixing matrices built by running torch's loops once on
# indicators, so values and gradients equal torch's. F.local_response_norm is the centred one.
def _forward_window(channels, size):
    """m[c, j] = 1 when torch's running sum for channel c includes channel j."""
    pre_pad = int((size - 1) / 2 + 1)
    m = np.zeros((channels, channels))
    m[0, :min(pre_pad, channels)] = 1
    for c in range(1, channels):
        m[c] = m[c - 1]
        if c < channels - pre_pad + 1:
            m[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            m[c, c - pre_pad] -= 1
    return m


def _backward_window(channels, size):
    """m[c, j] = 1 when torch's backward for channel c sums channel j's ratio."""
    shift = int(size - (size - 1) / 2)
    c = np.arange(channels)[:, None]
    j = np.arange(channels)[None, :]
    return ((j >= c - shift) & (j <= c + size - 1 - shift)).astype(np.float64)


def _mix(matrix, t):
    """(C, C) matrix times t (N, C, H, W) over the channel dim."""
    n, c, h, w = t.shape
    m = _C.from_numpy(matrix).to(t.device, t.dtype)
    return m.matmul(t.reshape(n, c, h * w)).reshape(n, c, h, w)


class _CrossMapLRN2dFunction(Function):
    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        if input.dim() != 4:
            raise AssertionError(f"CrossMapLRN2d: expected a 4-D (N, C, H, W) input, got "
                                 f"{list(input.shape)}")
        scale = _mix(_forward_window(input.shape[1], size), input * input) * (alpha / size) + k
        output = input * scale.pow(-beta)
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size, alpha, beta = ctx.size, ctx.alpha, ctx.beta
        ratio = grad_output * output / scale
        accum = _mix(_backward_window(input.shape[1], size), ratio)
        grad = scale.pow(-beta) * grad_output - (2 * alpha * beta / size) * input * accum
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalization across channels, Lua torch's way. See Note
    [CrossMapLRN2d]."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class NLLLoss2d(NLLLoss):
    """The deprecated name of NLLLoss."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        warnings.warn("NLLLoss2d has been deprecated. Please use NLLLoss instead as a drop-in "
                      "replacement and see https://pytorch.org/docs/master/nn.html#torch.nn."
                      "NLLLoss for more details.")
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class Container(Module):
    """The deprecated Module that adds its keyword arguments as submodules."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented "
                      "in nn.Module. Subclass that instead.")
        for key, value in kwargs.items():
            self.add_module(key, value)
