"""The CUDA kernels of the LAPACK ops (cuSOLVER and cuBLAS trsm, Note [CUDA linear algebra]):
cholesky, lu_factor_ex (also without pivoting), lu_unpack, _linalg_solve, inv, det, slogdet,
solve_triangular, qr, eigh and svd in float32 and float64, batched, against torch on the cpu
(factors that are unique up to signs through reconstructions, |columns| and invariants);
singular and non-positive-definite inputs raise the cpu kernel's error and leave the device
usable; gradients through autograd. Skipped without a GPU."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import fresh_stats, ran_on_device  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")

DEV = "cuda"
LAPACK = [("float32", 2e-4), ("float64", 1e-10)]


def rnd(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def well_conditioned(shape, seed):
    """Random square matrices plus n on the diagonal."""
    return rnd(shape, seed) + shape[-1] * np.eye(shape[-1])


def spd(shape, seed):
    x = rnd(shape, seed)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def both(x, dtype):
    """float64 numpy values as a retorch device tensor and a torch cpu tensor of dtype."""
    return (retorch.tensor(x).to(getattr(retorch, dtype)).to(DEV),
            torch.tensor(x).to(getattr(torch, dtype)))


def host(r):
    """A retorch tensor of the device as a float64 (or int64) torch tensor."""
    assert r.device.type == DEV
    r = r.detach().cpu()
    if r.dtype in (retorch.int32, retorch.int64):
        return torch.tensor(r.to(retorch.int64).numpy())
    return torch.tensor(r.to(retorch.float64).numpy())


def close(got, want, tol):
    g, w = host(got), want.detach().to(torch.float64)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert torch.allclose(g, w, rtol=tol, atol=tol, equal_nan=True), (g - w).abs().max()


def mt(x):
    return x.transpose(-2, -1)


@pytest.mark.parametrize("dtype,tol", LAPACK)
@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (2, 1, 7, 7), (1, 1)])
def test_cholesky_lower_and_upper(shape, dtype, tol):
    x = spd(shape, 1)
    r, t = both(x, dtype)
    close(retorch.linalg.cholesky(r), torch.linalg.cholesky(t), tol)
    close(retorch.linalg.cholesky(r, upper=True), torch.linalg.cholesky(t, upper=True), tol)
    close(retorch.cholesky(r, upper=True), torch.linalg.cholesky(t, upper=True), tol)
    assert ran_on_device("aten::linalg_cholesky")
    # Only the lower triangle is read: garbage above it changes nothing (as the cpu kernel).
    g = x + np.triu(rnd(shape, 2), 1)
    rg, _ = both(g, dtype)
    close(retorch.linalg.cholesky(rg), torch.linalg.cholesky(t), tol)
    assert ran_on_device("aten::linalg_cholesky")


def test_cholesky_not_positive_definite_raises_the_cpu_error_and_the_device_goes_on():
    x = spd((3, 4, 4), 3)
    x[1] = -x[1]
    r, _ = both(x, "float64")
    with pytest.raises(RuntimeError, match="not positive-definite"):
        retorch.linalg.cholesky(r)
    retorch.reset_device_fallback_stats()
    ok, t = both(spd((4, 4), 4), "float64")
    close(retorch.linalg.cholesky(ok), torch.linalg.cholesky(t), 1e-10)
    close(ok @ ok, t @ t, 1e-10)
    assert ran_on_device("aten::linalg_cholesky")


@pytest.mark.parametrize("dtype,tol", LAPACK)
@pytest.mark.parametrize("shape", [(4, 4), (6, 4), (4, 6), (2, 3, 5, 5), (3, 5, 2)])
def test_lu_factor_and_unpack(shape, dtype, tol):
    r, t = both(rnd(shape, 5), dtype)
    LU, piv, info = retorch.linalg.lu_factor_ex(r)
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(t)
    close(LU, tLU, tol)
    assert piv.dtype == retorch.int32 and torch.equal(host(piv), tpiv.long())
    assert torch.equal(host(info), tinfo.long())
    P, L, U = retorch.lu_unpack(LU, piv)
    tP, tL, tU = torch.lu_unpack(tLU, tpiv)
    close(P, tP, 0)
    close(L, tL, tol)
    close(U, tU, tol)
    close(P @ L @ U, t, tol * 10)
    P0, L0, U0 = retorch.lu_unpack(LU, piv, unpack_data=False)
    assert tuple(L0.shape) == (0,) and tuple(U0.shape) == (0,)
    close(P0, tP, 0)
    P1, L1, U1 = retorch.lu_unpack(LU, piv, unpack_pivots=False)
    assert tuple(P1.shape) == (0,)
    close(L1, tL, tol)
    P2, L2, U2 = retorch.linalg.lu(r)
    close(P2 @ L2 @ U2, t, tol * 10)
    for op in ("aten::linalg_lu_factor_ex", "aten::lu_unpack"):
        assert ran_on_device(op), op


def test_lu_of_singular_matrices_infos_and_check_errors():
    x = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])
    r, t = both(x, "float64")
    LU, piv, info = retorch.linalg.lu_factor_ex(r)
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(t)
    close(LU, tLU, 1e-12)
    assert torch.equal(host(info), tinfo.long()) and torch.equal(host(piv), tpiv.long())
    assert ran_on_device("aten::linalg_lu_factor_ex")
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        retorch.linalg.lu_factor_ex(r, check_errors=True)
    with pytest.raises(RuntimeError, match=r"\(Batch element 0\): U\[2,2\] is zero"):
        retorch.linalg.lu_factor(r, pivot=False)
    retorch.reset_device_fallback_stats()
    ok, t = both(rnd((3, 3), 6), "float32")
    close(retorch.linalg.lu_factor(ok)[0], torch.linalg.lu_factor(t)[0], 2e-4)
    assert ran_on_device("aten::linalg_lu_factor_ex")


def column_dominant(shape, seed):
    """Random matrices whose diagonal dominates its column: partial pivoting swaps no rows, so
    torch's pivoted factors (which its cpu kernel computes) are the unpivoted ones."""
    return rnd(shape, seed) + 3 * max(shape[-2:]) * np.eye(shape[-2], shape[-1])


@pytest.mark.parametrize("dtype,tol", LAPACK)
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6), (2, 3, 5, 5)])
def test_lu_without_pivoting(shape, dtype, tol):
    r, t = both(column_dominant(shape, 40), dtype)
    tLU, tpiv = torch.linalg.lu_factor(t)
    k = min(shape[-2:])
    assert torch.equal(tpiv, torch.arange(1, k + 1, dtype=torch.int32).expand_as(tpiv))
    LU, piv, info = retorch.linalg.lu_factor_ex(r, pivot=False)
    close(LU, tLU, tol)
    assert piv.dtype == retorch.int32 and torch.equal(host(piv), tpiv.long())
    assert int(host(info).abs().sum()) == 0
    P, L, U = retorch.linalg.lu(r, pivot=False)
    _, tL, tU = torch.linalg.lu(t)
    assert tuple(P.shape) == (0,)
    close(L, tL, tol)
    close(U, tU, tol)
    assert ran_on_device("aten::linalg_lu_factor_ex")
    # A matrix partial pivoting would reorder: no rows swapped, L U is A itself.
    r2, t2 = both(rnd(shape, 41), dtype)
    assert (torch.linalg.lu_factor(t2)[1] != torch.arange(1, k + 1, dtype=torch.int32)).any()
    _, L2, U2 = retorch.linalg.lu(r2, pivot=False)
    close(L2 @ U2, t2, tol * 100)
    close(L2, torch.tril(host(L2), -1) + torch.eye(shape[-2], k), 0)
    close(U2, torch.triu(host(U2)), 0)
    if torch.cuda.is_available():  # PyTorch's own unpivoted CUDA factors, when it has them
        cLU, cpiv = torch.linalg.lu_factor(t2.cuda(), pivot=False)
        close(retorch.linalg.lu_factor(r2, pivot=False)[0], cLU.cpu(), tol * 100)


def test_lu_without_pivoting_gradients_and_errors():
    x = column_dominant((2, 4, 4), 42)
    r = retorch.tensor(x).to(DEV).requires_grad_()
    t = torch.tensor(x).requires_grad_()
    wr, wt = both(rnd((2, 4, 4), 43), "float64")
    (retorch.linalg.lu_factor(r, pivot=False)[0] * wr).sum().backward()
    (torch.linalg.lu_factor(t)[0] * wt).sum().backward()  # the same factors: no swaps
    close(r.grad, t.grad, 1e-8)
    # [[0, 1], [1, 0]] has no unpivoted LU: U[1,1] is zero, which check_errors reports.
    s, _ = both(np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]), "float64")
    _, piv, info = retorch.linalg.lu_factor_ex(s, pivot=False)
    assert host(info).tolist() == [0, 1] and host(piv).tolist() == [[1, 2], [1, 2]]
    with pytest.raises(RuntimeError, match=r"lu_factor_ex: \(Batch element 1\): U\[1,1\] is zero"):
        retorch.linalg.lu_factor_ex(s, pivot=False, check_errors=True)
    with pytest.raises(RuntimeError, match=r"lu_factor_ex: U\[1,1\] is zero"):
        retorch.linalg.lu_factor_ex(s[1], pivot=False, check_errors=True)
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        retorch.linalg.lu_factor(s.cpu(), pivot=False)
    ok, t = both(rnd((3, 3), 44), "float32")
    close(retorch.linalg.lu_factor(ok)[0], torch.linalg.lu_factor(t)[0], 2e-4)  # still usable


@pytest.mark.parametrize("dtype,tol", LAPACK)
def test_solve_broadcast_vectors_and_right(dtype, tol):
    for a_shape, b_shape in [((5, 5), (5, 3)), ((2, 1, 4, 4), (3, 4, 2)), ((4, 4), (2, 4, 1))]:
        ra, ta = both(well_conditioned(a_shape, 7), dtype)
        rb, tb = both(rnd(b_shape, 8), dtype)
        close(retorch.linalg.solve(ra, rb), torch.linalg.solve(ta, tb), tol)
    ra, ta = both(well_conditioned((3, 6, 6), 9), dtype)
    rb, tb = both(rnd((3, 6), 10), dtype)
    close(retorch.linalg.solve(ra, rb), torch.linalg.solve(ta, tb), tol)  # a vector per matrix
    rb, tb = both(rnd((3, 2, 6), 11), dtype)
    close(retorch.linalg.solve(ra, rb, left=False), torch.linalg.solve(ta, tb, left=False), tol)
    close(retorch.linalg.solve(mt(ra), mt(rb)), torch.linalg.solve(mt(ta), mt(tb)), tol)
    assert ran_on_device("aten::_linalg_solve")


@pytest.mark.parametrize("dtype,tol", LAPACK)
def test_inv_det_and_slogdet(dtype, tol):
    for shape in [(5, 5), (2, 3, 4, 4), (1, 1)]:
        r, t = both(well_conditioned(shape, 12), dtype)
        close(retorch.linalg.inv(r), torch.linalg.inv(t), tol)
        close(retorch.inverse(r), torch.inverse(t), tol)
        close(retorch.linalg.inv(mt(r)), torch.linalg.inv(mt(t)), tol)  # a transposed view
        x = rnd(shape, 13)  # determinants of both signs
        r, t = both(x, dtype)
        close(retorch.linalg.det(r), torch.linalg.det(t.double()), tol * 10)
        s, l = retorch.linalg.slogdet(r)
        ts, tl = torch.linalg.slogdet(t.double())
        close(s, ts, 0)
        close(l, tl, tol * 10)
    for op in ("aten::linalg_inv", "aten::linalg_det", "aten::linalg_slogdet"):
        assert ran_on_device(op), op


def test_singular_matrices_det_zero_inv_and_solve_raise():
    x = np.stack([np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]]), np.eye(3)])
    r, t = both(x, "float64")
    close(retorch.linalg.det(r), torch.linalg.det(t), 1e-12)
    s, l = retorch.linalg.slogdet(r)
    ts, tl = torch.linalg.slogdet(t)
    close(s, ts, 0)
    close(l, tl, 1e-12)  # -inf for the singular one
    assert ran_on_device("aten::linalg_det") and ran_on_device("aten::linalg_slogdet")
    with pytest.raises(RuntimeError, match="singular"):
        retorch.linalg.inv(r)
    with pytest.raises(RuntimeError, match="singular"):
        retorch.linalg.solve(r, retorch.ones((2, 3, 1), dtype=retorch.float64, device=DEV))
    retorch.reset_device_fallback_stats()
    ok, t = both(well_conditioned((3, 3), 14), "float64")
    close(retorch.linalg.inv(ok), torch.linalg.inv(t), 1e-10)
    assert ran_on_device("aten::linalg_inv")


@pytest.mark.parametrize("dtype,tol", LAPACK)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit, dtype, tol):
    for a_shape, b_shape in [((5, 5), (5, 3) if left else (3, 5)),
                             ((2, 1, 4, 4), (3, 4, 4)), ((4, 4), (2, 4, 4))]:
        a = rnd(a_shape, 15) + 4 * np.eye(a_shape[-1])  # the other triangle is never read
        ra, ta = both(a, dtype)
        rb, tb = both(rnd(b_shape, 17), dtype)
        got = retorch.linalg.solve_triangular(ra, rb, upper=upper, left=left, unitriangular=unit)
        want = torch.linalg.solve_triangular(ta.double(), tb.double(), upper=upper, left=left,
                                             unitriangular=unit)
        close(got, want, tol * 10)
    assert ran_on_device("aten::linalg_solve_triangular")


def identities(batch, n):
    return torch.eye(n, dtype=torch.float64).expand(tuple(batch) + (n, n))


def _abs_close(got, want, tol):
    close(got.abs(), want.abs(), tol)


@pytest.mark.parametrize("dtype,tol", LAPACK)
@pytest.mark.parametrize("shape", [(5, 5), (7, 4), (4, 7), (2, 3, 6, 3), (2, 3, 6)])
def test_qr_modes(shape, dtype, tol):
    r, t = both(rnd(shape, 18), dtype)
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    for mode in ("reduced", "complete", "r"):
        Q, R = retorch.linalg.qr(r, mode=mode)
        tQ, tR = torch.linalg.qr(t.double(), mode=mode)
        assert tuple(Q.shape) == tuple(tQ.shape) and tuple(R.shape) == tuple(tR.shape)
        _abs_close(R, tR, tol * 10)  # rows unique up to sign
        close(R, torch.triu(host(R)), 0)
        if mode == "r":
            continue
        close(Q @ R, t, tol * 10)
        close(mt(Q) @ Q, identities(tQ.shape[:-2], tQ.shape[-1]), tol * 10)
        _abs_close(Q[..., :k], tQ[..., :k], tol * 10)
    assert ran_on_device("aten::linalg_qr")


@pytest.mark.parametrize("dtype,tol", LAPACK)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo, dtype, tol):
    for shape in [(6, 6), (2, 3, 5, 5), (1, 1)]:
        x = rnd(shape, 19)
        sym = x + np.swapaxes(x, -1, -2)
        tri = np.tril if uplo == "L" else np.triu
        a = tri(sym) + (np.triu(rnd(shape, 20), 1) if uplo == "L" else np.tril(rnd(shape, 20), -1))
        r, t = both(a, dtype)
        w, V = retorch.linalg.eigh(r, UPLO=uplo)
        tw, tV = torch.linalg.eigh(t.double(), UPLO=uplo)
        close(w, tw, tol * 10)
        _abs_close(V, tV, tol * 100)  # distinct eigenvalues: columns unique up to sign
        ts = torch.tensor(sym)
        close(V @ torch_diag_embed(w) @ mt(V), ts, tol * 10)
        close(retorch.linalg.eigvalsh(r, UPLO=uplo), tw, tol * 10)
    assert ran_on_device("aten::_linalg_eigh")


def torch_diag_embed(w):
    """diag_embed on the device: eigenvalues as a batch of diagonal matrices."""
    n = w.shape[-1]
    return w.unsqueeze(-1) * retorch.eye(n, dtype=w.dtype, device=DEV)


@pytest.mark.parametrize("dtype,tol", LAPACK)
@pytest.mark.parametrize("shape", [(5, 5), (7, 4), (4, 7), (2, 3, 6, 3), (2, 3, 8)])
def test_svd(shape, dtype, tol):
    r, t = both(rnd(shape, 21), dtype)
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    for full in (False, True):
        U, S, Vh = retorch.linalg.svd(r, full_matrices=full)
        tU, tS, tVh = torch.linalg.svd(t.double(), full_matrices=full)
        assert tuple(U.shape) == tuple(tU.shape) and tuple(Vh.shape) == tuple(tVh.shape)
        close(S, tS, tol * 10)
        close((U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :], t, tol * 10)
        close(mt(U) @ U, identities(tU.shape[:-2], tU.shape[-1]), tol * 10)
        close(Vh @ mt(Vh), identities(tVh.shape[:-2], tVh.shape[-2]), tol * 10)
        _abs_close(U[..., :k], tU[..., :k], tol * 100)  # distinct values: unique up to sign
        _abs_close(Vh[..., :k, :], tVh[..., :k, :], tol * 100)
    close(retorch.linalg.svdvals(r), torch.linalg.svdvals(t.double()), tol * 10)
    U, S, Vh = retorch.linalg.svd(mt(r), full_matrices=False)  # a transposed view
    close((U * S.unsqueeze(-2)) @ Vh, mt(t), tol * 10)
    assert ran_on_device("aten::_linalg_svd")


def test_gradients_through_autograd():
    """The backward formulas are composites over other ops: float64 gradients against torch."""
    cases = [
        ("cholesky", spd((2, 4, 4), 22), lambda L, a: L.linalg.cholesky(a)),
        ("inv", well_conditioned((2, 4, 4), 23), lambda L, a: L.linalg.inv(a)),
        ("det", rnd((2, 4, 4), 24), lambda L, a: L.linalg.det(a)),
        ("slogdet", well_conditioned((4, 4), 25), lambda L, a: L.linalg.slogdet(a)[1]),
        ("solve", well_conditioned((2, 4, 4), 26),
         lambda L, a: L.linalg.solve(a, L.ones((2, 4, 3), dtype=a.dtype, device=a.device))),
    ]
    for name, x, f in cases:
        r = retorch.tensor(x).to(DEV).requires_grad_()
        t = torch.tensor(x).requires_grad_()
        wr, wt = both(rnd(tuple(f(torch, t).shape), 27), "float64")
        (f(retorch, r) * wr).sum().backward()
        (f(torch, t) * wt).sum().backward()
        close(r.grad, t.grad, 1e-8)


def test_other_dtypes_and_empty_inputs_take_the_fallback():
    r, t = both(spd((4, 4), 28), "float16")
    close(retorch.linalg.cholesky(r), torch.linalg.cholesky(t.float()), 5e-3)
    e, te = both(np.zeros((0, 3, 3)), "float32")
    assert tuple(retorch.linalg.inv(e).shape) == (0, 3, 3)
    assert tuple(retorch.linalg.det(e).shape) == (0,)
