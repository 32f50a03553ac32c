"""Lazy modules: LazyModuleMixin and the Lazy Linear, Conv, ConvTranspose, BatchNorm and
InstanceNorm layers, whose input size comes from the first input."""
import itertools
import warnings

from ... import _C
from ...autograd import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .linear import Linear
from .normalization import (BatchNorm1d, BatchNorm2d, InstanceNorm1d, InstanceNorm2d,
                            _BatchNorm, _InstanceNorm, _NormBase)
from .volumetric import BatchNorm3d, Conv3d, ConvTranspose3d, InstanceNorm3d

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


# Note [Lazy modules]: a lazy module is its regular class (Linear, Conv2d, ...) built with a zero
# input size, whose shape-dependent parameters and buffers are UninitializedParameter /
# UninitializedBuffer. A forward pre-hook calls initialize_parameters(*input) on the first call:
# it materializes them in place (so optimizers and references made earlier stay valid), runs the
# regular reset_parameters, removes the hook and sets __class__ to cls_to_become, after which the
# module is exactly a Linear, Conv2d, ... as in torch. load_state_dict materializes uninitialized
# entries from a checkpoint's shapes instead.
class LazyModuleMixin:
    """Mixed in before a Module class to infer its input size on the first forward. See
    Note [Lazy modules]."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)
        warnings.warn("Lazy modules are a new feature under heavy development so changes to the "
                      "API or functionality can happen at any moment.")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # Uninitialized entries are saved as they are, so loading them keeps a module lazy.
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars \
                    else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # An initialized entry materializes an uninitialized one, then loads as usual; an
        # uninitialized entry loads into an uninitialized one as nothing.
        both_lazy = []
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key not in state_dict or param is None or not is_lazy(param):
                continue
            if is_lazy(state_dict[key]):
                both_lazy.append(key)
            else:
                with no_grad():
                    param.materialize(state_dict[key].shape)
        if both_lazy:
            state_dict = {k: v for k, v in state_dict.items() if k not in both_lazy}
        missing = []
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing,
                                      unexpected_keys, error_msgs)
        missing_keys.extend(k for k in missing if k not in both_lazy)

    def _apply(self, fn):
        # Casting an uninitialized buffer yields a plain empty tensor; keep it uninitialized
        # with the new device and dtype, as torch's subclass-preserving cast does.
        lazy = [k for k, b in self._buffers.items() if is_lazy(b)]
        super()._apply(fn)
        for k in lazy:
            b = self._buffers[k]
            if not is_lazy(b):
                self._buffers[k] = UninitializedBuffer(b.requires_grad, b.device, b.dtype)
        return self

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module, input):
        module.initialize_parameters(*input)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        # Found by identity, not through the handle: a deep-copied module's handle still
        # points at the original module's hook dict.
        hooks = module._forward_pre_hooks
        for key in [k for k, h in hooks.items() if getattr(h, "__self__", None) is module and
                    getattr(h, "__func__", None) is LazyModuleMixin._infer_parameters]:
            del hooks[key]
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


def _kw(device, dtype):
    return {"device": device, "dtype": dtype}


class LazyLinear(LazyModuleMixin, Linear):
    """Linear with in_features = input.shape[-1] of the first input."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(**_kw(device, dtype))
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**_kw(device, dtype))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    _spatial = 0  # spatial dims of the input

    def __init__(self, out_channels, bias, device, dtype, **conv_args):
        super().__init__(0, 0, bias=False, device=device, dtype=dtype, **conv_args)
        self.weight = UninitializedParameter(**_kw(device, dtype))
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**_kw(device, dtype))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups,
                                         *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                         *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        unbatched = self._spatial + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        return input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """Conv1d with in_channels from the first input's channel dim."""

    cls_to_become, _spatial = Conv1d, 1

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(out_channels, bias, device, dtype, kernel_size=kernel_size,
                         stride=stride, padding=padding, dilation=dilation, groups=groups,
                         padding_mode=padding_mode)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """Conv2d with in_channels from the first input's channel dim."""

    cls_to_become, _spatial = Conv2d, 2

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(out_channels, bias, device, dtype, kernel_size=kernel_size,
                         stride=stride, padding=padding, dilation=dilation, groups=groups,
                         padding_mode=padding_mode)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """Conv3d with in_channels from the first input's channel dim."""

    cls_to_become, _spatial = Conv3d, 3

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(out_channels, bias, device, dtype, kernel_size=kernel_size,
                         stride=stride, padding=padding, dilation=dilation, groups=groups,
                         padding_mode=padding_mode)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """ConvTranspose1d with in_channels from the first input's channel dim."""

    cls_to_become, _spatial = ConvTranspose1d, 1

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(out_channels, bias, device, dtype, kernel_size=kernel_size,
                         stride=stride, padding=padding, output_padding=output_padding,
                         groups=groups, dilation=dilation, padding_mode=padding_mode)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """ConvTranspose2d with in_channels from the first input's channel dim."""

    cls_to_become, _spatial = ConvTranspose2d, 2

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(out_channels, bias, device, dtype, kernel_size=kernel_size,
                         stride=stride, padding=padding, output_padding=output_padding,
                         groups=groups, dilation=dilation, padding_mode=padding_mode)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """ConvTranspose3d with in_channels from the first input's channel dim."""

    cls_to_become, _spatial = ConvTranspose3d, 3

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(out_channels, bias, device, dtype, kernel_size=kernel_size,
                         stride=stride, padding=padding, output_padding=output_padding,
                         groups=groups, dilation=dilation, padding_mode=padding_mode)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    # affine and track_running_stats default to True for every lazy norm, InstanceNorm's too,
    # as in torch.
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        # Built without affine and stats so no tensors are made only to be replaced.
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(**_kw(device, dtype))
            self.bias = UninitializedParameter(**_kw(device, dtype))
        if track_running_stats:
            self.running_mean = UninitializedBuffer(**_kw(device, dtype))
            self.running_var = UninitializedBuffer(**_kw(device, dtype))
            self.num_batches_tracked = _C.zeros([], dtype=_C.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        # input.shape[1] even for an unbatched instance-norm input, as torch 1.13 does.
        self.num_features = input.shape[1]
        with no_grad():
            if self.affine:
                self.weight.materialize((self.num_features,))
                self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """BatchNorm1d with num_features from the first input's dim 1."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """BatchNorm2d with num_features from the first input's dim 1."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """BatchNorm3d with num_features from the first input's dim 1."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm1d with num_features from the first input's dim 1."""

    cls_to_become = InstanceNorm1d
    _batched_dim = InstanceNorm1d._batched_dim


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm2d with num_features from the first input's dim 1."""

    cls_to_become = InstanceNorm2d
    _batched_dim = InstanceNorm2d._batched_dim


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm3d with num_features from the first input's dim 1."""

    cls_to_become = InstanceNorm3d
    _batched_dim = InstanceNorm3d._batched_dim
