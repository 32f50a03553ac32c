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


def gradgradcheck(func, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """Checks second derivatives like torch.autograd.gradgradcheck: gradcheck of the first-order
    gradients of func (taken with create_graph=True) w.r.t. the inputs that require grad and
    the grad_outputs (random, seeded, when not given)."""
    if isinstance(inputs, _C.Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    outputs = func(*inputs)
    outputs = tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)
    if grad_outputs is None:
        gen = _C.Generator().manual_seed(0)
        grad_outputs = tuple(_C.randn(tuple(o.shape), generator=gen, dtype=o.dtype)
                             .requires_grad_(True) for o in outputs)
    grad_outputs = tuple(grad_outputs)
    n = len(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]

    def first_order(*xs):
        # gradcheck's numerical pass may hand over inputs without autograd history: track
        # them here so the first-order gradients can still be taken.
        ins = tuple(x.detach().requires_grad_(True) if i in wrt and not x.requires_grad else x
                    for i, x in enumerate(xs[:n]))
        gos = xs[n:]
        with enable_grad():
            outs = func(*ins)
            outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
            gs = grad(outs, [ins[i] for i in wrt], list(gos), create_graph=True,
                      allow_unused=True)
        return tuple(g for g in gs if g is not None)
    return gradcheck(first_order, inputs + grad_outputs, eps, atol, rtol, raise_exception)


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
