"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (torch.autograd.grad_mode)."""
from .. import _C


class _GradModeContext:
    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self.mode)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()


class no_grad(_GradModeContext):  # noqa: N801
    def __init__(self):
        super().__init__(False)


class enable_grad(_GradModeContext):  # noqa: N801
    def __init__(self):
        super().__init__(True)


class set_grad_enabled(_GradModeContext):  # noqa: N801
    def __init__(self, mode):
        super().__init__(mode)
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(mode)

    def __enter__(self):
        pass

    def _args(self):
        return (self.mode,)


class inference_mode:  # noqa: N801
    """No graph recording (and, in torch, no version bookkeeping); a context manager or a
    decorator (@inference_mode())."""

    def __init__(self, mode=True):
        self.mode = mode
        self._guards = []

    def __enter__(self):
        ctx = _C._InferenceMode(self.mode)
        ctx.__enter__()
        self._guards.append(ctx)

    def __exit__(self, *exc):
        self._guards.pop().__exit__()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.mode):
                return fn(*args, **kwargs)
        return wrapper
