"""torch.linalg-shaped namespace: the linalg_* operators under their torch.linalg names, plus the
Python-level argument handling torch does for einsum (varargs) and tensordot (int dims)."""
from . import _C

solve = _C.linalg_solve
solve_triangular = _C.linalg_solve_triangular
inv = _C.linalg_inv
det = _C.linalg_det
slogdet = _C.linalg_slogdet
cholesky = _C.linalg_cholesky
qr = _C.linalg_qr
svd = _C.linalg_svd
svdvals = _C.linalg_svdvals
eigh = _C.linalg_eigh
eigvalsh = _C.linalg_eigvalsh
vector_norm = _C.linalg_vector_norm
matrix_norm = _C.linalg_matrix_norm
cross = _C.linalg_cross
lu_factor = _C.linalg_lu_factor
lu_factor_ex = _C.linalg_lu_factor_ex
lu = _C.linalg_lu
lu_solve = _C.linalg_lu_solve


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm over one dim (or all), a matrix norm over two."""
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    matrix = isinstance(ord, str) or (dim is not None and len(dim) == 2) or \
        (dim is None and A.dim() == 2)
    if matrix:
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if dim is None and A.dim() != 1:
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D "
                           f"or 2D. Got {A.dim()}D.")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def _einsum(equation, *operands):
    """torch.einsum(equation, *operands) or einsum(equation, [operands])."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _C.einsum(equation, list(operands))


def _tensordot(a, b, dims=2):
    """torch.tensordot: dims is an int (last dims of a with first dims of b) or two lists."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        # Like torch: dims past a's or b's rank fail as an out-of-range dim (IndexError).
        return _C.tensordot(a, b, list(range(-dims, 0)), list(range(dims)))
    da, db = dims
    da = [da] if isinstance(da, int) else list(da)
    db = [db] if isinstance(db, int) else list(db)
    return _C.tensordot(a, b, da, db)


def _multi_head_attention_forward(*args, **kwargs):
    """torch.nn.functional.multi_head_attention_forward: the weights are None when
    need_weights=False (the C++ op returns an empty tensor there)."""
    query = args[0] if args else kwargs["query"]
    embed_dim_to_check = args[3] if len(args) > 3 else kwargs["embed_dim_to_check"]
    num_heads = args[4] if len(args) > 4 else kwargs["num_heads"]
    # torch checks these with Python asserts, so they raise AssertionError there too.
    embed_dim = query.shape[-1]
    assert embed_dim == embed_dim_to_check, \
        f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
    assert embed_dim % num_heads == 0, \
        f"embed_dim {embed_dim} not divisible by num_heads {num_heads}"
    out, weights = _C.multi_head_attention_forward(*args, **kwargs)
    need = kwargs.get("need_weights", args[15] if len(args) > 15 else True)
    return out, (weights if need else None)


_CDIST_MODES = {None: None, "use_mm_for_euclid_dist_if_necessary": 0,
                "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}


def _cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """torch.cdist: compute_mode is a string in Python, an int in the aten op."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _C.cdist(x1, x2, p, _CDIST_MODES[compute_mode])
