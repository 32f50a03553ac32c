"""Convolutions: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d with torch's padding modes."""
from ... import _C
from .. import functional as F
from .linear import _factory, _reset_weight_and_bias, _weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(Module):
    def __init__(self, n, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device, dtype):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_modes:
            raise ValueError(f"padding_mode must be one of {valid_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.dilation = _ntuple(dilation, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string '{padding}', should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, n)
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        # F.pad order (last dim first) of the symmetric padding non-zero modes apply.
        if isinstance(self.padding, str):
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pads = [(t // 2, t - t // 2) for t in total] if self.padding == "same" else \
                [(0, 0)] * n
        else:
            pads = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [x for pr in reversed(pads) for x in pr]
        shape = (in_channels, out_channels // groups) if transposed else \
            (out_channels, in_channels // groups)
        _weight_and_bias(self, shape + self.kernel_size, out_channels, bias,
                         _factory(device, dtype))

    def reset_parameters(self):
        _reset_weight_and_bias(self)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        n = len(self.kernel_size)
        if self.padding != (0,) * n:
            s += ", padding={padding}"
        if self.dilation != (1,) * n:
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * n:
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _padded(self, input):
        """The input padded for padding_mode != 'zeros' (the conv then runs with padding 0)."""
        return F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)


class Conv1d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        if self.padding_mode != "zeros":
            return _C.conv1d(self._padded(input), self.weight, self.bias, self.stride, 0,
                             self.dilation, self.groups)
        return _C.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                         self.groups)


class Conv2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        if self.padding_mode != "zeros":
            return _C.conv2d(self._padded(input), self.weight, self.bias, self.stride, 0,
                             self.dilation, self.groups)
        return _C.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                         self.groups)


class _ConvTransposeNd(_ConvNd):
    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = len(self.kernel_size)
        output_size = list(output_size)[-n:]
        out = []
        for d in range(n):
            dim_size = input.shape[input.dim() - n + d]
            min_size = ((dim_size - 1) * self.stride[d] - 2 * self.padding[d] +
                        self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            max_size = min_size + self.stride[d] - 1
            if not min_size <= output_size[d] <= max_size:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_size} to {max_size} (for an input of "
                                 f"{list(input.shape)[-n:]})")
            out.append(output_size[d] - min_size)
        return tuple(out)


class ConvTranspose1d(_ConvTransposeNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for ConvTranspose1d')
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return _C.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                   self._output_padding(input, output_size), self.groups,
                                   self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for ConvTranspose2d')
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return _C.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                   self._output_padding(input, output_size), self.groups,
                                   self.dilation)
