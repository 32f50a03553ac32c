"""torch names retorch lacked, composed in Python: constants, build flags, deprecated linalg
entry points, native_dropout, norm_except_dim, the functional RNN cells, svd/pca_lowrank,
segment_reduce, orgqr and small Tensor methods (adjoint, as_subclass, output_nr, names, ...)."""
import math
import warnings

from . import _C
from . import return_types
from ._api_extras import _into, _source

__all__ = ["pi", "e", "inf", "nan", "has_openmp", "has_lapack", "has_mkl", "has_mkldnn",
           "has_cudnn", "has_mps", "has_spectral", "has_cuda", "is_distributed", "get_device",
           "is_inference", "init_num_threads", "adjoint", "qr", "resize_as_", "addmv_",
           "as_strided_", "native_dropout", "native_norm", "norm_except_dim", "lstm_cell",
           "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "svd_lowrank", "pca_lowrank",
           "segment_reduce", "solve", "lstsq", "symeig", "eig", "matrix_rank", "orgqr"]

pi, e, inf, nan = math.pi, math.e, math.inf, math.nan

# Build flags, from what this build has (CMakeLists.txt): OpenMP and LAPACK (OpenBLAS) are
# required; there is no MKL, no MKL-DNN tensor layout or ops (oneDNN, where found, only runs
# bfloat16 products inside other kernels), no cuDNN build dependency (it loads at run time on a
# GPU), no MPS backend and no FFT. has_cuda is whether the CUDA backend was compiled in (a GPU may
# still be absent), unlike torch's CPU wheel's False.
has_openmp = True
has_lapack = True
has_mkl = False
has_mkldnn = False
has_cudnn = False
has_mps = False
has_spectral = False
has_cuda = bool(_C._cuda_is_built())


def _check_tensor(name, input):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def is_distributed(input):
    _check_tensor("is_distributed", input)
    return False


def get_device(input):
    _check_tensor("get_device", input)
    return input.get_device()


def is_inference(input):
    _check_tensor("is_inference", input)
    return input.is_inference()


def init_num_threads():
    """A no-op: retorch's thread pool needs no per-thread initialization."""


# ---------------------------------------------------------------- views and resizing

def adjoint(input):
    """The conjugate transpose of the last two dims (a plain transpose: retorch is real)."""
    if input.dim() == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 1-D tensor.")
    if input.dim() == 0:
        return input.view_as(input)
    return input.transpose(-2, -1)


def resize_as_(input, the_template, *, memory_format=None):
    input.resize_(tuple(the_template.shape))
    return input


def _resize_as(self, tensor):
    """The legacy autograd Resize: a reshape that must keep the number of elements."""
    return _resize(self, *tensor.shape)


def _resize(self, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    numel = math.prod(sizes)
    if numel != self.numel():
        dims = "x".join(str(s) for s in sizes)
        raise RuntimeError(f"requested resize to {dims} ({numel} elements in total), but the "
                           f"given tensor has a size of {'x'.join(str(s) for s in self.shape)} "
                           f"({self.numel()} elements). autograd's resize can only change the "
                           "shape of a given tensor, while preserving the number of elements. ")
    return self.contiguous().view(sizes)


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


def as_strided_(input, size, stride, storage_offset=None):
    return input.as_strided_(size, stride, storage_offset)


def _mvlgamma_(self, p):
    if not self.is_floating_point():
        raise RuntimeError("step must be nonzero")  # what torch 1.13 says for integer dtypes
    return _into(self, _source(self).mvlgamma(p))


def _output_nr(self):
    """Which output of its grad_fn this tensor is: read from the edge of a fresh view's node."""
    if not self.requires_grad or self.grad_fn is None:
        return 0
    from .autograd import enable_grad
    with enable_grad():
        return self.view_as(self).grad_fn.next_functions[0][1]


def _as_subclass(self, cls):
    if not (isinstance(cls, type) and issubclass(cls, _C.Tensor)):
        raise RuntimeError("Creating a Tensor subclass from a class that does not inherit from "
                           "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = cls.__new__(cls)
    _C.Tensor.__init__(out, self.view_as(self))
    return out


def _not_linked(kind):
    def fn(self, device=None, non_blocking=False, **kwargs):
        raise RuntimeError(f"PyTorch is not linked with support for {kind} devices")
    fn.__name__ = kind
    return fn


def _to_dense(self, dtype=None):
    return self if dtype is None or dtype == self.dtype else self.to(dtype)


def _refine_names(self, *names):
    if len(names) == 1 and isinstance(names[0], (tuple, list)):
        names = tuple(names[0])
    if any(n is not None for n in names):
        raise RuntimeError("retorch has no named tensors: only None names are supported")
    if len(names) != self.dim():
        raise RuntimeError(f"refine_names: Number of names ({len(names)}) and number of "
                           f"dimensions in tensor ({self.dim()}) do not match.")
    return self


def _rename(self, *names, **rename_map):
    if rename_map or any(n is not None for n in names):
        raise RuntimeError("retorch has no named tensors: only None names are supported")
    return self.view_as(self)


def _rename_(self, *names, **rename_map):
    _rename(self, *names, **rename_map)
    return self


# ---------------------------------------------------------------- dropout and norms

def native_dropout(input, p, train):
    """(output, mask): in training (train True or None) mask is a bool Bernoulli(1 - p) draw and
    output = input * mask / (1 - p) (zeros when p == 1); otherwise a copy and an all-True mask."""
    if train is None or train:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
        if not input.is_floating_point():
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"{str(input.dtype).split('.')[-1].capitalize()}")
        keep = 1.0 - p
        mask = _C.bernoulli(_C.full(tuple(input.shape), keep, dtype=input.dtype)).to(_C.bool)
        scale = 0.0 if keep == 0 else 1.0 / keep
        return input * (mask.to(input.dtype) * scale), mask
    return input.clone(), _C.ones(tuple(input.shape), dtype=_C.bool)


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """torch 1.13 has only a sparse kernel for native_norm; strided tensors are refused."""
    raise NotImplementedError("Could not run 'aten::native_norm' with arguments from the "
                              f"'{input.device.type.upper()}' backend. 'aten::native_norm' is "
                              "only available for sparse tensors.")


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm over every dim but `dim`, kept as size-1 dims (weight_norm's g); dim=-1
    means the norm of the whole tensor."""
    if dim == -1:
        return _C.norm(v, pow)
    nd = v.dim()
    if not -nd <= dim < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {dim})")
    dim = dim % max(nd, 1)
    if dim != 0 and dim != nd - 1:
        return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)
    if dim == 0:
        shape = (v.shape[0],) + (1,) * (nd - 1)
        return _C.norm(v.contiguous().view(v.shape[0], -1), pow, [1]).view(shape)
    shape = (1,) * (nd - 1) + (v.shape[-1],)
    return _C.norm(v.contiguous().view(-1, v.shape[-1]), pow, [0]).view(shape)


# ---------------------------------------------------------------- functional RNN cells

def _check_cell(input, hx, w_ih, w_hh):
    if input.shape[1] != w_ih.shape[1]:  # size(1) raises IndexError for 1-D input, as torch
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    for i, h in enumerate(hx):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} "
                               f"batch size {h.shape[0]}")
        if h.shape[1] != w_hh.shape[1]:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {w_hh.shape[1]}")


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    return _C.linear(input, w_ih, b_ih) + _C.linear(hx, w_hh, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    h0, c0 = hx
    _check_cell(input, (h0, c0), w_ih, w_hh)
    i, f, g, o = _gates(input, h0, w_ih, w_hh, b_ih, b_hh).chunk(4, 1)
    c = f.sigmoid() * c0 + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, (hx,), w_ih, w_hh)
    ir, iz, in_ = _C.linear(input, w_ih, b_ih).chunk(3, 1)
    hr, hz, hn = _C.linear(hx, w_hh, b_hh).chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (hx - n)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, (hx,), w_ih, w_hh)
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, (hx,), w_ih, w_hh)
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).relu()


# ---------------------------------------------------------------- randomized low-rank SVD

def _range_basis(a, q, niter):
    """An orthonormal (..., m, q) basis nearly spanning a's column space: a Gaussian sketch
    a @ omega, sharpened by `niter` rounds of subspace iteration (re-orthonormalized each
    half-step so small singular directions are not lost to rounding)."""
    from . import linalg
    omega = _C.randn(tuple(a.shape[:-2]) + (a.shape[-1], q), dtype=a.dtype)
    basis = linalg.qr(_C.matmul(a, omega)).Q
    at = a.transpose(-2, -1)
    for _ in range(niter):
        basis = linalg.qr(_C.matmul(at, basis)).Q
        basis = linalg.qr(_C.matmul(a, basis)).Q
    return basis


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~= U diag(S) V^T, U (..., m, q), S (..., q), V (..., n, q): the SVD
    of the small projection basis^T (A - M) lifted back by the basis."""
    from . import linalg
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    a = A if M is None else A - M
    m, n = a.shape[-2], a.shape[-1]
    if m < n:  # sketch the taller side: the transpose's factors swap U and V
        v, s, u = svd_lowrank(a.transpose(-2, -1), q, niter)
        return u, s, v
    basis = _range_basis(a, q, niter)
    ub, s, vh = linalg.svd(_C.matmul(basis.transpose(-2, -1), a), full_matrices=False)
    return _C.matmul(basis, ub), s, vh.transpose(-2, -1)


def pca_lowrank(A, q=None, center=True, niter=2):
    """svd_lowrank of A with its column means removed (when center)."""
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else q
    if not (isinstance(q, int) and 0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)="
                         f"{min(m, n)}")
    if not (isinstance(niter, int) and niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter)
    return svd_lowrank(A - A.mean(-2, keepdim=True), q, niter)


# ---------------------------------------------------------------- segment_reduce

_SEGMENT = ("sum", "mean", "max", "min", "prod")
_SEGMENT_EMPTY = {"sum": 0.0, "prod": 1.0, "mean": nan, "max": -inf, "min": inf}


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """Reduces consecutive segments of data along `axis`. `lengths` has shape
    data.shape[:axis] + (segments,) (each row its own segmentation); `offsets` one more along
    its last dim, and wins when both are given, as in torch. An empty segment gives `initial`,
    or sum 0, prod 1, mean nan, max -inf, min inf. Checks run in torch 1.13's order."""
    from ._api_legacy import _wrap_dim
    axis = _wrap_dim(axis, data.dim())
    if data.numel() == 0:
        raise RuntimeError("Expected data.numel() > 0 to be true, but got false.")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if reduce not in _SEGMENT:
        raise RuntimeError(f"unsupported reduction given! {reduce}")
    kind, seg = ("offsets", offsets) if offsets is not None else ("lengths", lengths)
    if data.dim() < seg.dim():
        raise RuntimeError(f"Expected data.dim() >= {kind}_value.dim() to be true, but got "
                           "false.")
    if axis != seg.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {kind} "
                           f"but got {axis}.")
    if kind == "lengths" and not unsafe:
        if seg.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() "
                               "== 0. Specify the reduction dim with the 'dim' argument.")
        if seg.min().item() < 0:
            raise RuntimeError("lengths contains negative value!")
        if not bool((seg.sum(-1) == data.shape[axis]).all()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                               "to data.size(lengths.dim()-1) when !unsafe.")
    if seg.dtype not in (_C.int32, _C.int64):
        raise RuntimeError(f"\"_segment_reduce_{kind}_cpu_kernel1\" not implemented for "
                           f"'{_dtype_name(seg.dtype)}'")
    if not data.is_floating_point():
        raise RuntimeError(f"\"_segment_reduce_cpu\" not implemented for "
                           f"'{_dtype_name(data.dtype)}'")
    rows = _segment_rows(seg, kind, math.prod(data.shape[:axis]), data.shape[axis])
    init = None if initial is None else _C.full((), initial, dtype=data.dtype,
                                                device=data.device)
    return _segment_function().apply(data, reduce, rows, axis, init)


def _segment_rows(seg, kind, outer, size):
    """Per row of data before `axis`, the segments' (start, end) along it, clipped to the data
    (torch reads past the end where unsafe lengths or offsets overrun it)."""
    if kind == "offsets" and seg.shape[-1] == 0:
        raise RuntimeError("Trying to create tensor with negative dimension -1: [-1]")
    flat = seg.reshape(math.prod(seg.shape[:-1]), seg.shape[-1]).tolist()
    if len(flat) < outer:  # torch would index past the end of lengths
        raise RuntimeError(f"segment_reduce(): {kind} has {len(flat)} rows, data "
                           f"{outer} before axis")
    rows = []
    for row in flat[:outer]:
        ends = row if kind == "offsets" else [sum(row[:i]) for i in range(len(row) + 1)]
        if any(b < a for a, b in zip(ends, ends[1:])):
            raise RuntimeError("Expected segment_length >= 0 to be true, but got false.")
        ends = [min(max(e, 0), size) for e in ends]
        rows.append(list(zip(ends[:-1], ends[1:])))
    return rows


def _segment_blocks(rows):
    """(first row, row count, bounds) runs: all rows at once where they share a segmentation
    (1-D lengths), else one row at a time."""
    if all(r == rows[0] for r in rows):
        return [(0, len(rows), rows[0])]
    return [(o, 1, r) for o, r in enumerate(rows)]


def _segment_forward(part, reduce, init):
    """part (rows, n, inner) reduced over dim 1. Half and bfloat16 compute in float32 and round
    once: as close as torch's kernel (which rounds after every element) or closer."""
    if part.shape[1] == 0:
        shape = (part.shape[0], part.shape[2])
        if init is not None:
            return init.expand(shape).clone()
        return _C.full(shape, _SEGMENT_EMPTY[reduce], dtype=part.dtype, device=part.device)
    low = part.dtype in (_C.float16, _C.bfloat16)
    x = part.float() if low else part
    i = None if init is None else init.to(x.dtype)
    if reduce in ("sum", "mean"):
        out = x.sum(1) if i is None else x.sum(1) + i
        out = out / part.shape[1] if reduce == "mean" else out
    elif reduce == "prod":
        out = x.prod(1) if i is None else x.prod(1) * i
    else:
        out = _C.amax(x, [1]) if reduce == "max" else _C.amin(x, [1])
        if i is not None:
            out = (_C.maximum if reduce == "max" else _C.minimum)(out, i.expand(out.shape))
    return out.to(part.dtype)


def _segment_backward(part, out, grad, reduce, init):
    """The gradient of part (rows, n, inner) from out and grad (rows, inner), as torch's
    _segment_reduce_backward: max/min send grad to every element equal to the result (or NaN),
    split among ties only where it is positive; prod divides out by each element, and takes the
    product of the others (and initial) where the element is zero or NaN."""
    n = part.shape[1]
    g = grad.unsqueeze(1).expand(part.shape)
    if reduce == "sum":
        return g.clone()
    if reduce == "mean":
        return (g / n).clone()
    if reduce in ("max", "min"):
        hit = _C.isnan(part) | (part == out.unsqueeze(1))
        count = hit.sum(1, keepdim=True).expand(part.shape)
        zero = _C.zeros_like(part)
        taken = _C.where(hit, g, zero)
        return _C.where(hit & (count >= 2) & (g > 0), g / count.to(g.dtype), taken)
    safe = (part != 0) & ~_C.isnan(part)
    result = _C.where(safe, g * out.unsqueeze(1) / part, _C.zeros_like(part))
    if bool(safe.all()):
        return result
    others = []
    for j in range(n):
        rest = _C.cat([part[:, :j], part[:, j + 1:]], 1).prod(1)
        others.append(rest if init is None else rest * init)
    return _C.where(safe, result, g * _C.stack(others, 1))


_SEGMENT_FN = []  # the Function class, made on first use (autograd imports this package)


def _segment_function():
    if _SEGMENT_FN:
        return _SEGMENT_FN[0]
    from .autograd import Function

    class _SegmentReduce(Function):
        """segment_reduce over a (rows, size, inner) view of data; see _segment_rows."""
        _backward_name = "SegmentReduceBackward0"

        @staticmethod
        def forward(ctx, data, reduce, rows, axis, init):
            shape = tuple(data.shape)
            view = data.reshape(len(rows), shape[axis], -1)
            nseg = len(rows[0]) if rows else 0
            blocks = []
            for first, count, bounds in _segment_blocks(rows):
                d = view[first:first + count]
                parts = [_segment_forward(d[:, lo:hi], reduce, init) for lo, hi in bounds]
                blocks.append(_C.stack(parts, 1) if parts else _C.empty(
                    (count, 0, view.shape[2]), dtype=data.dtype, device=data.device))
            out = _C.cat(blocks, 0)
            out = out.reshape(shape[:axis] + (nseg,) + shape[axis + 1:])
            ctx.save_for_backward(data, out)
            ctx.meta = (reduce, rows, axis, init)
            return out

        @staticmethod
        def backward(ctx, grad):
            data, out = ctx.saved_tensors
            reduce, rows, axis, init = ctx.meta
            view = data.reshape(len(rows), data.shape[axis], -1)
            out3 = out.reshape(len(rows), -1, view.shape[2])
            grad3 = grad.reshape(out3.shape)
            blocks = []
            for first, count, bounds in _segment_blocks(rows):
                d = view[first:first + count]
                zeros = _C.zeros((count, view.shape[1], view.shape[2]), dtype=grad.dtype,
                                 device=grad.device)
                pieces = [zeros[:, :bounds[0][0] if bounds else 0]]
                for s, (lo, hi) in enumerate(bounds):
                    pieces.append(_segment_backward(
                        d[:, lo:hi], out3[first:first + count, s],
                        grad3[first:first + count, s], reduce, init))
                pieces.append(zeros[:, bounds[-1][1] if bounds else view.shape[1]:])
                blocks.append(_C.cat(pieces, 1))
            return _C.cat(blocks, 0).reshape(data.shape), None, None, None, None

    _SEGMENT_FN.append(_SegmentReduce)
    return _SegmentReduce


def _dtype_name(dtype):
    return {_C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char",
            _C.uint8: "Byte", _C.bool: "Bool", _C.float32: "Float", _C.float64: "Double",
            _C.float16: "Half", _C.bfloat16: "BFloat16"}[dtype]


# ---------------------------------------------------------------- deprecated linear algebra

def _removed(name, as_tuple):
    first = "This function was deprecated since version 1.9 and is now removed."
    second = f"Please use the `torch.linalg.{name}` function instead."

    def fn(*args, **kwargs):
        if as_tuple:  # torch 1.13 passes these two as separate args: str() prints a tuple
            raise RuntimeError(first, second)
        raise RuntimeError(f"{first} {second}")
    fn.__name__ = fn.__qualname__ = name
    return fn


solve = _removed("solve", False)
eig = _removed("eig", False)
lstsq = _removed("lstsq", True)
matrix_rank = _removed("matrix_rank", True)


def qr(input, some=True):
    """The deprecated torch.qr: linalg.qr in mode 'reduced' (some) or 'complete'."""
    from . import linalg
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
                  "future PyTorch release.", UserWarning, stacklevel=2)
    q_, r_ = linalg.qr(input, mode="reduced" if some else "complete")
    return return_types._make("qr", ["Q", "R"])(q_, r_)


def _eigvals_nograd():
    from .autograd import Function

    class _SymeigValues(Function):
        """eigvalsh whose backward raises, as torch.symeig(A, eigenvectors=False)'s does."""

        @staticmethod
        def forward(ctx, a, uplo):
            from . import linalg
            return linalg.eigvalsh(a, UPLO=uplo)

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("linalg_eig_backward: torch.symeig(A, eigenvectors=False) is "
                               "not differentiable. Use torch.linalg.eigvalsh(A) instead.")
    return _SymeigValues


def symeig(input, eigenvectors=False, upper=True):
    """The deprecated torch.symeig: (eigenvalues, eigenvectors) of the `upper` (or lower)
    triangle; eigenvectors is empty unless asked for."""
    from . import linalg
    warnings.warn("torch.symeig is deprecated in favor of torch.linalg.eigh and will be removed "
                  "in a future PyTorch release.", UserWarning, stacklevel=2)
    uplo = "U" if upper else "L"
    make = return_types._make("symeig", ["eigenvalues", "eigenvectors"])
    if eigenvectors:
        vals, vecs = linalg.eigh(input, UPLO=uplo)
        return make(vals, vecs)
    vals = _eigvals_nograd().apply(input, uplo)
    return make(vals, _C.empty(0, dtype=input.dtype))


def orgqr(input, input2, *, out=None):
    """torch.orgqr: an alias of linalg.householder_product (tau named input2)."""
    from . import linalg
    for pos, (arg, t) in enumerate((("input", input), ("input2", input2)), 1):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"orgqr(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    return linalg.householder_product(input, input2, out=out)


def _orgqr_method(self, input2):
    if not isinstance(input2, _C.Tensor):
        raise TypeError(f"orgqr(): argument 'input2' (position 1) must be Tensor, not "
                        f"{type(input2).__name__}")
    return orgqr(self, input2)


# ---------------------------------------------------------------- install

def install(Tensor):
    methods = {
        "adjoint": adjoint, "qr": qr, "symeig": symeig, "solve": solve, "eig": eig,
        "lstsq": lstsq, "resize_as": _resize_as, "resize": _resize, "mvlgamma_": _mvlgamma_,
        "as_subclass": _as_subclass, "xpu": _not_linked("xpu"), "ipu": _not_linked("ipu"),
        "to_dense": _to_dense, "refine_names": _refine_names, "rename": _rename,
        "rename_": _rename_, "has_names": lambda self: False,
        "is_distributed": lambda self: False, "orgqr": _orgqr_method,
    }
    for name, fn in methods.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    props = {
        "output_nr": _output_nr, "names": lambda self: (None,) * self.dim(),
        "is_xpu": lambda self: self.device.type == "xpu",
        "is_mps": lambda self: self.device.type == "mps",
        "is_ipu": lambda self: self.device.type == "ipu",
    }
    for name, fn in props.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, property(fn))
    if not hasattr(Tensor, "resize_as_"):
        Tensor.resize_as_ = resize_as_
