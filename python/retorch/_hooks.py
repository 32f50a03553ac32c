"""Handles returned by register_hook, shaped like torch.utils.hooks.RemovableHandle."""
import collections
import weakref


class RemovableHandle:
    """A handle whose remove() unregisters a hook. Built as torch builds it, from the dict the
    hook is stored in under handle.id (held weakly), or from a zero-argument callable that
    unregisters it (what Tensor.register_hook's C++ side passes)."""

    next_id = 0

    def __init__(self, hooks_dict):
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self._remove_fn = None
        self.hooks_dict_ref = None
        if isinstance(hooks_dict, collections.abc.MutableMapping):
            self.hooks_dict_ref = weakref.ref(hooks_dict)
        elif callable(hooks_dict):
            self._remove_fn = hooks_dict
        else:
            raise TypeError("RemovableHandle expects the hooks dict (or a remove callable), got "
                            f"{type(hooks_dict).__name__}")

    def remove(self):
        if self._remove_fn is not None:
            fn, self._remove_fn = self._remove_fn, None
            fn()
            return
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]

    def __getstate__(self):
        if self._remove_fn is not None:  # copies share the callable (pickling may refuse it)
            return (None, self.id, self._remove_fn)
        return (self.hooks_dict_ref(), self.id)

    def __setstate__(self, state):
        self._remove_fn = state[2] if len(state) > 2 else None
        # A dict that died before pickling gives a dead reference, as in torch.
        self.hooks_dict_ref = weakref.ref(collections.OrderedDict() if state[0] is None
                                          else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
