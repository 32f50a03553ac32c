"""LAPACK's packed QR in torch's shape, composed in Python: geqrf (Householder vectors and tau, as
LAPACK returns them), ormqr (multiplying by that Q without forming it), and the CPU running-stat
update batch_norm_update_stats."""
import warnings

from . import _C
from . import return_types
from .autograd import Function, no_grad

__all__ = ["geqrf", "ormqr", "batch_norm_update_stats"]


def _type_name(dtype):
    from ._api_extras import _TYPE_NAMES
    return _TYPE_NAMES[dtype]


def _tensor_arg(fn, name, pos, value):
    if not isinstance(value, _C.Tensor):
        where = f" (position {pos})" if pos else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be Tensor, not "
                        f"{type(value).__name__}")


def _bool_arg(fn, name, pos, value):
    if not isinstance(value, bool):
        where = f" (position {pos})" if pos else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be bool, not "
                        f"{type(value).__name__}")


def _records(*tensors):
    return _C.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _check_lapack_dtype(name, input):
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"\"{name}_{input.device.type}\" not implemented for "
                           f"'{_type_name(input.dtype)}'")


def _resize_out(out, shape):
    """out resized to shape, with torch's deprecation warning when it held elements."""
    if tuple(out.shape) != tuple(shape):
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out.shape)}, which does not match the required output shape "
                          f"{list(shape)}. This behavior is deprecated, and in a future PyTorch "
                          "release outputs will not be resized unless they have zero elements. "
                          "You can explicitly reuse an out tensor t by resizing it, inplace, to "
                          "zero elements with t.resize_(0).", stacklevel=3)
        out.resize_(list(shape))
    return out


# ---------------------------------------------------------------- geqrf

def _geqrf_values(input):
    """(a, tau) of LAPACK's unblocked geqr2: for each column i < min(m, n), the reflector
    H_i = I - tau_i v_i v_i^T (v_i = [1; a[i+1:, i]]) that maps a[i:, i] to (beta, 0, ..., 0),
    applied to the columns right of it. One column at a time; every op is batched."""
    a = input.clone()
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    tau = _C.zeros(batch + (k,), dtype=a.dtype, device=a.device)
    for i in range(k):
        alpha = a[..., i, i].clone()
        below = a[..., i + 1:, i]
        xnorm = _C.linalg_vector_norm(below, 2, [-1], False)
        nrm = _C.linalg_vector_norm(a[..., i:, i], 2, [-1], False)
        # LAPACK's larfg: beta = -sign(alpha) * ||(alpha, x)|| (sign(0) = +), so alpha - beta
        # never cancels; a column already zero below the diagonal gets tau = 0 (H = I).
        beta = _C.where(alpha >= 0, -nrm, nrm)
        done = xnorm == 0
        t = _C.where(done, _C.zeros_like(alpha), (beta - alpha) / beta)
        scale = _C.where(done, _C.ones_like(alpha), alpha - beta)
        v_tail = below / scale.unsqueeze(-1)
        a[..., i + 1:, i] = v_tail
        a[..., i, i] = _C.where(done, alpha, beta)
        tau[..., i] = t
        if i + 1 < n:
            ones = _C.ones(batch + (1,), dtype=a.dtype, device=a.device)
            v = _C.cat([ones, v_tail], -1).unsqueeze(-1)  # (..., m - i, 1)
            rest = a[..., i:, i + 1:]
            w = v.transpose(-2, -1).matmul(rest)
            a[..., i:, i + 1:] = rest - (v * t.unsqueeze(-1).unsqueeze(-1)).matmul(w)
    return a, tau


class _Geqrf(Function):
    """geqrf's values; torch 1.13 has no derivative for it, so backward raises as torch's."""
    _backward_name = "GeqrfBackward0"

    @staticmethod
    def forward(ctx, input):
        return _geqrf_values(input)

    @staticmethod
    def backward(ctx, grad_a, grad_tau):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def _geqrf_out_arg(out):
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"geqrf(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != 2:
        raise TypeError(f"expected tuple of 2 elements but got {len(out)}")
    for i, t in enumerate(out):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(t).__name__}")


def geqrf(input, *, out=None):
    """torch.geqrf: LAPACK geqrf's QR of (..., m, n) input as a named tuple (a, tau): R on and
    above the diagonal of a, the Householder vectors (unit leading entry implied) below it, and
    their scales in tau (..., min(m, n)). linalg.householder_product(a, tau) rebuilds Q."""
    _tensor_arg("geqrf", "input", 1, input)
    if out is not None:
        _geqrf_out_arg(out)
        if _records(input):
            raise RuntimeError("geqrf(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if out is not None:
        from . import _dtypes
        for name, t in zip(("a", "tau"), out):
            if not _dtypes.can_cast(input.dtype, t.dtype):
                raise RuntimeError(f"torch.geqrf: Expected {name} to be safely castable from "
                                   f"{_type_name(input.dtype)} dtype, but got {name} with dtype "
                                   f"{_type_name(t.dtype)}")
    _check_lapack_dtype("geqrf", input)
    if out is None:
        a, tau = _Geqrf.apply(input) if _records(input) else _geqrf_values(input)
        return return_types._make("geqrf", ["a", "tau"])(a, tau)
    a, tau = _geqrf_values(input)
    for o, value in zip(out, (a, tau)):
        _resize_out(o, value.shape).copy_(value)
    return return_types._make("geqrf_out", ["a", "tau"])(out[0], out[1])


def _geqrf_method(self):
    return geqrf(self)


# ---------------------------------------------------------------- ormqr

def _ormqr_values(input, tau, other, left, transpose):
    """op(Q) @ other (left) or other @ op(Q), Q = H_1 ... H_k, applying one reflector at a time
    in the order the product needs (reflectors are symmetric, so Q^T = H_k ... H_1)."""
    mn, k = input.shape[-2], tau.shape[-1]
    eye = _C.eye(mn, k, dtype=input.dtype, device=input.device)
    v_all = _C.tril(input[..., :, :k], -1) + eye  # unit lower-trapezoidal reflector vectors
    c = other.clone()
    # H_k is applied first for Q @ C (left) and C @ Q^T (right); H_1 first otherwise.
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v = v_all[..., :, i:i + 1]
        vt = v * tau[..., i:i + 1].unsqueeze(-1)
        if left:
            c = c - vt.matmul(v.transpose(-2, -1).matmul(c))
        else:
            c = c - c.matmul(v).matmul(vt.transpose(-2, -1))
    return c


class _Ormqr(Function):
    """ormqr's values; torch 1.13 has no derivative for it, so backward raises as torch's."""
    _backward_name = "OrmqrBackward0"

    @staticmethod
    def forward(ctx, input, tau, other, left, transpose):
        return _ormqr_values(input, tau, other, left, transpose)

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError("the derivative for 'ormqr' is not implemented.")


def _ormqr_checks(input, tau, other, left):
    """torch's shape and dtype checks for ormqr, in its order and with its messages."""
    name = "torch.ormqr"
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    if tau.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    side = -2 if left else -1
    if other.shape[side] < tau.shape[-1]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be greater than or equal to "
                           "tau.shape[-1]")
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError(f"{name}: tau.shape[-1] must be less than or equal to "
                           "input.shape[-1]")
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{input.dim()}")
    if other.dim() != input.dim():
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {other.dim()} and input.ndim is "
                           f"equal to {input.dim()}")
    batch = tuple(input.shape[:-2])
    for what, t in (("tau", tau), ("other", other)):
        shape = tuple(t.shape[:-1] if t is tau else t.shape[:-2])
        if shape != batch:
            raise RuntimeError(f"{name}: Expected batch dimensions of {what} to be equal to "
                               f"input.shape[:-2], but got {list(shape)}")
    for what, t in (("tau", tau), ("other", other)):
        if t.dtype != input.dtype:  # torch's message has no space after "dtype" here
            raise RuntimeError(f"{name}: Expected input and {what} to have the same dtype, but "
                               f"input has dtype{_type_name(input.dtype)} and {what} has dtype "
                               f"{_type_name(t.dtype)}")
    for t in (tau, other):
        if t.device != input.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {input.device} and {t.device}!")


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """torch.ormqr: op(Q) @ input3 (left) or input3 @ op(Q) (right), op transposing when asked,
    where Q is the product of the Householder reflectors (input, input2) that geqrf returns.
    torch names tau and other input2 and input3 in its binding, so they are named so here."""
    _tensor_arg("ormqr", "input", 1, input)
    _tensor_arg("ormqr", "input2", 2, input2)
    _tensor_arg("ormqr", "input3", 3, input3)
    _bool_arg("ormqr", "left", 4, left)
    _bool_arg("ormqr", "transpose", 5, transpose)
    return _ormqr(input, input2, input3, left, transpose, out)


def _ormqr(input, tau, other, left, transpose, out):
    if out is not None:
        _tensor_arg("ormqr", "out", None, out)
        if _records(input, tau, other):
            raise RuntimeError("ormqr(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
    _ormqr_checks(input, tau, other, left)
    if out is not None and out.dtype != input.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and result to have the same dtype, but "
                           f"input has dtype{_type_name(input.dtype)} and result has dtype "
                           f"{_type_name(out.dtype)}")
    _check_lapack_dtype("ormqr", input)
    if out is None:
        if _records(input, tau, other):
            return _Ormqr.apply(input, tau, other, left, transpose)
        return _ormqr_values(input, tau, other, left, transpose)
    value = _ormqr_values(input, tau, other, left, transpose)
    return _resize_out(out, value.shape).copy_(value)


def _ormqr_method(self, input2, input3, left=True, transpose=False):
    _tensor_arg("ormqr", "input2", 1, input2)
    _tensor_arg("ormqr", "input3", 2, input3)
    _bool_arg("ormqr", "left", 3, left)
    _bool_arg("ormqr", "transpose", 4, transpose)
    return _ormqr(self, input2, input3, left, transpose, None)


# ---------------------------------------------------------------- batch_norm_update_stats

def _momentum_arg(momentum):
    if isinstance(momentum, _C.Tensor) and momentum.numel() == 1 and not momentum.is_complex():
        return float(momentum)
    if isinstance(momentum, (bool, int, float)):
        return float(momentum)
    raise TypeError(f"batch_norm_update_stats(): argument 'momentum' (position 4) must be "
                    f"float, not {type(momentum).__name__}")


def _stats_dtype_checks(input, stats):
    """torch's CPU rule: a BFloat16 input may keep Float running stats (the "mixed" case, told
    by the first one given); otherwise every running stat has the input's dtype.
    Returns the dtype of the results."""
    given = [t for t in stats if t is not None]
    mixed = bool(given) and given[0].dtype != input.dtype
    if mixed:
        if any(t.dtype != _C.float32 for t in given):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if input.dtype != _C.bfloat16:
            raise RuntimeError("mixed dtype (CPU): expect input to have scalar type of BFloat16")
    if input.dtype not in (_C.float32, _C.float64, _C.bfloat16):
        raise RuntimeError(f"\"batch_norm_update_stats_{input.device.type}\" not implemented for "
                           f"'{_type_name(input.dtype)}'")
    for t in given:
        if not mixed and t.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found "
                               f"{_type_name(t.dtype)}")
    return _C.float32 if mixed else input.dtype


class _BatchNormUpdateStats(Function):
    """The returned statistics; torch has no derivative for them and raises in backward."""
    _backward_name = "NotImplemented"

    @staticmethod
    def forward(ctx, input, running_mean, running_var, momentum, out_dtype):
        return _update_stats(input, running_mean, running_var, momentum, out_dtype)

    @staticmethod
    def backward(ctx, grad_mean, grad_var):
        raise RuntimeError("derivative for aten::batch_norm_update_stats is not implemented")


def _update_stats(input, running_mean, running_var, momentum, out_dtype):
    # BFloat16 inputs are reduced in float, as torch accumulates them.
    x = input.float() if input.dtype == _C.bfloat16 else input
    dims = [0] + list(range(2, input.dim()))
    count = input.numel() // input.shape[1] if input.shape[1] else 0
    mean = x.mean(dims)
    squares = ((x - mean.reshape([1, -1] + [1] * (input.dim() - 2))) ** 2).sum(dims)
    var = squares / count
    with no_grad():
        if running_mean is not None:
            running_mean.copy_(mean * momentum + running_mean * (1 - momentum))
        if running_var is not None:
            # The running variance is the unbiased one (count - 1), as in training batch_norm.
            unbiased = squares / (count - 1)
            running_var.copy_(unbiased * momentum + running_var * (1 - momentum))
    return mean.to(out_dtype), var.to(out_dtype)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """torch.batch_norm_update_stats: (mean, biased var) of input per channel (dim 1, reduced
    over all the others), and, for those given, running_mean and running_var moved in place
    toward the batch's mean and unbiased variance by momentum."""
    _tensor_arg("batch_norm_update_stats", "input", 1, input)
    for pos, (name, t) in enumerate((("running_mean", running_mean),
                                     ("running_var", running_var)), 2):
        if t is not None:
            _tensor_arg("batch_norm_update_stats", name, pos, t)
    momentum = _momentum_arg(momentum)
    if input.dim() == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    if input.dim() == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got "
                         "1)")
    out_dtype = _stats_dtype_checks(input, (running_mean, running_var))
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None:
            continue
        if t.dim() != 1:
            raise RuntimeError(f"TensorAccessor expected 1 dims but tensor has {t.dim()}")
        # torch reads past a short running stat; say so instead.
        if t.shape[0] != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.shape[0]}")
    if _records(input, running_mean, running_var):
        return _BatchNormUpdateStats.apply(input, running_mean, running_var, momentum,
                                           out_dtype)
    return _update_stats(input, running_mean, running_var, momentum, out_dtype)


# ---------------------------------------------------------------- install

def install(Tensor):
    # torch has Tensor.geqrf and Tensor.ormqr, but no batch_norm_update_stats method.
    for name, fn in (("geqrf", _geqrf_method), ("ormqr", _ormqr_method)):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
