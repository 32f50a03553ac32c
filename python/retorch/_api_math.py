"""torch functions retorch lacked, composed of its operators: the *_copy forms of the views,
nuclear_norm and frobenius_norm, matrix_exp (scaling and squaring with a [13/13] Padé
approximant), gradient (central differences, edge_order 1 or 2) and histogramdd."""
import math

from . import _C
from . import linalg
from . import return_types
from ._api_extras import _CPP_NAMES, _type_name

__all__ = ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy",
           "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
           "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
           "unsqueeze_copy", "view_copy", "nuclear_norm", "frobenius_norm", "matrix_exp",
           "gradient", "histogramdd"]


# ---------------------------------------------------------------- view copies
# Each is the view then clone(), which keeps the view's strides where they are dense, as
# torch's do (t_copy of a contiguous matrix has strides (1, rows)).

def alias_copy(input):
    return input.clone()


def as_strided_copy(input, size, stride, storage_offset=None):
    return input.as_strided(list(size), list(stride), storage_offset).clone()


def detach_copy(input):
    return input.detach().clone()


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2).clone()


def expand_copy(input, size, *, implicit=False):
    return input.expand(list(size)).clone()


def permute_copy(input, dims):
    return input.permute(list(dims)).clone()


def select_copy(input, dim, index):
    return input.select(dim, index).clone()


def slice_copy(input, dim=0, start=None, end=None, step=1):
    return input.slice(dim, start, end, step).clone()


def split_copy(input, split_size, dim=0):
    return tuple(t.clone() for t in input.split(split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return tuple(t.clone() for t in input.split_with_sizes(list(split_sizes), dim))


def squeeze_copy(input, dim=None):
    return (input.squeeze() if dim is None else input.squeeze(dim)).clone()


def t_copy(input):
    return input.t().clone()


def transpose_copy(input, dim0, dim1):
    return input.transpose(dim0, dim1).clone()


def unbind_copy(input, dim=0):
    return tuple(t.clone() for t in input.unbind(dim))


def unfold_copy(input, dimension, size, step):
    return input.unfold(dimension, size, step).clone()


def unsqueeze_copy(input, dim):
    return input.unsqueeze(dim).clone()


def view_copy(input, size):
    """A copy of input.view(size); size may be a shape or a dtype."""
    if isinstance(size, _C.dtype):
        return input.view(size).clone()
    return input.view(list(size)).clone()


# ---------------------------------------------------------------- norms

def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of singular values of a matrix (dim=None: input must be one), or of the
    matrices spanned by the two dims in dim."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim) is torch's other overload
        dim, keepdim = None, dim
    if dim is None:
        if input.dim() != 2:
            plural = "" if input.dim() == 1 else "s"
            raise RuntimeError("Expected a tensor with 2 dimensions, but got a tensor with "
                               f"{input.dim()} dimension{plural} instead.")
        dim = (0, 1)
    if len(dim) != 2:
        raise RuntimeError("nuclear norm requires a 'dim' argument of size 2")
    return linalg.matrix_norm(input, ord="nuc", dim=tuple(dim), keepdim=keepdim)


def frobenius_norm(input, dim=None, keepdim=False):
    """The square root of the sum of squares: of every element (dim=None), or along up to two
    dims."""
    if not input.is_floating_point():
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {_type_name(input.dtype)} instead.")
    dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if dims is not None and len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    if dims is not None and len(dims) == 2 and dims[0] % input.dim() == dims[1] % input.dim():
        raise RuntimeError(f"Expected dims to be different, got {dims} instead")
    return linalg.vector_norm(input, 2, dim=dims or None, keepdim=keepdim)


# ---------------------------------------------------------------- matrix exponential

# Higham (2005), "The scaling and squaring method for the matrix exponential revisited": the
# [13/13] Padé coefficients, and the largest 1-norm for which that approximant is accurate to
# float64's unit roundoff (float32 then has margin to spare).
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _pade13(A):
    """(U, V) with exp(A) ~ (V - U)^-1 (V + U)."""
    b = _PADE13
    eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 +
             b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + \
        b[0] * eye
    return U, V


def matrix_exp(A):
    """exp(A) of a square matrix or a batch of them, by scaling and squaring: each matrix is
    divided by 2**s so its 1-norm is at most theta_13, the Padé approximant is taken, and the
    result squared s times (s per matrix). Differentiable through its operations."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 "
                           "dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but they "
                           f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    if not A.is_floating_point():
        raise RuntimeError("matrix_exp: Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(A.dtype)}")
    if A.numel() == 0:
        return A.clone()
    if A.dtype in (_C.float16, _C.bfloat16):
        # Squaring amplifies each product's rounding: float32 and one rounding at the end keep
        # the result within bfloat16's precision. (torch 1.13's own bfloat16 kernel is broken:
        # NaN or inf even for a 3x3 matrix of 1-norm 0.01.)
        return matrix_exp(A.float()).to(A.dtype)
    norm = A.detach().abs().sum(-2).amax(-1)  # the 1-norm: the largest column sum
    s = _C.ceil(_C.log2(norm / _THETA13)).clamp(min=0)
    s = _C.where(_C.isfinite(s), s, _C.zeros_like(s)).unsqueeze(-1).unsqueeze(-1)
    U, V = _pade13(A * _C.pow(2.0, -s))
    R = linalg.solve(V - U, V + U)
    for k in range(int(s.max().item())):  # squarings; matrices needing fewer keep theirs
        R = _C.where(s > k, R @ R, R)
    return R


# ---------------------------------------------------------------- gradient

def _wrap_dims(dims, ndim):
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        d %= ndim
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def _uniform(f, d, h, edge_order):
    """Central differences along d with step h (torch's formulas, term for term)."""
    center = (f.narrow(d, 2, f.shape[d] - 2) - f.narrow(d, 0, f.shape[d] - 2)) / h
    first, second, third = (f.narrow(d, i, 1) for i in range(3))
    last, before, third_last = (f.narrow(d, f.shape[d] - i, 1) for i in (1, 2, 3))
    if edge_order == 1:
        head, tail = (second - first) / h, (last - before) / h
    else:
        head = (first * -1.5 + second * 2 - third * 0.5) / h
        tail = (third_last * 0.5 + before * -2 + last * 1.5) / h
    return _C.cat([head, center / 2, tail], d)


def _coordinates(f, d, x, edge_order):
    """Second-order differences along d at the sample coordinates x (numpy's formulas)."""
    n = f.shape[d]
    if x.dim() != 1 or x.shape[0] != n:
        raise RuntimeError(f"torch.gradient expected the spacing of dim {d} to be a 1-D tensor "
                           f"of {n} coordinates, but got one of shape {list(x.shape)}")
    shape = [1] * f.dim()
    shape[d] = -1
    dx = x[1:] - x[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * f.narrow(d, 0, n - 2) + b * f.narrow(d, 1, n - 2) + c * f.narrow(d, 2, n - 2)
    first, second, third = (f.narrow(d, i, 1) for i in range(3))
    last, before, third_last = (f.narrow(d, n - i, 1) for i in (1, 2, 3))
    if edge_order == 1:
        head, tail = (second - first) / dx[0], (last - before) / dx[-1]
    else:
        h0, h1, g0, g1 = dx[0], dx[1], dx[-1], dx[-2]
        head = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * first + (h0 + h1) / (h0 * h1) * second -
                h0 / (h1 * (h0 + h1)) * third)
        tail = (g0 / (g1 * (g0 + g1)) * third_last - (g0 + g1) / (g0 * g1) * before +
                (2 * g0 + g1) / (g0 * (g0 + g1)) * last)
    return _C.cat([head, center, tail], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative estimated along each of dim (all dims by default), one tensor per dim:
    central differences inside, one-sided ones of order edge_order at the ends. spacing is one
    step for every dim, a step per dim, or a 1-D tensor of sample coordinates per dim."""
    if input.dtype == _C.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if spacing is None:
        spacing = 1
    if isinstance(spacing, _C.Tensor) and spacing.dim() == 0:
        spacing = spacing.item()
    per_dim = isinstance(spacing, (list, tuple))
    dims_given = dim is not None
    dims = list(range(input.dim())) if dim is None else [dim] if isinstance(dim, int) else \
        list(dim)
    if per_dim and not dims_given and len(spacing) not in (1, input.dim()):
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or a "
                           f"list of length {input.dim()} but got a list of length "
                           f"{len(spacing)}")
    if per_dim and dims_given and len(spacing) != len(dims):
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's "
                           "spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _wrap_dims(dims, input.dim())
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    steps = list(spacing) if per_dim else [spacing]
    if len(steps) == 1:
        steps = steps * len(dims)
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, _C.Tensor) and h.dim() == 0:
            h = h.item()
        if isinstance(h, _C.Tensor):
            out.append(_coordinates(input, d, h, edge_order))
        else:
            out.append(_uniform(input, d, h, edge_order))
    return tuple(out)


# ---------------------------------------------------------------- histogramdd

def _outer_edges(column, k, range):
    """The first and last bin edge of dimension k: from range, else the column's extremes
    (an empty column spans [0, 1], a single value widens by 0.5 each way, as numpy's)."""
    if range is not None:
        lo, hi = float(range[2 * k]), float(range[2 * k + 1])
    elif column.numel():
        lo, hi = column.min().item(), column.max().item()
    else:
        lo, hi = 0.0, 1.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {k}'s range [{lo:g}, {hi:g}] is not "
                           "finite")
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} "
                           f"max {hi:g} for dimension {k}")
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _check_histogram_args(input, bins, range, weight):
    """torch's histogramdd_check_inputs, in its order, for (..., D) input and its D bins."""
    d = input.shape[-1]
    if len(bins) != d:
        raise RuntimeError(f"torch.histogramdd: expected {d} sequences of bin edges for a "
                           f"{d}-dimensional histogram but got {len(bins)}")
    for k, b in enumerate(bins):
        if not isinstance(b, _C.Tensor):
            continue
        if b.dtype != input.dtype:
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the "
                               f"same dtype, but got input with dtype {_CPP_NAMES[input.dtype]} "
                               f"and bins for dimension {k} with dtype {_CPP_NAMES[b.dtype]}")
        if b.dim() != 1:
            raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                               f"{b.dim()} dimensions in the bins tensor for dimension {k}")
        if b.numel() == 0:
            raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, "
                               f"but got 0 elements in the bins tensor for dimension {k}")
    if weight is not None:
        if list(weight.shape) != list(input.shape[:-1]):
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have "
                               "the same shape as the input tensor excluding its innermost "
                               f"dimension, but got input with shape {list(input.shape)} and "
                               f"weight with shape {list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and "
                               "weight tensor should have the same dtype, but got input("
                               f"{_CPP_NAMES[input.dtype]}), and weight("
                               f"{_CPP_NAMES[weight.dtype]})")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should "
                           f"have {2 * d} elements, but got {len(range)}")


def _bin_of(column, edges, equal_bins):
    """(bin index, whether counted) of each value, as torch's kernel finds them even for
    unsorted edges: counted when between the first and the last edge, then a binary search, the
    last edge falling into the last bin. NaN passes that range test, so it is counted: a search
    ends it past the last edge (the last bin); equal bins, which torch finds by division (NaN
    casts to bin 0 on its x86 build) and a look at the bins beside, put it in the second bin
    (or the only one)."""
    n = edges.numel() - 1
    nan = _C.isnan(column)
    inside = ((column >= edges[0]) & (column <= edges[n])) | nan
    idx = _C.searchsorted(edges.contiguous(), column.contiguous(), right=True) - 1
    if equal_bins:
        idx = _C.where(nan, _C.full_like(idx, min(1, n - 1)), idx)
    return idx.clamp(0, n - 1), inside


def _histogram(input, bins, range, weight, density):
    """(hist, edges) of the points in input's last dimension, as torch.histogramdd and
    torch.histogram count them."""
    if not input.is_floating_point() or input.dtype in (_C.float16, _C.bfloat16):
        raise RuntimeError(f"\"histogramdd\" not implemented for '{_type_name(input.dtype)}'")
    _check_histogram_args(input, bins, range, weight)
    points = input.reshape(-1, input.shape[-1])
    edges = []
    for k, b in enumerate(bins):
        if isinstance(b, _C.Tensor):
            edges.append(b)
            continue
        if b <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension "
                               f"{k}")
        lo, hi = _outer_edges(points[:, k], k, range)
        edges.append(_C.linspace(lo, hi, b + 1, dtype=points.dtype, device=points.device))
    flat = _C.zeros([points.shape[0]], dtype=_C.int64, device=points.device)
    inside = _C.ones([points.shape[0]], dtype=_C.bool, device=points.device)
    for k, (e, b) in enumerate(zip(edges, bins)):
        idx, counted = _bin_of(points[:, k], e, not isinstance(b, _C.Tensor))
        inside = inside & counted
        flat = flat * (e.numel() - 1) + idx
    sizes = [e.numel() - 1 for e in edges]
    w = weight.reshape(-1) if weight is not None else _C.ones(
        [points.shape[0]], dtype=points.dtype, device=points.device)
    w = _C.where(inside, w, _C.zeros_like(w))
    hist = _C.zeros([math.prod(sizes)], dtype=points.dtype, device=points.device)
    hist = hist.scatter_add(0, flat, w).reshape(sizes)
    if density:
        hist = hist / hist.sum()
        for k, e in enumerate(edges):
            shape = [1] * len(edges)
            shape[k] = sizes[k]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist, edges


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the points in input's last dimension: bins is a count for every
    dimension, a count per dimension, or a 1-D tensor of edges per dimension. Points outside
    the edges are dropped; each last bin includes its right edge."""
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    bins = [bins] * input.shape[-1] if isinstance(bins, int) else list(bins)
    hist, edges = _histogram(input, bins, range, weight, density)
    return return_types._make("histogramdd", ["hist", "bin_edges"])(hist, tuple(edges))


def install(Tensor, linalg_module):
    if not hasattr(Tensor, "matrix_exp"):
        Tensor.matrix_exp = matrix_exp
    if not hasattr(linalg_module, "matrix_exp"):
        linalg_module.matrix_exp = matrix_exp
