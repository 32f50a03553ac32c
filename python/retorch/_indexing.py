"""torch.unique and nonzero(as_tuple=...): Python-level wrappers over _unique2 and nonzero."""
from . import _C


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Unique elements of input (flattened), optionally with inverse indices and counts."""
    if dim is not None:
        raise NotImplementedError("retorch.unique: dim= is not supported yet (only dim=None)")
    out, inverse, counts = _C._unique2(input, sorted, return_inverse, return_counts)
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
