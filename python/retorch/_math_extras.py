"""torch math functions retorch lacked, composed of its operators: inverse hyperbolics (in float64
for float32 and 16-bit inputs, then rounded), float_power, floor_divide, ldexp, frexp,
isin, cumulative_trapezoid, h/v/dsplit, mvlgamma, cholesky_solve/inverse, rsub, histogram, the
signal windows, and the real-tensor forms of conj and friends."""
import math

from . import _C
from . import return_types
from .autograd.function import Function

__all__ = ["acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh",
           "float_power", "floor_divide", "ldexp", "frexp", "isin", "cumulative_trapezoid",
           "trapz", "hsplit", "vsplit", "dsplit", "positive", "mvlgamma", "cholesky_solve",
           "cholesky_inverse", "rsub", "scalar_tensor", "histogram", "hann_window",
           "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "conj",
           "resolve_conj", "resolve_neg", "is_conj", "is_neg", "square_"]


def _wide(fn, x):
    """fn in float64 (integers become the default float, as torch's unary float ops do)."""
    if not x.is_floating_point():
        return fn(x.to(_C.float64)).to(_C.get_default_dtype())
    return fn(x.to(_C.float64)).to(x.dtype) if x.dtype != _C.float64 else fn(x)


def acosh(input):
    def f(x):
        big = x > 1e8  # (x - 1)(x + 1) would overflow: acosh(x) = log(2x) there
        core = _C.log1p((x - 1) + _C.sqrt((x - 1) * (x + 1)))
        return _C.where(big, _C.log(x) + math.log(2.0), core)
    return _wide(f, input)


def asinh(input):
    def f(x):
        a = _C.abs(x)
        big = a > 1e8
        core = _C.log1p(a + a * a / (1 + _C.sqrt(1 + a * a)))
        return _sign_like(_C.where(big, _C.log(a) + math.log(2.0), core), x)
    return _wide(f, input)


def atanh(input):
    def f(x):
        a = _C.abs(x)
        return _sign_like(0.5 * _C.log1p(2 * a / (1 - a)), x)
    return _wide(f, input)


def _sign_like(magnitude, x):
    """|magnitude| with x's sign (x's sign bit, so -0.0 stays negative)."""
    return _C.where(_C.signbit(x), -_C.abs(magnitude), _C.abs(magnitude))


arccosh, arcsinh, arctanh = acosh, asinh, atanh


def float_power(input, exponent):
    base = input.to(_C.float64) if isinstance(input, _C.Tensor) else input
    exp = exponent.to(_C.float64) if isinstance(exponent, _C.Tensor) else exponent
    return _C.pow(base, exp)


def floor_divide(input, other):
    return _C.div(input, other, rounding_mode="floor")  # (a number for either, as torch's)


def ldexp(input, other):
    a = input if input.is_floating_point() else input.to(_C.get_default_dtype())
    return a * _C.pow(2.0, other.to(a.dtype) if isinstance(other, _C.Tensor) else other)


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1) (0, inf
    and NaN give themselves and 0)."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.to(_C.float64)
    finite = _C.isfinite(x) & (x != 0)
    safe = _C.where(finite, _C.abs(x), _C.ones_like(x))
    e = _C.floor(_C.log2(safe)) + 1
    m = safe / _C.pow(2.0, e)
    e = _C.where(m >= 1, e + 1, _C.where(m < 0.5, e - 1, e))  # log2's last-bit rounding
    m = safe / _C.pow(2.0, e)
    mant = _C.where(finite, _sign_like(m, x), x).to(input.dtype)
    expo = _C.where(finite, e, _C.zeros_like(e)).to(_C.int32)
    return return_types._make("frexp", ["mantissa", "exponent"])(mant, expo)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    e = elements if isinstance(elements, _C.Tensor) else _C.full([], elements)
    t = test_elements if isinstance(test_elements, _C.Tensor) else _C.full([], test_elements)
    hit = (e.unsqueeze(-1) == t.reshape(-1)).any(-1)
    return ~hit if invert else hit


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    n = y.shape[dim]
    if n == 0:
        return y.narrow(dim, 0, 0)
    mid = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    if x is not None:
        from .functional import diff
        dxs = diff(x, dim=dim if x.dim() > 1 else -1)
        if x.dim() == 1 and y.dim() > 1:
            shape = [1] * y.dim()
            shape[dim] = n - 1
            dxs = dxs.reshape(shape)
        mid = mid * dxs
    elif dx is not None:
        mid = mid * dx
    return mid.cumsum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    from .functional import trapezoid
    return trapezoid(y, x, dx=dx, dim=dim)


def _is_int(value):
    return not isinstance(value, bool) and hasattr(type(value), "__index__")


def _split(input, sections, dim, name, need):
    # torch's argument parser takes an int (sections) or a sequence of ints (indices)
    if isinstance(sections, (list, tuple)):
        for i, v in enumerate(sections):
            if not _is_int(v):
                raise TypeError(f"{name}(): argument 'indices' must be tuple of ints, but found "
                                f"element of type {type(v).__name__} at pos {i + 1}")
    elif not _is_int(sections):
        got = type(sections).__name__
        why = f"      didn't match because some of the arguments have invalid types: " \
              f"(Tensor, !{got}!)\n"
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                        f"{got}), but expected one of:\n * (Tensor input, int sections)\n{why}"
                        f" * (Tensor input, tuple of ints indices)\n{why}")
    if input.dim() < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {input.dim()} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {input.shape[dim]} is not divisible by the "
                           f"split_size {sections}!")
    from ._composites import tensor_split
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    return _split(input, indices_or_sections, 1 if input.dim() > 1 else 0, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _split(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _split(input, indices_or_sections, 2, "dsplit", 3)


def positive(input):
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def mvlgamma(input, p):
    if not isinstance(p, int) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    # The p terms side by side, as torch's (a huge p fails allocating them, as torch's does,
    # where a loop over p ran for hours).
    offsets = _C.arange(p, dtype=input.dtype if input.is_floating_point() else None) / -2
    out = _C.lgamma(input.unsqueeze(-1) + offsets).sum(-1)
    return out + p * (p - 1) / 4 * math.log(math.pi)


def _cholesky_solve(B, L, upper):
    """(L L^T)^-1 B by two triangular solves (U^T U for upper): only L's triangle is read."""
    lower = L.transpose(-2, -1) if upper else L
    y = _C.linalg_solve_triangular(lower, B, upper=False)
    return _C.linalg_solve_triangular(lower.transpose(-2, -1), y, upper=True)


def _factor_grad(L, common, upper):
    """The gradient of a function of A = L L^T (U^T U) through all of L, given common = the
    symmetrised gradient with respect to A."""
    return -(L.matmul(common) if upper else common.matmul(L))


# Note [Cholesky factor gradients]: torch's derivatives of cholesky_solve and cholesky_inverse
# treat the factor as a full matrix in L L^T, so the triangle the solves never read gets a
# gradient too; these Functions give torch's, where autograd through the solves would give 0.
class _CholeskySolve(Function):
    """cholesky_solve with torch's cholesky_solve_backward. See Note [Cholesky factor
    gradients]."""
    _backward_name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx, B, L, upper):
        X = _cholesky_solve(B, L, upper)
        ctx.upper, ctx.shapes = upper, (B.shape, L.shape)
        ctx.save_for_backward(L, X)
        return X

    @staticmethod
    def backward(ctx, grad):
        L, X = ctx.saved_tensors
        gB = cholesky_solve(grad, L, ctx.upper)
        common = gB.matmul(X.transpose(-2, -1))
        gL = _factor_grad(L, common + common.transpose(-2, -1), ctx.upper)
        b_shape, l_shape = ctx.shapes  # batch dims were broadcast
        return gB.sum_to_size(b_shape), gL.sum_to_size(l_shape), None


class _CholeskyInverse(Function):
    """cholesky_inverse with torch's cholesky_inverse_backward. See Note [Cholesky factor
    gradients]."""
    _backward_name = "CholeskyInverseBackward0"

    @staticmethod
    def forward(ctx, L, upper):
        inverse = _cholesky_solve(_C.eye(L.shape[-1], dtype=L.dtype).expand(L.shape), L, upper)
        ctx.upper = upper
        ctx.save_for_backward(L, inverse)
        return inverse

    @staticmethod
    def backward(ctx, grad):
        L, inverse = ctx.saved_tensors
        common = inverse.matmul(grad + grad.transpose(-2, -1)).matmul(inverse)
        return _factor_grad(L, common, ctx.upper), None


def cholesky_solve(B, L, upper=False):
    return _CholeskySolve.apply(B, L, upper)


def cholesky_inverse(L, upper=False):
    return _CholeskyInverse.apply(L, upper)


def rsub(input, other, alpha=1):
    if not isinstance(input, _C.Tensor):  # torch's argument parser: input is a tensor
        got = ", ".join("Tensor" if isinstance(a, _C.Tensor) else type(a).__name__
                        for a in (input, other))
        raise TypeError(f"rsub() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (Tensor input, Tensor other, *, Number alpha)"
                        "\n * (Tensor input, Number other, Number alpha)\n")
    return other - input * alpha if alpha != 1 else other - input


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    t = _C.full([], s, dtype=dtype or _C.get_default_dtype())
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges) over `bins` equal bins (an int) or given edges (a 1-D tensor): torch's
    histogramdd of the values as 1-D points, errors included."""
    from ._api_math import _histogram
    hist, edges = _histogram(input.reshape(-1, 1), [bins], range,
                             None if weight is None else weight.reshape(-1), density)
    return return_types._make("histogram", ["hist", "bin_edges"])(hist, edges[0])


def _window(n, periodic, dtype, fn):
    dtype = dtype or _C.get_default_dtype()
    if n == 0:
        return _C.empty([0], dtype=dtype)
    if n == 1:
        return _C.ones([1], dtype=dtype)
    m = n + 1 if periodic else n
    k = _C.arange(m, dtype=_C.float64)
    w = fn(k, m - 1)
    return (w[:n] if periodic else w).to(dtype)


def hann_window(window_length, periodic=True, *, dtype=None, **kw):
    return _window(window_length, periodic, dtype,
                   lambda k, d: 0.5 - 0.5 * _C.cos(2 * math.pi * k / d))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, **kw):
    return _window(window_length, periodic, dtype,
                   lambda k, d: alpha - beta * _C.cos(2 * math.pi * k / d))


def blackman_window(window_length, periodic=True, *, dtype=None, **kw):
    return _window(window_length, periodic, dtype,
                   lambda k, d: 0.42 - 0.5 * _C.cos(2 * math.pi * k / d) +
                   0.08 * _C.cos(4 * math.pi * k / d))


def bartlett_window(window_length, periodic=True, *, dtype=None, **kw):
    return _window(window_length, periodic, dtype, lambda k, d: 1 - _C.abs(2 * k / d - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, **kw):
    from . import special

    def f(k, d):
        r = 2 * k / d - 1
        return special.i0(beta * _C.sqrt((1 - r * r).clamp(min=0))) / special.i0(
            _C.full([], beta, dtype=_C.float64))
    return _window(window_length, periodic, dtype, f)


def conj(input):
    return input  # real tensors are their own conjugates


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def is_conj(input):
    return False


def is_neg(input):
    return False


def square_(input):
    return input.mul_(input)


_METHODS = ("acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh",
            "float_power", "floor_divide", "ldexp", "frexp", "isin", "hsplit", "vsplit",
            "dsplit", "positive", "mvlgamma", "cholesky_solve", "cholesky_inverse", "histogram",
            "conj", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "square_")


def install(Tensor):
    for name in _METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    for name in ("acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh"):
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", lambda self, _f=globals()[name]: self.copy_(_f(self)))
