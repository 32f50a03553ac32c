"""retorch.autograd: backward, grad, gradcheck, grad modes, anomaly detection, Function."""
from .. import _C
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                        _GradModeContext)
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from . import function  # noqa: F401
from . import functional  # noqa: F401  (jacobian, hessian, vjp, jvp, vhp, hvp)
from . import graph  # noqa: F401  (saved_tensors_hooks, save_on_cpu)


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


from .variable import Variable  # noqa: E402


def variable(*args, **kwargs):
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) "
                       "instead")


variable.Variable = Variable  # as torch: the function shadows the variable module
