"""Handles returned by register_hook, like torch.utils.hooks.RemovableHandle."""


class RemovableHandle:
    def __init__(self, remove_fn):
        self._remove = remove_fn

    def remove(self):
        if self._remove is not None:
            self._remove()
            self._remove = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
