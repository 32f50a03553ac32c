"""nn.CppModule: a C++ nn::Module used from Python like any other nn.Module."""
from ... import _C
from ...autograd import no_grad
from ..._C import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["CppModule", "cpp_layer"]


class CppModule(Module):
    """Wraps a C++ module (retorch._C._nn.Module): its parameters and buffers are the C++
    tensors themselves (same TensorImpl, so optimizers, state dicts, .to() and gradients reach
    the C++ side), its children are wrapped the same way, and calling it runs the C++ forward.
    It can sit inside Python modules, and Python modules can wrap it."""

    def __init__(self, cpp):
        super().__init__()
        object.__setattr__(self, "_cpp", cpp)
        for name, t in cpp.named_parameters():
            self._parameters[name] = Parameter._alias(t)
        for name, t in cpp.named_buffers():
            self._buffers[name] = t
        for name, child in cpp.named_children():
            self._modules[name] = CppModule(child)
        self.training = cpp.training

    def forward(self, input):
        return self._cpp.forward(input)

    def __getitem__(self, idx):
        """Children of a C++ container by position (Sequential, ModuleList) or name."""
        if isinstance(idx, str):
            return self._modules[idx]
        return list(self._modules.values())[idx]

    def train(self, mode=True):
        super().train(mode)
        self._cpp.train(mode)
        return self

    def __setattr__(self, name, value):
        if name in self.__dict__.get("_parameters", {}) or \
                name in self.__dict__.get("_buffers", {}) or \
                name in self.__dict__.get("_modules", {}):
            raise AttributeError(f"cannot replace '{name}' of C++ module {self._cpp.name}: "
                                 "assign to its .data or load_state_dict instead")
        super().__setattr__(name, value)

    def _apply(self, fn):
        # Tensors are converted in place (the C++ module holds the same TensorImpls).
        for m in self.children():
            m._apply(fn)
        with no_grad():
            for t in list(self._parameters.values()) + list(self._buffers.values()):
                new = fn(t)
                if new is not t:
                    t.data = new
                if isinstance(t, Parameter) and t.grad is not None:
                    g = fn(t.grad)
                    if g is not t.grad:
                        t.grad.data = g
        return self

    def _get_name(self):
        return "CppModule"

    def extra_repr(self):
        # Leaves print the C++ layer's own line; containers list their wrapped children.
        return self._cpp.name if self._modules else repr(self._cpp)

    def cpp_repr(self):
        """The C++ module's own printout (libtorch style)."""
        return repr(self._cpp)


def cpp_layer(kind, *args):
    """A C++ layer built from Python: Linear, Conv2d, BatchNorm2d, MaxPool2d, ReLU, Flatten, or
    Sequential(*cpp_layers) (torch's positional arguments), wrapped as a CppModule."""
    args = tuple(a._cpp if isinstance(a, CppModule) else a for a in args)
    return CppModule(_C._nn.cpp_layer(kind, *args))
