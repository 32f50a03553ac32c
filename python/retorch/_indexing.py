"""torch.unique (also with dim=) and nonzero(as_tuple=...): Python wrappers over _unique2, the
indexing ops and nonzero."""
from . import _C


def _unique_dim(input, dim):
    """Unique slices along dim, sorted lexicographically, with inverse indices and counts."""
    if input.dim() == 0:
        raise IndexError(f"unique: dimension specified as {dim} but tensor has no dimensions")
    moved = input.transpose(0, dim)
    n = moved.shape[0]
    if input.numel() == 0 and n != 0:
        raise RuntimeError("unique: there are 0 sized dimensions, and they aren't selected, so "
                           "unique cannot be applied")
    k = 1
    for s in moved.shape[1:]:
        k *= s
    rows = moved.reshape(n, k)
    # Lexicographic order: stable sorts by each column, last column first (a radix sort).
    order = _C.arange(n)
    for c in reversed(range(rows.shape[1])):
        column = rows.index_select(0, order).select(1, c)
        order = order.index_select(0, column.argsort(stable=True))
    srt = rows.index_select(0, order)
    starts = _C.ones(n, dtype=_C.bool)
    if n > 1 and rows.shape[1] > 0:
        starts[1:] = srt[1:].ne(srt[:-1]).any(1)
    elif n > 1:
        starts[1:] = False
    group = starts.cumsum(0) - 1
    uniq = srt[starts]
    out = uniq.reshape([uniq.shape[0]] + list(moved.shape[1:])).transpose(0, dim)
    inverse = _C.zeros(n, dtype=_C.int64).index_put([order], group)
    counts = _C.zeros(uniq.shape[0], dtype=_C.int64).index_put(
        [group], _C.ones(n, dtype=_C.int64), True)
    return out, inverse, counts


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Unique elements of input (flattened, or slices along dim), optionally with inverse
    indices and counts."""
    if dim is None:
        out, inverse, counts = _C._unique2(input, sorted, return_inverse, return_counts)
    else:
        out, inverse, counts = _unique_dim(input, dim)
    if return_inverse and return_counts:
        return out, inverse, counts
    if return_inverse:
        return out, inverse
    if return_counts:
        return out, counts
    return out


_nonzero = _C.nonzero


def nonzero(input, *, as_tuple=False):
    """Indices of the nonzero elements: an [n, ndim] tensor, or one index tensor per dim."""
    if not as_tuple:
        return _nonzero(input)
    if input.dim() == 0:
        input = input.unsqueeze(0)
    return tuple(_nonzero(input).unbind(1))


def install(tensor_cls):
    """Adds the wrappers as Tensor methods (x.unique(), x.nonzero(as_tuple=True))."""
    tensor_cls.unique = unique
    tensor_cls.nonzero = nonzero
