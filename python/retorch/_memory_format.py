"""Tensor.to's memory_format= argument: the generated to() overloads copy into a contiguous
tensor; this lays the result out in the requested format, or preserves the input's layout like
torch's default preserve_format."""
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
