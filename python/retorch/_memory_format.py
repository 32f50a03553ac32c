"""Tensor.to's and the *_like factories' memory_format= argument: the generated overloads make
contiguous tensors; this lays the result out in the requested format, or preserves the input's
layout like torch's default preserve_format."""
from . import _C


def install(Tensor):
    generated_to = Tensor.to

    def to(self, *args, memory_format=_C.preserve_format, **kwargs):
        out = generated_to(self, *args, **kwargs) if args or kwargs else self
        if memory_format == _C.preserve_format:
            return out if out is self else _C._restride_like(out, self)
        return out.contiguous(memory_format=memory_format)
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
