"""retorch.nn.utils.stateless: torch 1.13's functional_call, which calls a module once with some
of its parameters and buffers (dotted names into submodules) replaced by given tensors."""
import warnings

__all__ = ["functional_call"]


# Note [Stateless replacement]
# For the call, each module named in parameters_and_buffers gets a subclass of its class whose
# __getattribute__ answers the replaced names from the caller's dict before anything else (so a
# parameter, a buffer, a parametrization's property or a name the module lacks all read the
# given tensor) and whose __setattr__ writes them into that dict (`self.buf = self.buf + 1` in
# forward updates the dict, not the module). The module's own dicts are never touched, so
# restoring its class after the call (also after an exception) restores the module exactly.
# Tied tensors are replaced by name only: a weight shared by a.weight and b.weight that is given
# for a.weight alone stays the original in b, and two different tensors for one tied weight
# warn, as in torch 1.13.


def _replacer_class(cls, names, values):
    """The subclass of cls described in Note [Stateless replacement]; names maps an attribute
    of the module to its key in values."""

    def __getattribute__(self, name):
        key = names.get(name)
        if key is not None:
            return values[key]
        return cls.__getattribute__(self, name)

    def __setattr__(self, name, value):
        key = names.get(name)
        if key is not None:
            values[key] = value
        else:
            cls.__setattr__(self, name, value)

    return type(f"StatelessReplacer{cls.__name__}", (cls,),
                {"__getattribute__": __getattribute__, "__setattr__": __setattr__})


def _check_jit(module):
    from ... import jit
    if jit.is_tracing() or jit.is_scripting() or isinstance(module, jit.ScriptFunction):
        raise RuntimeError("The stateless API can't be used with Jitted modules")


def functional_call(module, parameters_and_buffers, args, kwargs=None):
    """module(*args, **kwargs) (module(args) when args is not a tuple) with the parameters and
    buffers named in parameters_and_buffers replaced by its tensors for this call; gradients
    flow to those tensors and the module is unchanged afterwards. A name through a missing
    submodule raises AttributeError; see Note [Stateless replacement]."""
    from ..modules.module import Module
    _check_jit(module)
    kwargs = {} if kwargs is None else kwargs
    swapped = {}  # id(module) -> (module, its original class, names replaced in it)
    replaced = {}  # id(original tensor) -> the tensor given for it
    try:
        for key, tensor in parameters_and_buffers.items():
            *path, leaf = key.split(".")
            owner = module
            for part in path:
                owner = getattr(owner, part)
            if not isinstance(owner, Module):
                continue  # (a name below a tensor: torch's call ignores it as well)
            if hasattr(owner, leaf):
                old = getattr(owner, leaf)
                if replaced.setdefault(id(old), tensor) is not tensor:
                    warnings.warn("functional_call was passed multiple values for tied "
                                  "weights. This behavior is deprecated and will be an error "
                                  "in future versions")
            entry = swapped.get(id(owner))
            if entry is None:
                cls = type(owner)
                entry = swapped[id(owner)] = (owner, cls, {})
                owner.__class__ = _replacer_class(cls, entry[2], parameters_and_buffers)
            entry[2][leaf] = key
        return module(*args, **kwargs) if isinstance(args, tuple) else module(args, **kwargs)
    finally:
        for owner, cls, _ in swapped.values():
            owner.__class__ = cls
