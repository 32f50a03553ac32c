"""More of torch's functions and Tensor methods composed of retorch's operators in Python (the
first set is in functional.py): views (unfold), reductions and products (aminmax, inner, vdot,
addmv, addr, cov, corrcoef, logdet), scatter forms, element tests (isreal,
gcd/lcm), in-place samplers (exponential_, cauchy_, log_normal_, geometric_, bernoulli_), and
torch.linalg's matrix_power, multi_dot, pinv, matrix_rank, cond, vecdot, vander, the *_ex
forms, lstsq (its four CPU drivers), tensorinv, tensorsolve, diagonal and matmul; torch.lu."""
import math
import warnings

from . import _C
from . import return_types
from .autograd.function import Function

__all__ = ["lu", "aminmax", "argwhere", "msort", "inner", "vdot", "addmv", "addr", "cov", "corrcoef",
           "diagflat", "isreal", "logdet", "matrix_power", "pinverse", "tensor_split",
           "narrow_copy", "gcd", "lcm", "renorm", "select_scatter",
           "slice_scatter", "diagonal_scatter"]


def unfold(self, dimension, size, step):
    """Tensor.unfold: every slice of `size` elements along `dimension`, `step` apart, as a new
    last dimension (a view)."""
    d = dimension % max(self.dim(), 1)
    n = self.shape[d] if self.dim() else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if self.dim() == 0:
        return self.reshape(1)
    sizes, strides = list(self.shape), list(self.stride())
    sizes[d] = (n - size) // step + 1
    strides[d] = strides[d] * step
    return self.as_strided(sizes + [size], strides + [self.stride(d)], self.storage_offset())


def aminmax(input, *, dim=None, keepdim=False, out=None):
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        lo, hi = input.min(), input.max()
        if keepdim:
            shape = [1] * input.dim()
            lo, hi = lo.reshape(shape), hi.reshape(shape)
    else:
        from ._api_legacy import _wrap_dim
        d = _wrap_dim(dim, input.dim())
        if input.dim() and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        if input.dim() > 64:  # torch's reduction dim mask is 64 bits
            raise RuntimeError("only tensors with up to 64 dims are supported")
        lo, hi = input.amin(dim, keepdim), input.amax(dim, keepdim)
        if keepdim and input.dim() == 0:  # torch 1.13 resizes a scalar's kept dim to (1,)
            lo, hi = lo.reshape(1), hi.reshape(1)
    result = return_types._make("aminmax", ["min", "max"])(lo, hi)
    if out is None:
        return result
    from ._api_extras import _CPP_NAMES
    from ._arg_errors import write_out
    for o in out if isinstance(out, (tuple, list)) else ():
        if isinstance(o, _C.Tensor) and o.dtype != input.dtype:  # no casting, as torch's
            raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES[input.dtype]}, "
                               f"but got {_CPP_NAMES[o.dtype]} instead")
    return write_out(result, out, "aminmax")


def argwhere(input):
    return input.nonzero()


def msort(input):
    return input.sort(0).values


def inner(input, other):
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    return _C.tensordot(input, other, [input.dim() - 1], [other.dim() - 1])


def vdot(input, other):
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D "
                           f"tensors")
    return _C.dot(input, other)


def _truncated(scalar):
    """A float beta or alpha as torch's integer kernels read it: truncated toward zero."""
    if not math.isfinite(scalar):
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return int(scalar)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    if not vec.is_floating_point():  # the result has vec's dtype
        beta, alpha = _truncated(beta), _truncated(alpha)
    out = _C.matmul(mat, vec) * alpha
    return out if beta == 0 else input * beta + out  # beta 0: input is ignored, NaN and all


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    from ._dtypes import promote_types
    dtype = promote_types(promote_types(input.dtype, vec1.dtype), vec2.dtype)
    for name, scalar in (("beta", beta), ("alpha", alpha)):
        if isinstance(scalar, bool) and dtype != _C.bool:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if isinstance(scalar, float) and not dtype.is_floating_point:
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               "floating point number.")
    if dtype == _C.bool:  # torch's bool kernel: (beta and input) or (alpha and vec1 and vec2)
        outer = _C.outer(vec1, vec2) & bool(alpha)
        return outer | input if beta else outer
    outer = _C.outer(vec1, vec2)
    if beta == 0:
        return (outer * alpha).to(dtype)
    return input * beta + outer * alpha


def _at_most_2d(input, name):
    if input.dim() > 2:
        raise RuntimeError(f"{name}(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")


def _cov_weight_checks(x, fweights, aweights):
    """torch's checks of cov's input and weights, in its order."""
    from ._api_extras import _TYPE_NAMES
    if x.dtype == _C.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    n = x.shape[1]
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        if w.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {w.dim()} dimensions")
        if (name == "fweights") == (w.is_floating_point() or w.dtype == _C.bool):
            kind = "integral" if name == "fweights" else "floating point"
            raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} "
                               f"with {_TYPE_NAMES[w.dtype]} dtype")
        if w.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {w.numel()} != {n}")
        if n and bool(w.min() < 0):
            raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    _at_most_2d(input, "cov")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    _cov_weight_checks(x, fweights, aweights)
    dtype = x.dtype  # torch's products x * aweights promote, fweights are integers
    if aweights is not None:
        from ._dtypes import promote_types
        dtype = promote_types(dtype, aweights.dtype)
    x = x.to(dtype if dtype.is_floating_point else _C.get_default_dtype())
    n = x.shape[1]
    # The weights and their sums keep the weights' dtype, as in torch (Correlation.cpp): float32
    # aweights give a float32 weight sum and normalization even for float64 input.
    w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1, keepdim=True)
        norm = n - correction
    else:
        wsum = w.sum()
        if not bool(wsum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (x * w).sum(1, keepdim=True) / wsum
        if correction != 0 and aweights is not None:
            norm = wsum - correction * (w * aweights).sum() / wsum
        else:
            norm = wsum - correction
    xm = x - avg
    xw = xm if w is None else xm * w
    c = xw.matmul(xm.transpose(0, 1))
    if bool(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0")
    c = c / (norm.clamp(min=0) if isinstance(norm, _C.Tensor) else max(norm, 0))
    return c.squeeze()  # one variable's 1x1 matrix is a scalar, as torch's


def corrcoef(input):
    _at_most_2d(input, "corrcoef")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = d.sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c.clamp(-1, 1)


def diagflat(input, offset=0):
    return _C.diag(input.reshape(-1), offset)


def isreal(input):
    return _C.ones_like(input, dtype=_C.bool)


def logdet(input):
    sign, logabs = _C.linalg_slogdet(input)  # a singular matrix has logabs -inf already
    return _C.where(sign < 0, _C.full_like(logabs, math.nan), logabs)


def matrix_power(input, n):
    if input.dim() < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {input.shape[-2]} by {input.shape[-1]} matrices")
    if n == 0:
        eye = _C.eye(input.shape[-1], dtype=input.dtype).expand(input.shape)
        if input.requires_grad:  # as torch's, in the graph with a zero gradient
            return _C.where(_C.ones_like(eye, dtype=_C.bool), eye, input)
        return eye.clone()
    base = input if n > 0 else _C.linalg_inv(input)
    k, result = abs(n), None
    while k:  # square and multiply
        if k & 1:
            result = base if result is None else result.matmul(base)
        k >>= 1
        if k:
            base = base.matmul(base)
    return result


def pinverse(input, rcond=1e-15):
    return pinv(input, rtol=rcond)


def _tolerances(A, atol, rtol):
    """torch's (atol, rtol) for singular values, as float64 tensors that broadcast against A's
    batch: rtol defaults to eps * max(m, n), or to 0 where atol is given and positive."""
    def as_tensor(v):
        if isinstance(v, _C.Tensor):
            return v.to(_C.float64)
        return _C.full([], v, dtype=_C.float64, device=A.device)
    atol_t = as_tensor(0.0 if atol is None else atol)
    if rtol is not None:
        return atol_t, as_tensor(rtol)
    from ._dtypes import finfo
    default = as_tensor(finfo(A.dtype).eps * max(A.shape[-2:]))
    if atol is None:
        return atol_t, default
    return atol_t, _C.where(atol_t > 0, _C.zeros_like(default), default)


def _kept(s, smax, A, atol, rtol):
    """Which singular values s (or |eigenvalues|) of A count as nonzero: those above
    max(atol, rtol * smax), compared in float64 as torch does."""
    atol_t, rtol_t = _tolerances(A, atol, rtol)
    return s > _C.maximum(atol_t.unsqueeze(-1), rtol_t.unsqueeze(-1) * smax)


def _pinv_values(input, atol, rtol, hermitian):
    if input.numel() == 0:
        shape = list(input.shape[:-2]) + [input.shape[-1], input.shape[-2]]
        return _C.zeros(shape, dtype=input.dtype, device=input.device)
    if hermitian:  # eigh reads the lower triangle only, as torch's does
        s, u = _C.linalg_eigh(input)
        keep = _kept(s.abs(), s.abs().amax(-1, keepdim=True), input, atol, rtol)
        vh = u.transpose(-2, -1)
    else:
        u, s, vh = _C.linalg_svd(input, False)
        keep = _kept(s, s.narrow(-1, 0, 1), input, atol, rtol)  # s is descending
    sinv = _C.where(keep, 1 / _C.where(keep, s, _C.ones_like(s)), _C.zeros_like(s))
    return (vh.transpose(-2, -1) * sinv.unsqueeze(-2)).matmul(u.transpose(-2, -1))


class _Pinv(Function):
    """pinv with torch's pinv_backward: the derivative of P = pinv(A) in terms of A and P alone
    (the SVD's own is NaN at repeated singular values, as an orthogonal or singular A has)."""
    _backward_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, input, atol, rtol, hermitian):
        out = _pinv_values(input, atol, rtol, hermitian)
        ctx.save_for_backward(input, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        A, P = ctx.saved_tensors
        Ph, gh = P.transpose(-2, -1), grad.transpose(-2, -1)
        if A.shape[-2] <= A.shape[-1]:  # the products stay m x m
            K = gh.matmul(P)
            KPh = K.matmul(Ph)
            gA = (-P.matmul(K).transpose(-2, -1) + KPh - A.matmul(P).matmul(KPh) +
                  Ph.matmul(P).matmul(gh - K.matmul(A)))
        else:
            K = P.matmul(gh)
            PhK = Ph.matmul(K)
            gA = (-K.matmul(P).transpose(-2, -1) + (gh - A.matmul(K)).matmul(P).matmul(Ph) +
                  PhK - PhK.matmul(P).matmul(A))
        return gA, None, None, None


def pinv(input, *, atol=None, rtol=None, hermitian=False):
    return _Pinv.apply(input, atol, rtol, hermitian)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    if A.numel() == 0:
        return _C.zeros(list(A.shape[:-2]), dtype=_C.int64, device=A.device)
    s = _C.linalg_eigvalsh(A).abs() if hermitian else _C.linalg_svdvals(A)
    return _kept(s, s.amax(-1, keepdim=True), A, atol, rtol).sum(-1)


def cond(A, p=None):
    if p is None or p == 2:
        s = _C.linalg_svdvals(A)
        return s.amax(-1) / s.amin(-1)
    if p == -2:
        s = _C.linalg_svdvals(A)
        return s.amin(-1) / s.amax(-1)
    from .linalg import matrix_norm, inv
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def multi_dot(tensors):
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_1d, last_1d = ts[0].dim() == 1, ts[-1].dim() == 1
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(1)
    out = ts[0]
    for t in ts[1:]:
        out = out.matmul(t)
    if first_1d:
        out = out.squeeze(0)
    if last_1d:
        out = out.squeeze(-1)
    return out


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


def vander(x, N=None):
    if x.dtype in (_C.bool, _C.float16, _C.bfloat16):
        from ._api_extras import _type_name
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, "
                           f"but got {_type_name(x.dtype)}")
    x = x.reshape(1) if x.dim() == 0 else x
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    # Running products, as torch's: integer powers come out int64, and x = 0 has finite grads.
    shape = list(x.shape)
    powers = _C.cumprod(x.unsqueeze(-1).expand(shape + [n - 1]), -1)
    return _C.cat([_C.ones(shape + [1], dtype=powers.dtype, device=x.device), powers], -1)


def _info_of(error):
    """The 1-based position a LAPACK-style failure names ("diagonal element 2", "order 3")."""
    import re
    found = re.search(r"(?:element|order) (\d+)", str(error))
    return int(found.group(1)) if found else 1


def _ex(fn, A, name, fields, *args):
    """torch.linalg.*_ex: (result, info) where info is 0 for each matrix that factored and the
    failing position for one that did not (its result is NaN), instead of an error."""
    batch = tuple(A.shape[:-2])
    info = _C.zeros(list(batch), dtype=_C.int32)
    try:
        out = fn(A, *args)
    except RuntimeError:
        mats = A.reshape((-1,) + tuple(A.shape[-2:]))
        results, infos = [], []
        for i in range(mats.shape[0]):
            try:
                results.append(fn(mats[i], *args))
                infos.append(0)
            except RuntimeError as e:
                results.append(_C.full_like(mats[i], math.nan))
                infos.append(_info_of(e))
        out = _C.stack(results).reshape(tuple(A.shape))
        info = _int32(infos).reshape(list(batch))
    return return_types._make(name, fields)(out, info)


def _int32(values):
    from . import tensor
    return tensor(values, dtype=_C.int32)


def inv_ex(A, *, check_errors=False):
    if check_errors:
        return return_types._make("linalg_inv_ex", ["inverse", "info"])(
            _C.linalg_inv(A), _C.zeros(list(A.shape[:-2]), dtype=_C.int32))
    return _ex(_C.linalg_inv, A, "linalg_inv_ex", ["inverse", "info"])


def cholesky_ex(A, *, upper=False, check_errors=False):
    fn = (lambda m: _C.linalg_cholesky(m).transpose(-2, -1)) if upper else _C.linalg_cholesky
    if check_errors:
        return return_types._make("linalg_cholesky_ex", ["L", "info"])(
            fn(A), _C.zeros(list(A.shape[:-2]), dtype=_C.int32))
    return _ex(fn, A, "linalg_cholesky_ex", ["L", "info"])


def solve_ex(A, B, *, left=True, check_errors=False):
    def fn(m):
        return _C.linalg_solve(m, B) if left else _C.linalg_solve(m.transpose(-2, -1),
                                                                  B.transpose(-2, -1)
                                                                  ).transpose(-2, -1)
    if check_errors or A.dim() > 2:
        return return_types._make("linalg_solve_ex", ["result", "info"])(
            fn(A), _C.zeros(list(A.shape[:-2]), dtype=_C.int32))
    try:
        return return_types._make("linalg_solve_ex", ["result", "info"])(
            fn(A), _C.zeros([], dtype=_C.int32))
    except RuntimeError as e:
        return return_types._make("linalg_solve_ex", ["result", "info"])(
            _C.full_like(B, math.nan), _C.full([], _info_of(e), dtype=_C.int32))


def _lstsq_checks(A, B, driver):
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.dim() < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype != B.dtype:
        from ._api_extras import _type_name
        raise RuntimeError("torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_type_name(A.dtype)} and other's "
                           f"dtype {_type_name(B.dtype)}")
    if not 0 <= A.dim() - B.dim() <= 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    vec = B.dim() == A.dim() - 1
    if A.shape[-2] != B.shape[-1 if vec else -2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size("
                           f"{-1 if vec else -2})")
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    if A.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")


def lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq on CPU with each driver's outputs as LAPACK fills them: the
    least-squares, minimum-norm solution (gels assumes full rank and cuts off no singular
    value; the others cut off those at or below rcond * the largest), the rank (all but gels),
    the singular values (gelsd, gelss) and, for tall A, each column's squared residual norm
    (all but gelsy; gelsd and gelss only when every matrix has full column rank). Only the
    solution has gradients, as in torch."""
    _lstsq_checks(A, B, driver)
    driver = driver or "gelsy"
    vec = B.dim() == A.dim() - 1
    b = B.unsqueeze(-1) if vec else B
    m, n = A.shape[-2:]
    if rcond is None:
        from ._dtypes import finfo
        rcond = finfo(A.dtype).eps * max(m, n)
    x = pinv(A, rtol=0.0 if driver == "gels" else rcond).matmul(b)
    A, b = A.detach(), b.detach()
    empty = _C.empty([0], dtype=A.dtype, device=A.device)
    rank = (_C.empty([0], dtype=_C.int64, device=A.device) if driver == "gels" else
            matrix_rank(A, rtol=rcond))
    residuals = empty
    if m > n and driver != "gelsy" and (driver == "gels" or (rank == n).all().item()):
        residuals = _residuals(A, b, driver)
    singular_values = _C.linalg_svdvals(A) if driver in ("gelsd", "gelss") else empty
    return return_types._make("linalg_lstsq", ["solution", "residuals", "rank",
                                               "singular_values"])(
        x.squeeze(-1) if vec else x, residuals, rank, singular_values)


def _residuals(A, b, driver):
    """The squared norms of the rows of Q^T b past A's n columns (A = QR), as LAPACK leaves
    them in b; gels returns early, b cleared, when A has no columns."""
    n = A.shape[-1]
    if n == 0:
        return (b * b).sum(-2) * (0 if driver == "gels" else 1)
    q = _C.linalg_qr(A, "complete")[0]
    rest = q.transpose(-2, -1).matmul(b).narrow(-2, n, A.shape[-2] - n)
    return (rest * rest).sum(-2)


def tensorinv(A, ind=2):
    out_shape, in_shape = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if ind <= 0 or rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           "prod(self.shape[:ind]), but got "
                           f"{cols} != {rows}")
    return _C.linalg_inv(A.reshape(rows, cols)).reshape(in_shape + out_shape)


def tensorsolve(A, B, dims=None):
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.movedim(dims, list(range(A.dim() - len(dims), A.dim())))
    x_shape = tuple(A.shape[B.dim():])
    x = _C.linalg_solve(A.reshape(B.numel(), -1), B.reshape(-1))
    return x.reshape(x_shape)


def lu(A, pivot=True, get_infos=False):
    """torch.lu: the packed factors and pivots of linalg.lu_factor_ex, with the infos when
    get_infos (a singular U does not raise either way, as in torch 1.13)."""
    LU, pivots, infos = _C.linalg_lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


def tensor_split(input, indices_or_sections, dim=0):
    size = input.shape[dim]
    if isinstance(indices_or_sections, _C.Tensor):
        t = indices_or_sections
        if t.dtype != _C.int64:
            from ._api_extras import _type_name
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {_type_name(t.dtype)}")
        if t.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {t.dim()} dims")
        indices_or_sections = t.item() if t.dim() == 0 else t.tolist()  # 0-d: a count
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        big, rest = divmod(size, n)
        bounds, start = [], 0
        for i in range(n):
            start += big + (1 if i < rest else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = [int(i) for i in (indices_or_sections.tolist() if hasattr(
            indices_or_sections, "tolist") else indices_or_sections)]
    out, start = [], 0
    for b in bounds + [size]:
        b = min(max(b, start), size)
        out.append(input.narrow(dim, start, b - start))
        start = b
    return tuple(out)


def narrow_copy(input, dim, start, length):
    return input.narrow(dim, start, length).clone()


def gcd(input, other):
    if input.is_floating_point() or other.is_floating_point():
        raise RuntimeError("\"gcd_cpu\" not implemented for floating dtypes")
    from .functional import broadcast_tensors
    # torch's calc_gcd, lane by lane: a, b = |a|, |b|; while a: a, b = b % a, a (C's truncating
    # %, and |INT_MIN| wraps to itself, as there)
    a, b = broadcast_tensors(input.abs(), other.abs())
    while (a != 0).any().item():
        nz = a != 0
        r = b.fmod(_C.where(nz, a, _C.ones_like(a)))
        b = _C.where(nz, a, b)
        a = _C.where(nz, r, a)
    return b


def lcm(input, other):
    # torch's: |a / gcd * b|, in C++'s int for the narrower types (the abs before the wrap)
    g = gcd(input, other)
    safe = _C.where(g == 0, _C.ones_like(g), g)
    dtype = g.dtype
    if dtype in (_C.int8, _C.int16, _C.uint8):
        input, other, safe = input.to(_C.int32), other.to(_C.int32), safe.to(_C.int32)
    lcm = (input.div(safe, rounding_mode="trunc") * other).abs().to(dtype)
    return _C.where(g == 0, _C.zeros_like(lcm), lcm)


def renorm(input, p, dim, maxnorm):
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    dims = [d for d in range(input.dim()) if d != dim % input.dim()]
    from .linalg import vector_norm
    norms = vector_norm(input, ord=p, dim=dims, keepdim=True)
    scale = _C.where(norms > maxnorm, maxnorm / (norms + 1e-7), _C.ones_like(norms))
    return input * scale


def select_scatter(input, src, dim, index):
    out = input.clone()
    out.select(dim, index).copy_(src)
    return out


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    out = input.clone()
    n = input.shape[dim]
    s = 0 if start is None else (start + n if start < 0 else start)
    e = n if end is None else (end + n if end < 0 else min(end, n))
    index = _C.arange(s, e, step).to(input.device)
    return out.index_copy(dim, index, src)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    out = input.clone()
    out.diagonal(offset, dim1, dim2).copy_(src)
    return out


# In-place samplers through inverse transforms of uniform draws.
def exponential_(self, lambd=1.0, *, generator=None):
    u = _uniform_like(self, generator)
    return self.copy_(-_C.log1p(-u) / lambd)


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    u = _uniform_like(self, generator)
    return self.copy_(median + sigma * _C.tan(math.pi * (u - 0.5)))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    z = _C.randn(list(self.shape), dtype=_C.float64, **_gen(generator))
    return self.copy_(_C.exp(z * std + mean))


def geometric_(self, p, *, generator=None):
    u = _uniform_like(self, generator)
    return self.copy_(_C.ceil(_C.log1p(-u) / math.log1p(-p)).clamp(min=1))


def bernoulli_(self, p=0.5, *, generator=None):
    u = _uniform_like(self, generator)
    prob = p.to(_C.float64) if isinstance(p, _C.Tensor) else p
    return self.copy_(u < prob)


def _gen(generator):
    return {"generator": generator} if generator is not None else {}


def _uniform_like(t, generator):
    return _C.rand(list(t.shape), dtype=_C.float64, **_gen(generator))


def fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal in place; for a tall matrix with wrap, the diagonal starts again
    every ncols + 1 rows, as torch's does (its flat positions step ncols + 1 through storage)."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.dim() == 2 and wrap and self.shape[0] > self.shape[1]:
        flat = _C.arange(0, self.numel(), self.shape[1] + 1)
        self[flat // self.shape[1], flat % self.shape[1]] = fill_value
        return self
    idx = _C.arange(min(self.shape))
    self[tuple([idx] * self.dim())] = fill_value
    return self


_METHODS = ("aminmax", "argwhere", "msort", "inner", "addmv", "addr", "cov", "corrcoef",
            "diagflat", "isreal", "logdet", "matrix_power", "pinverse", "tensor_split",
            "narrow_copy", "gcd", "lcm", "renorm", "select_scatter",
            "slice_scatter", "diagonal_scatter", "vdot", "unfold", "exponential_", "cauchy_",
            "log_normal_", "geometric_", "bernoulli_", "fill_diagonal_", "lu")


def install(Tensor, linalg_module):
    for name in _METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    linalg_module.diagonal = lambda A, *, offset=0, dim1=-2, dim2=-1: A.diagonal(offset, dim1,
                                                                               dim2)
    linalg_module.matmul = _C.matmul
    for name in ("matrix_power", "multi_dot", "pinv", "matrix_rank", "cond", "vecdot",
                 "vander", "inv_ex", "cholesky_ex", "solve_ex", "lstsq", "tensorinv",
                 "tensorsolve"):
        if not hasattr(linalg_module, name):
            setattr(linalg_module, name, globals()[name])
