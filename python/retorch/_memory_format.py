"""Tensor.to's and the *_like factories' memory_format= argument: the generated overloads make
contiguous tensors; this lays the result out in the requested format, or preserves the input's
layout like torch's default preserve_format."""
from . import _C


def _dense_order(t):
    """The dim order in which t is contiguous (a transposed or channels-last tensor), or None
    when t is contiguous already or not dense."""
    if t.dim() < 2 or t.is_contiguous():
        return None
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    return order if t.permute(order).is_contiguous() else None


def install(Tensor):
    generated_to = Tensor.to

    preserve = _C.preserve_format

    def to(self, *args, memory_format=preserve, **kwargs):
        # (`is` first: memory_format's == is a bound call, a third of a cheap to()'s time)
        keep = memory_format is preserve or memory_format == preserve
        if keep and self.is_contiguous():  # (size-1 dims' strides may still differ)
            out = generated_to(self, *args, **kwargs)
            return out if out is self else _C._restride_like(out, self)
        if not (args or kwargs):
            return self if keep else self.contiguous(memory_format=memory_format)
        if keep:
            order = _dense_order(self)
            if order is not None:
                # A dense layout kept in one pass: convert the contiguous permuted view, then
                # permute back (restriding a contiguous result cost a second, strided copy).
                src = self.permute(order)
                out = generated_to(src, *args, **kwargs)
                if (out.data_ptr() == src.data_ptr() and out.dtype == src.dtype
                        and out.device == src.device):
                    return self  # nothing to convert
                inverse = [0] * len(order)
                for i, d in enumerate(order):
                    inverse[d] = i
                return out.permute(inverse)
            out = generated_to(self, *args, **kwargs)
            return out if out is self else _C._restride_like(out, self)
        return generated_to(self, *args, **kwargs).contiguous(memory_format=memory_format)
    to.__doc__ = generated_to.__doc__
    Tensor.to = to


def _like(generated):
    def like(input, *args, memory_format=_C.preserve_format, requires_grad=False, **kwargs):
        out = generated(input, *args, **kwargs)
        if memory_format == _C.preserve_format:
            out = _C._restride_like(out, input)
        elif memory_format != _C.contiguous_format:
            out = out.contiguous(memory_format=memory_format)
        return out.requires_grad_() if requires_grad else out  # a leaf, after any restride
    like.__name__ = generated.__name__
    like.__doc__ = generated.__doc__
    return like


def install_like(namespace):
    """zeros_like & co. default to preserve_format like torch's (empty_like is bound in C++)."""
    for name in ("zeros_like", "ones_like", "full_like", "rand_like", "randn_like"):
        namespace[name] = _like(namespace[name])
