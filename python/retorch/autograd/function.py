"""retorch.autograd.Function: custom forward/backward in Python, like torch.autograd.Function."""
import functools

from .. import _C
from .._C import Tensor
from .grad_mode import no_grad


class FunctionCtx:
    """The ctx that forward (or setup_context) fills in and backward reads back."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument {} is of "
                                "type {}".format(i, type(t).__name__))
        self.to_save = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        # Once the graph is built the tensors live in the C++ node (see Note [Python Function
        # ownership] in python/src/autograd_function.cpp), which checks their versions.
        node = self.__dict__.get("_node")
        if node is not None:
            return node.saved_tensors()
        return tuple(self.__dict__.get("to_save", ()))

    saved_variables = saved_tensors


def _backward_name(cls):
    return cls.__dict__.get("_backward_name") or cls.__name__ + "Backward"


def _run_backward(ctx, *grad_outputs):
    """Called by the C++ node: runs the user's backward, checks it, and returns one gradient
    (Tensor or None) per tensor input of forward."""
    cls = ctx._forward_cls
    if not all(ctx._is_tensor_output):  # non-tensor outputs get None, as in torch
        it = iter(grad_outputs)
        grad_outputs = tuple(next(it) if o else None for o in ctx._is_tensor_output)
    fn = cls.backward
    if fn is Function.backward and cls.vjp is not Function.vjp:
        fn = cls.vjp
    result = fn(ctx, *grad_outputs)
    if not isinstance(result, tuple):
        result = (result,)
    is_tensor = ctx._is_tensor_input
    name = _backward_name(cls)
    if len(result) != len(is_tensor):
        if len(result) > len(is_tensor) and all(g is None for g in result[len(is_tensor):]):
            result = result[:len(is_tensor)]
        else:
            raise RuntimeError("function {} returned an incorrect number of gradients (expected "
                               "{}, got {})".format(name, len(is_tensor), len(result)))
    grads = []
    for i, (g, tensor_input) in enumerate(zip(result, is_tensor)):
        if not tensor_input:
            if g is not None:
                raise RuntimeError("function {} returned a gradient different than None at "
                                   "position {}, but the corresponding forward input was not a "
                                   "Variable".format(name, i + 1))
            continue
        if g is not None and not isinstance(g, Tensor):
            raise RuntimeError("expected Variable or None (got {}) as gradient {} of function {}"
                               .format(type(g).__name__, i + 1, name))
        grads.append(g)
    return grads


class Function:
    """Subclass with @staticmethod forward(ctx, *args) (or forward(*args) plus
    setup_context(ctx, inputs, output)) and backward(ctx, *grad_outputs); call MyFn.apply."""

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx._forward_cls = cls
        ctx._is_tensor_input = tuple(isinstance(a, Tensor) for a in args)
        grad_on = _C.is_grad_enabled()
        ctx.needs_input_grad = tuple(grad_on and t and a.requires_grad
                                     for t, a in zip(ctx._is_tensor_input, args))
        ctx.materialize_grads = True
        # As in torch, forward (and setup_context) run without recording a graph.
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(output, tuple)
        outputs = output if is_tuple else (output,)
        ctx._is_tensor_output = tuple(isinstance(o, Tensor) for o in outputs)
        d = ctx.__dict__
        dirty = tuple(d.pop("dirty_tensors", ()))
        non_diff = tuple(d.pop("non_differentiable", ()))
        wrapped = _C._function_wrap_outputs(ctx, _backward_name(cls), _run_backward, args, outputs,
                                            d.get("to_save"), dirty, non_diff,
                                            ctx.materialize_grads)
        if d.get("_node") is not None:
            d.pop("to_save", None)  # the node holds them now; keeping outputs here is a cycle
        return wrapped if is_tuple else wrapped[0]


class _DelayedError(Function):
    """Identity whose backward raises: what once_differentiable returns under create_graph."""
    _backward_name = "DelayedError"

    @staticmethod
    def forward(ctx, *tensors):
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn):
    """Decorates a backward that is not itself differentiable: it runs without recording a
    graph, and differentiating its result (create_graph=True) raises RuntimeError."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outputs = (outputs,) if single else outputs

        def fake_requires_grad(v):
            if isinstance(v, Tensor) and v.is_floating_point():
                v = v.detach().requires_grad_(True)
            return v
        result = _DelayedError.apply(*[fake_requires_grad(v) for v in outputs])
        return result[0] if single else result
    return wrapper
