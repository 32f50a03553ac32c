"""nn.Parameter: a Tensor subclass that modules register as a learnable parameter."""
from .. import _C
from .._C import Tensor

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


class Parameter(Tensor):
    """A leaf tensor (sharing data's storage) that requires grad by default and is registered
    as a parameter when assigned to a Module attribute."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        super().__init__(data.detach())
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _alias(cls, tensor):
        """A Parameter that is `tensor` itself (same TensorImpl, grad and version), not a
        detached copy: how C++ modules' parameters appear in Python (nn.CppModule)."""
        p = cls.__new__(cls)
        Tensor.__init__(p, tensor)
        return p

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self.requires_grad))


class UninitializedTensorMixin:
    """What an uninitialized parameter or buffer of a lazy module can do: be moved or cast,
    and materialize(shape) into a real one in place; its shape is unknown until then."""

    # No instance slots, so materialize() can swap an UninitializedBuffer's class for Tensor.
    __slots__ = ()
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Gives self empty data of `shape` (on its device, with its dtype, unless given) and
        turns it into a plain cls_to_become (Parameter or Tensor)."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = _C.empty(list(shape), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into "
            "an initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


def is_lazy(param):
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter of a lazy module whose shape is not known yet; materialize() makes it a
    Parameter."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(_C.empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module whose shape is not known yet; materialize() makes it a
    Tensor."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None):
        super().__init__(_C.empty(0, device=device, dtype=dtype))
        if requires_grad:
            self.requires_grad_(True)
