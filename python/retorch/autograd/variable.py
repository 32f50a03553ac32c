"""torch.autograd.Variable: the legacy wrapper, now a factory returning a detached tensor."""
import warnings

from .. import _C


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False) returns data.detach() (an empty
    tensor for None) with requires_grad set; every tensor is an instance, as in torch."""

    def __new__(cls, data=None, requires_grad=False, volatile=False, _grad_fn=None, name=None):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            from .. import get_default_dtype
            t = _C.empty([0], dtype=get_default_dtype())
        elif not isinstance(data, _C.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        else:
            t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t
