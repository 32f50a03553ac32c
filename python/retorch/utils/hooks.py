"""retorch.utils.hooks: torch.utils.hooks' RemovableHandle and hook-serialization helpers."""
import warnings

from .._hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Marks a hook as not serializable, so warn_if_has_hooks stays quiet about it."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warns for each backward hook on tensor that is not marked with unserializable_hook."""
    hooks = getattr(tensor, "_backward_hooks", None)
    if hooks:
        for k in hooks:
            hook = hooks[k]
            if not hasattr(k, "__torch_unserializable__"):
                warnings.warn("backward hook {} on tensor will not be serialized.  If this is "
                              "expected, you can decorate the function with "
                              "@torch.utils.hooks.unserializable_hook to suppress this warning"
                              .format(repr(hook)))
