"""The 3-d (volumetric) layers of torch.nn over nn/_functional_3d.py: Conv3d, ConvTranspose3d,
LazyConv3d, the 3-d max/avg/adaptive pools, BatchNorm3d and InstanceNorm3d."""
import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .conv import _ConvNd, _ConvTransposeNd
from .normalization import _BatchNorm, _InstanceNorm
from .pooling import AvgPool2d, _AdaptivePool, _MaxPoolNd

__all__ = ["Conv3d", "ConvTranspose3d", "LazyConv3d", "MaxPool3d", "AvgPool3d",
           "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "BatchNorm3d", "InstanceNorm3d"]


class Conv3d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        if self.padding_mode != "zeros":
            return F.conv3d(self._padded(input), self.weight, self.bias, self.stride, 0,
                            self.dilation, self.groups)
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose3d(_ConvTransposeNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for ConvTranspose3d')
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class LazyConv3d(Conv3d):
    """Conv3d whose in_channels come from the first input: until then weight is an empty
    Parameter (torch's UninitializedParameter); the first forward sizes and initializes it the
    way Conv3d.reset_parameters does and the module becomes a Conv3d, as torch's does."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        self._lazy_factory = {"device": device,
                              "dtype": dtype if dtype is not None else _C.get_default_dtype()}
        # in_channels = groups passes _ConvNd's divisibility checks; the real count comes later.
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)
        self.in_channels = 0
        self.weight = Parameter(_C.empty([0], **self._lazy_factory))
        if self.bias is not None:
            self.bias = Parameter(_C.empty([0], **self._lazy_factory))

    def has_uninitialized_params(self):
        return self.in_channels == 0

    def reset_parameters(self):
        if not self.has_uninitialized_params():
            super().reset_parameters()

    def forward(self, input):
        if self.has_uninitialized_params():
            self._materialize(input)  # self is a Conv3d from here on
        return Conv3d.forward(self, input)

    def _materialize(self, input):
        from ... import no_grad
        channels = input.shape[1] if input.dim() == 5 else input.shape[0]
        if channels % self.groups:
            raise ValueError(f"LazyConv3d: in_channels ({channels}) of input "
                             f"{list(input.shape)} must be divisible by groups ({self.groups})")
        self.in_channels = channels
        kw = self._lazy_factory
        with no_grad():
            self.weight = Parameter(_C.empty([self.out_channels, channels // self.groups] +
                                             list(self.kernel_size), **kw))
            if self.bias is not None:
                self.bias = Parameter(_C.empty([self.out_channels], **kw))
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                fan_in = (channels // self.groups) * math.prod(self.kernel_size)
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                init.uniform_(self.bias, -bound, bound)
        del self._lazy_factory
        self.__class__ = Conv3d


class MaxPool3d(_MaxPoolNd):
    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool3d(AvgPool2d):
    """AvgPool2d's arguments and repr over three spatial dims."""

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptivePool):
    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptivePool):
    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class InstanceNorm3d(_InstanceNorm):
    _batched_dim = 5
