"""retorch.autograd: backward, grad, gradcheck, grad modes and anomaly detection."""
from . import _C


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    _C._backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    return _C._grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


def gradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    if isinstance(inputs, _C.Tensor):
        inputs = (inputs,)
    return _C._gradcheck(func, tuple(inputs), eps, atol, rtol, raise_exception)


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
    def __init__(self, mode=True):
        self._ctx = _C._InferenceMode(mode)

    def __enter__(self):
        self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__()


class detect_anomaly:  # noqa: N801
    def __init__(self, check_nan=True):
        self.prev = _C.is_anomaly_enabled()

    def __enter__(self):
        _C._set_anomaly_enabled(True)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev)


def set_detect_anomaly(mode):
    _C._set_anomaly_enabled(mode)
