"""nn.Parameter: a Tensor subclass that modules register as a learnable parameter."""
from .. import _C
from .._C import Tensor

__all__ = ["Parameter"]


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
