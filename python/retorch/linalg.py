"""torch.linalg-shaped namespace: the linalg_* operators under their torch.linalg names, the
Python-level argument handling torch does for einsum (varargs) and tensordot (int dims), and
householder_product composed of matmuls."""
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


def _householder_checks(input, tau):
    """torch's checks for householder_product/orgqr, in its order and with its messages."""
    from ._api_extras import _TYPE_NAMES
    name = "torch.linalg.householder_product"
    for pos, (arg, t) in enumerate((("input", input), ("tau", tau)), 1):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"linalg_householder_product(): argument '{arg}' (position {pos}) "
                            f"must be Tensor, not {type(t).__name__}")
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n, k = input.shape[-2], input.shape[-1], tau.shape[-1]  # 0-d tau: IndexError, as torch
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if input.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{input.dim()}")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != input.dtype:
        raise RuntimeError(f"{name}: tau dtype {_TYPE_NAMES[tau.dtype]} does not match input "
                           f"dtype {_TYPE_NAMES[input.dtype]}")
    if input.device != tau.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {input.device} and {tau.device}!")
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"\"orgqr_{input.device.type}\" not implemented for "
                           f"'{_TYPE_NAMES[input.dtype]}'")
    return m, n, k


def householder_product(input, tau, *, out=None):
    """torch.linalg.householder_product (LAPACK orgqr): the first n columns of H_1 ... H_k with
    H_i = I - tau_i v_i v_i^T, where v_i is column i of input below the diagonal with an implicit
    1 on it. Composed of matmuls, so autograd differentiates it (real dtypes only: retorch has no
    complex tensors)."""
    if out is not None and _C.is_grad_enabled() and (input.requires_grad or tau.requires_grad):
        raise RuntimeError("linalg_householder_product(): functions with out=... arguments don't "
                           "support automatic differentiation, but one of the arguments requires "
                           "grad.")
    m, n, k = _householder_checks(input, tau)
    eye = _C.eye(m, n, dtype=input.dtype, device=input.device)
    v_all = _C.tril(input, -1) + eye  # unit lower-trapezoidal: the reflectors' vectors
    q = eye.expand(tuple(input.shape)).clone()
    # Apply H_k first, then H_{k-1}, ... H_1 (each to the left): Q <- Q - tau_i v_i (v_i^T Q).
    for i in reversed(range(k)):
        v = v_all[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        q = q - (v * t).matmul(v.transpose(-2, -1).matmul(q))
    if k == 0:  # no reflectors: as torch's, still in the graph, with a zero gradient
        if input.requires_grad:
            q = _C.where(_C.ones_like(q, dtype=_C.bool), q, input)
        if tau.requires_grad:  # tau is empty here: its sum is a zero
            q = q + tau.sum(-1, keepdim=True).unsqueeze(-1)
    if out is None:
        return q
    from . import _dtypes
    from ._api_extras import _TYPE_NAMES
    if not _dtypes.can_cast(q.dtype, out.dtype):
        raise RuntimeError("torch.linalg.householder_product: Expected result to be safely "
                           f"castable from {_TYPE_NAMES[q.dtype]} dtype, but got result with "
                           f"dtype {_TYPE_NAMES[out.dtype]}")
    if tuple(out.shape) != tuple(q.shape):
        if out.numel() != 0:
            import warnings
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out.shape)}, which does not match the required output shape "
                          f"{list(q.shape)}. This behavior is deprecated, and in a future PyTorch "
                          "release outputs will not be resized unless they have zero elements. "
                          "You can explicitly reuse an out tensor t by resizing it, inplace, to "
                          "zero elements with t.resize_(0).")
        out.resize_(list(q.shape))
    return out.copy_(q)
