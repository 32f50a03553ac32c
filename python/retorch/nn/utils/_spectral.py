"""The pieces both spectral norms share: the weight seen as a matrix, argument checks, and the
power iteration that estimates the largest singular value."""
from ... import _C
from ...functional import mv
from ..functional import normalize

# Note [Spectral norm power iteration]
# sigma(W) ~ u^T W v with u, v the leading singular vectors, refined by power iteration in
# training mode. u and v are buffers updated in place under no_grad (torch writes them with
# normalize(..., out=u)), and sigma is built from clones of them, so the graph of W / sigma does
# not see later in-place updates and gradients flow only through W.


def check_args(weight, n_power_iterations, dim):
    """dim made non-negative; clear errors for a bad dim or iteration count."""
    if n_power_iterations <= 0:
        raise ValueError("Expected n_power_iterations to be positive, but got "
                         f"n_power_iterations={n_power_iterations}")
    ndim = weight.dim()
    if ndim and not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}] but got {dim})")
    return dim + ndim if dim < 0 else dim


def weight_matrix(weight, dim):
    """weight with `dim` moved first and the rest flattened: (size(dim), -1)."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.dim()) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def random_unit(n, like, eps):
    """A random unit vector of length n with like's dtype and device, drawn from N(0, 1)."""
    return normalize(_C.empty(n, dtype=like.dtype, device=like.device).normal_(0, 1), dim=0,
                     eps=eps)


def update_u(mat, u, v, eps):
    u.copy_(normalize(mv(mat, v), dim=0, eps=eps))


def update_v(mat, u, v, eps):
    v.copy_(normalize(mv(mat.t(), u), dim=0, eps=eps))


def sigma(mat, u, v):
    """u^T mat v, the spectral norm estimate. See Note [Spectral norm power iteration]"""
    return _C.dot(u, mv(mat, v))
