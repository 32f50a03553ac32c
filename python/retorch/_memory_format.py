"""The *_like factories' memory_format= argument: the generated overloads make contiguous
tensors; this lays the result out in the requested format, or preserves the input's layout like
torch's default preserve_format. (Tensor.to's is in C++, python/src/memory_format.cpp.)"""
from . import _C


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
