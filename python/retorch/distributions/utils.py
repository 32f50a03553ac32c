"""Helpers shared by retorch.distributions, as torch.distributions.utils: broadcast_all,
probs/logits conversions, lazy_property and the shape arithmetic the families use."""
import functools
from numbers import Number

from .. import _C
from .._size import Size

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "lazy_property", "logits_to_probs", "probs_to_logits",
           "clamp_probs", "euler_constant"]


def _finfo(dtype):
    from .._dtypes import finfo
    return finfo(dtype)


def _diag_embed(x):
    from .. import diag_embed  # a composite defined after this package loads
    return diag_embed(x)


def _size(sample_shape):
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(sample_shape)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _fmt_size(shape):
    return repr(Size(shape))  # torch.Size([...]), as torch's messages


def _broadcast_shapes(*shapes):
    from ..functional import broadcast_shapes
    return tuple(broadcast_shapes(*[tuple(s) for s in shapes]))


def broadcast_all(*values):
    """Broadcasts numbers and tensors together; numbers become tensors of the first tensor's
    dtype (or the default dtype)."""
    from ..functional import broadcast_tensors
    if not all(isinstance(v, (_C.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    ref = next((v for v in values if isinstance(v, _C.Tensor)), None)
    dtype = ref.dtype if ref is not None else _C.get_default_dtype()
    device = ref.device if ref is not None else None
    tensors = [v if isinstance(v, _C.Tensor) else _C.full([], float(v), dtype=dtype, device=device)
               for v in values]
    return tuple(broadcast_tensors(*tensors))


def _standard_normal(shape, dtype, device=None):
    return _C.randn(list(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sums out the rightmost `dim` dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def clamp_probs(probs):
    eps = _finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return _C.sigmoid(logits)
    return _C.softmax(logits, -1)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return _C.log(ps_clamped) - _C.log1p(-ps_clamped)
    return _C.log(ps_clamped)


class lazy_property:  # noqa: N801  (torch's name)
    """A property computed once (with grad enabled) and then stored on the instance; the
    argument checks skip lazy parameters that were never set (probs vs logits)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        from ..autograd import enable_grad
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _batch_mv(bmat, bvec):
    return bmat.matmul(bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x for a batch of lower-triangular L and vectors x (broadcast)."""
    shape = _broadcast_shapes(tuple(bx.shape[:-1]), tuple(bL.shape[:-2]))
    n = bx.shape[-1]
    L = bL.expand(shape + (n, n))
    x = bx.expand(shape + (n,)).unsqueeze(-1)
    z = _C.linalg_solve_triangular(L, x, upper=False).squeeze(-1)
    return (z * z).sum(-1)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = _C.arange(n)
    mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., mask]


def vec_to_tril_matrix(vec, diag=0):
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > _finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    arange = _C.arange(n)
    mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., mask] = vec
    return mat
