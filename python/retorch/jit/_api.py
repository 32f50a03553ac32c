"""torch.jit's annotation names that model code uses (ignore, unused, export, Final, ...) and the
is_tracing/is_scripting queries; in eager code they mark functions and pass values through."""
import collections
import contextlib
import functools
import inspect
import threading
import warnings
from typing import Final  # noqa: F401  (torch.jit.Final is typing.Final)

__all__ = ["ignore", "unused", "export", "is_scripting", "is_tracing", "Final", "annotate",
           "script_if_tracing", "Attribute", "interface", "Error", "FunctionModifiers"]

_state = threading.local()


@contextlib.contextmanager
def _tracing():
    """Marks this thread as tracing for the block (retorch.jit.trace wraps the traced call)."""
    depth = getattr(_state, "depth", 0)
    _state.depth = depth + 1
    try:
        yield
    finally:
        _state.depth = depth


def is_tracing():
    """True while retorch.jit.trace runs the traced function on this thread, else False."""
    return getattr(_state, "depth", 0) > 0


def is_scripting():
    """False: code runs eagerly here, never as TorchScript."""
    return False


class FunctionModifiers:
    """The marks ignore/unused/export leave in fn._torchscript_modifier, as torch's."""
    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from a exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = ("if this method is not scripted, copy the python method onto the "
                              "scripted model")


def ignore(drop=False, **kwargs):
    """Marks a function to be left as Python by the compiler (@ignore, or @ignore(drop=True),
    deprecated, for unused); returns the function itself."""
    if callable(drop):
        fn = drop
        fn._torchscript_modifier = FunctionModifiers.IGNORE
        return fn
    if not isinstance(drop, bool):
        raise RuntimeError("Argument to @torch.jit.ignore must be a bool or "
                           f"a function but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now drop "
                      "the function call on compilation. Use torch.jit.unused now. {}",
                      category=FutureWarning)
        drop = drop_on_export
    elif drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function "
                      "call on compilation. Use torch.jit.unused now. {}", category=FutureWarning)

    def decorator(fn):
        fn._torchscript_modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE
        return fn
    return decorator


def unused(fn):
    """Marks a function (or a property's accessors) the compiler replaces with a raise."""
    if isinstance(fn, property):
        fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def export(fn):
    """Marks a module method as an entry point to compile; returns it."""
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def annotate(the_type, the_value):
    """A type hint for the compiler: returns the_value."""
    return the_value


def script_if_tracing(fn):
    """fn, wrapped as torch wraps it. torch scripts fn on its first call under tracing, so its
    control flow survives in the trace; retorch runs it eagerly then too, so the trace records
    the path taken."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper.__original_fn = fn
    wrapper.__script_if_tracing_wrapper = True
    return wrapper


# torch.jit.Attribute(value, type): with the JIT enabled (torch's default) a namedtuple that
# torch.jit.ScriptModule unpacks; torch returns the bare value only under PYTORCH_JIT=0.
Attribute = collections.namedtuple("Attribute", ["value", "type"])


def interface(obj):
    """Declares a TorchScript interface class; returns the class unchanged."""
    if not inspect.isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    from ..nn import Module
    is_module_interface = issubclass(obj, Module) and len(obj.mro()) == 3
    if not is_module_interface and len(obj.mro()) > 2:
        raise RuntimeError("TorchScript interface does not support inheritance yet. "
                           "Please directly inherit from 'object' or 'nn.Module'.")
    obj.__torch_script_interface__ = obj.__qualname__
    return obj


class Error(Exception):
    """torch.jit.Error: what an exception raised inside TorchScript code surfaces as."""
