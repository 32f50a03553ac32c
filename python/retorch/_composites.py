"""More of torch's functions and Tensor methods composed of retorch's operators in Python (the
first set is in functional.py): views (unfold), reductions and products (aminmax, inner, vdot,
addmv, addr, cov, corrcoef, logdet), scatter forms, element tests (isreal,
gcd/lcm), in-place samplers (exponential_, cauchy_, log_normal_, geometric_, bernoulli_), and
torch.linalg's matrix_power, multi_dot, pinv, matrix_rank, cond, vecdot, vander, the *_ex
forms, lstsq (gelsy's results), tensorinv, tensorsolve, diagonal and matmul; torch.lu."""
import math

from . import _C
from . import return_types

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


def aminmax(input, *, dim=None, keepdim=False):
    if dim is None:
        lo, hi = input.min(), input.max()
        if keepdim:
            shape = [1] * input.dim()
            lo, hi = lo.reshape(shape), hi.reshape(shape)
    else:
        lo, hi = input.amin(dim, keepdim), input.amax(dim, keepdim)
    return return_types._make("aminmax", ["min", "max"])(lo, hi)


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


def addmv(input, mat, vec, *, beta=1, alpha=1):
    out = _C.matmul(mat, vec) * alpha
    return out if beta == 0 else input * beta + out  # beta 0: input is ignored, NaN and all


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    outer = _C.outer(vec1, vec2)
    if beta == 0:
        return outer * alpha
    return input * beta + outer * alpha


def cov(input, *, correction=1, fweights=None, aweights=None):
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if not x.is_floating_point():
        x = x.to(_C.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        avg = x.mean(1, keepdim=True)
        norm = n - correction
    else:
        wsum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(x.dtype)).sum() / wsum
    xm = x - avg
    xw = xm if w is None else xm * w
    c = xw.matmul(xm.transpose(0, 1))
    c = c / (norm.clamp(min=0) if isinstance(norm, _C.Tensor) else max(norm, 0))
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input):
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
        eye = _C.eye(input.shape[-1], dtype=input.dtype)
        return eye.expand(input.shape).clone()
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


def _default_rtol(A, atol):
    """torch's default relative cutoff for singular values: eps * max(m, n), or 0 when a
    positive atol is given."""
    if atol is not None and atol > 0:
        return 0.0
    from ._dtypes import finfo
    return max(A.shape[-2:]) * finfo(A.dtype).eps


def _singular_cutoff(s, A, atol, rtol):
    """Singular values s of A at or below this are treated as zero (pinv, matrix_rank)."""
    smax = s.amax(-1, keepdim=True) if s.numel() else s
    tol = smax * (_default_rtol(A, atol) if rtol is None else rtol)
    return tol if atol is None else _C.maximum(tol, _C.full_like(tol, atol))


def pinv(input, *, atol=None, rtol=None, hermitian=False):
    u, s, vh = _C.linalg_svd(input, False)
    keep = s > _singular_cutoff(s, input, atol, rtol)
    sinv = _C.where(keep, 1 / _C.where(keep, s, _C.ones_like(s)), _C.zeros_like(s))
    return (vh.transpose(-2, -1) * sinv.unsqueeze(-2)).matmul(u.transpose(-2, -1))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    s = _C.linalg_svdvals(A)
    return (s > _singular_cutoff(s, A, atol, rtol)).sum(-1)


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
    n = x.shape[-1] if N is None else N
    return x.unsqueeze(-1).pow(_C.arange(n, dtype=_C.int64).to(x.device))


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


def lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq with CPU's default driver (gelsy): the minimum-norm least-squares
    solution and the numerical rank; residuals and singular values come back empty, as
    gelsy's do."""
    if driver not in (None, "gelsy"):
        raise RuntimeError(f"torch.linalg.lstsq: only the gelsy driver is available here, "
                           f"got {driver}")
    vec = B.dim() == A.dim() - 1
    b = B.unsqueeze(-1) if vec else B
    rtol = rcond if rcond is not None else _default_rtol(A, None)
    x = pinv(A, rtol=rtol).matmul(b)
    rank = matrix_rank(A, rtol=rtol)
    empty = _C.empty([0], dtype=A.dtype)
    return return_types._make("linalg_lstsq", ["solution", "residuals", "rank",
                                               "singular_values"])(
        x.squeeze(-1) if vec else x, empty, rank, empty)


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
    a, b = broadcast_tensors(input.abs(), other.abs())
    while (b != 0).any().item():  # Euclid, lane by lane
        nz = b != 0
        r = _C.where(nz, a.remainder(_C.where(nz, b, _C.ones_like(b))), _C.zeros_like(a))
        a = _C.where(nz, b, a)
        b = r
    return a


def lcm(input, other):
    g = gcd(input, other)
    prod = (input * other).abs()
    return _C.where(g == 0, _C.zeros_like(prod), prod.div(_C.where(g == 0, _C.ones_like(g), g),
                                                          rounding_mode="trunc"))


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
