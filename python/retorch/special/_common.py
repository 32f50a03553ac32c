"""Shared plumbing for retorch.special: argument checks and promotion, float64 evaluation,
polynomial series, masked loops, and the autograd node factory.

The kernels run without a graph (a where() that discards a branch's inf or NaN is harmless
there); gradients come from torch's derivative formulas, as in derivatives.yaml."""
import sys

from .. import _C
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad

Tensor = _C.Tensor

# Cephes' machine epsilon for double, used by the iterative kernels' stopping tests.
MACHEP = 1.11022302462515654042e-16


def _rt():
    """The retorch package (special is imported while retorch/__init__ still runs)."""
    return sys.modules["retorch"]


def float_dtype(dt):
    """torch's special functions compute integers and bools in the default float dtype."""
    return dt if dt.is_floating_point else _C.get_default_dtype()


def tensor_arg(op, value, name="input", position=1):
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")
    return value


def unary_arg(op, value):
    """The input as a floating tensor (integers become the default dtype, as in torch)."""
    x = tensor_arg(op, value)
    dt = float_dtype(x.dtype)
    return x if x.dtype == dt else x.to(dt)


def binary_args(op, a, b, scalars=True):
    """Two operands promoted to one floating dtype and broadcast, as torch's TensorIterator
    does; with scalars, either (not both) may be a Python number, like torch's Scalar
    overloads. The broadcast is an expand, so gradients reduce back to each input's shape."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if not scalars:
        tensor_arg(op, a, "input", 1)
        tensor_arg(op, b, "other", 2)
    if not (ta or tb):
        raise TypeError(f"{op}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(b).__name__}), but expected one of: "
                        "(Tensor, Tensor), (Number, Tensor), (Tensor, Number)")
    dt = float_dtype(_rt().result_type(a, b))
    dev = (a if ta else b).device
    a = a.to(dt) if ta else _C.full([], a, dtype=dt, device=dev)
    b = b.to(dt) if tb else _C.full([], b, dtype=dt, device=dev)
    if a.shape != b.shape:
        a, b = _rt().broadcast_tensors(a, b)
    return a, b


def finish(result, out):
    """torch's out= convention: resize out to the result's shape and copy into it."""
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(list(result.shape))
    out.copy_(result)
    return out


def in_float64(kernel, *xs):
    """Runs kernel on float64 copies of xs and rounds back to xs[0]'s dtype: the kernels are
    written once, for double (torch's float kernels agree to float rounding)."""
    dt = xs[0].dtype
    if dt == _C.float64:
        return kernel(*xs)
    return kernel(*(x.to(_C.float64) for x in xs)).to(dt)


def const(x, value):
    return _C.full_like(x, value)


def polevl(x, coefs):
    """Horner's rule, highest power first (Cephes polevl)."""
    r = const(x, coefs[0])
    for c in coefs[1:]:
        r = r * x + c
    return r


def select(result, mask, value):
    """result with value (tensor or number) where mask holds."""
    return _C.where(mask, value, result)


def any_true(mask):
    return bool(mask.any().item())


def on_subset(out, mask, kernel, *xs):
    """out[mask] = kernel(*(x[mask])): runs an iterative kernel only on the elements whose
    regime it is, so its loop length is set by them alone."""
    if any_true(mask):
        out[mask] = kernel(*(x[mask] for x in xs))
    return out


def unary_op(name, kernel, backward=None, backward_name=None):
    """torch.special.<name>(input, *, out=None). kernel maps a float64 tensor to the result;
    backward(grad, input, result), torch's derivatives.yaml formula in retorch ops, makes the
    op differentiable (to any order, as the formula is itself differentiable); without one
    the result does not require grad, as torch's non-differentiable special ops."""
    op = "special_" + name
    if backward is None:
        def fn(input, *, out=None):
            x = unary_arg(op, input)
            with no_grad():
                return finish(in_float64(kernel, x), out)
        fn.__name__ = name
        return fn

    class Node(Function):
        _backward_name = backward_name

        @staticmethod
        def forward(ctx, x):
            y = in_float64(kernel, x)
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return backward(grad, x, y)

    def fn(input, *, out=None):
        return finish(Node.apply(unary_arg(op, input)), out)
    fn.__name__ = name
    return fn


def not_implemented(what):
    return NotImplementedError(f"the derivative for '{what}' is not implemented.")
