"""nn.utils.parametrize: a parameter or buffer that is recomputed, each time it is read, from
'original' tensors through a chain of modules (torch.nn.utils.parametrize's protocol)."""
import collections.abc
import copy
from contextlib import contextmanager

from ..._C import Tensor
from ...autograd import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

# Note [Parametrized classes]
# module.weight must run code on every read and write, so the module's class is swapped for a
# one-off subclass (ParametrizedLinear, ...) that holds a property per parametrized name; the
# tensors move to module.parametrizations[name] (a ParametrizationList). Module.__getattr__ is
# only the fallback of normal lookup and Module.__setattr__ hands non-Parameter values to
# object.__setattr__, so the property's getter and setter see every access. Assigning an
# nn.Parameter is refused by register_parameter ("attribute 'weight' already exists"), as torch.

# Note [Replacing data in place]
# torch swaps an original's storage with Tensor.set_ so that the Parameter object (which an
# optimizer may already hold) stays the same. retorch has no set_; assigning .data does the same
# for our purposes: same Python object, same requires_grad, new shape/dtype/values.

_cache_depth = 0
_cache = {}


@contextmanager
def cached():
    """Inside this context each parametrized tensor is computed once, on its first read, and
    reused; the values are dropped when the outermost context exits."""
    global _cache_depth, _cache
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache = {}


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _check_like(what, got, want_dtype, want_shape):
    """`what` (a tensor some parametrization produced) must match the tensor it stands for."""
    hint = ", unless the `unsafe` flag is enabled"
    if not isinstance(got, Tensor):
        raise ValueError(f"{what} must be a tensor. Got {type(got).__name__}.")
    if got.dtype != want_dtype:
        raise ValueError(f"A parametrization may not change the dtype of the tensor{hint}.\n"
                         f"expected dtype: {want_dtype}\n{what} has dtype: {got.dtype}")
    if tuple(got.shape) != tuple(want_shape):
        raise ValueError(f"A parametrization may not change the shape of the tensor{hint}.\n"
                         f"expected shape: {tuple(want_shape)}\n{what} has shape: "
                         f"{tuple(got.shape)}")


class ParametrizationList(ModuleList):
    """module.parametrizations[name]: the chain of parametrizations and the tensor(s) they start
    from, `original` (or original0, original1, ... when the first right_inverse returns several).
    Built by register_parametrization, not by hand."""

    def __init__(self, modules, original, unsafe=False):
        modules = list(modules)
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = tuple(original.shape), original.dtype
        # The stored tensor(s) are whatever the chain's right inverses make of the current value.
        new = original
        with no_grad():
            for m in reversed(modules):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                                 f"dtype.\noriginal.dtype: {dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if new is not original:
                original.data = new  # See Note [Replacing data in place]
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(t).__name__}.")
                if isinstance(original, Parameter):
                    t = Parameter(t, original.requires_grad)
                else:
                    t.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", t)
        if not unsafe:
            _check_like("the parametrization's output", self(), dtype, shape)

    def right_inverse(self, value):
        """Stores the chain's right inverse of `value` in original (or original0, ...), in place;
        this is what `module.weight = value` does."""
        with no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                       "right_inverse.")
                value = m.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError("`right_inverse` should return a tensor. Got " +
                                     type(value).__name__)
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                self.original.data = value  # See Note [Replacing data in place]
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, t in enumerate(value):
                target = getattr(self, f"original{i}")
                if not isinstance(t, Tensor):
                    raise ValueError("`right_inverse` must return a sequence of tensors. Got "
                                     f"element {i} of type {type(t).__name__}")
                if t.dtype != target.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{t.dtype} while `original{i}` has dtype {target.dtype}")
                target.data = t

    def forward(self):
        """The parametrized value: the first module applied to the original(s), then the rest in
        registration order."""
        chain = list(self)
        if self.is_tensor:
            x = chain[0](self.original)
        else:
            x = chain[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in chain[1:]:
            x = m(x)
        return x


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(); pickle the state_dict and re-register the "
                       "parametrizations on load")


def _deepcopy_instance(self, memo):
    # The injected class refuses __getstate__, so deepcopy needs its own path: copy the dict.
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module):
    """Swaps module's class for a fresh subclass to hang properties on.
    See Note [Parametrized classes]"""
    cls = type(module)
    body = {"__getstate__": _refuse_pickling, "__module__": cls.__module__,
            "__doc__": cls.__doc__}
    if not hasattr(cls, "__deepcopy__"):
        body["__deepcopy__"] = _deepcopy_instance
    module.__class__ = type("Parametrized" + cls.__name__, (cls,), body)


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        chain = self.parametrizations[tensor_name]
        try:
            if not _cache_depth:
                return chain()
            key = (id(self), tensor_name)
            value = _cache.get(key)
            if value is None:
                value = _cache[key] = chain()
            return value
        except AttributeError as e:
            # Python would answer an AttributeError from a property with __getattr__'s "no
            # attribute 'weight'", hiding the real failure.
            raise RuntimeError(f"computing the parametrized '{tensor_name}' failed: {e}") from e

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Makes module.<tensor_name> read as parametrization(original). The first registration on a
    name stores right_inverse(value) (if defined) as module.parametrizations[tensor_name].original;
    later ones chain after the existing parametrizations. unsafe=True skips the dtype/shape
    checks. Returns module."""
    if not isinstance(module, Module):
        raise TypeError(f"register_parametrization expects an nn.Module, got "
                        f"{type(module).__name__}")
    if not isinstance(parametrization, Module):
        raise TypeError(f"a parametrization must be an nn.Module, got "
                        f"{type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            out = parametrization(current)
            _check_like(f"parametrization(module.{tensor_name})", out, current.dtype,
                        current.shape)
            if hasattr(parametrization, "right_inverse"):
                try:
                    back = parametrization.right_inverse(out)
                except NotImplementedError:
                    pass
                else:
                    _check_like("parametrization.right_inverse(...)", back, current.dtype,
                                current.shape)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"cannot parametrize '{tensor_name}': it is None")
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether module has any parametrization (or one on tensor_name)."""
    chains = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undoes register_parametrization on tensor_name: the name becomes a plain parameter or
    buffer again, holding the current parametrized value (leave_parametrized=True) or the
    original. The last removal restores the module's class. Returns module."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            original.data = value  # See Note [Replacing data in place]
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value.detach()
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class as it was before any parametrization was registered."""
    if is_parametrized(module):
        return type(module).__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Registers from_module's parametrizations (all, or tensor_name's) on to_module, sharing
    the parametrization modules and the original tensors. Returns to_module."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        src = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for m in src:
            register_parametrization(to_module, name, m)
        dst = to_module.parametrizations[name]
        if src.is_tensor:
            dst.original = src.original
        else:
            for i in range(src.ntensors):
                setattr(dst, f"original{i}", getattr(src, f"original{i}"))
    return to_module
