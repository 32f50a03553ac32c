"""Oracle tests for the LAPACK-backed ops: triangular and general solves, inverse, determinants,
Cholesky, QR, SVD and symmetric eigendecomposition (values, invariants where sign conventions
are free, gradients against torch, float64 gradcheck, errors)."""
import numpy as np
import torch

import retorch
from custom_helpers import I, P, aten, both, gradcheck, grads, raises_like_torch
from test_ops_linalg import second_order

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_solve_triangular": ["linalg_solve_triangular", "triangular_solve"],
    "test_solve": ["linalg_solve", "_linalg_solve"],
    "test_inv": ["linalg_inv", "inverse"],
    "test_det_slogdet": ["linalg_det", "det", "linalg_slogdet", "slogdet"],
    "test_cholesky": ["linalg_cholesky", "cholesky"],
    "test_qr": ["linalg_qr"],
    "test_svd": ["_linalg_svd", "linalg_svd", "linalg_svdvals", "svd"],
    "test_eigh": ["_linalg_eigh", "linalg_eigh", "linalg_eigvalsh"],
}

TOL = {"rtol": 1e-4, "atol": 1e-4}
DT = ("float32", "float64")


def wellcond(rng, shape, dt="float32", layout="contig"):
    """Random matrices plus n*I: comfortably invertible."""
    n = shape[-1]
    a = rng.uniform(-1, 1, shape) + n * np.eye(n)
    return I(a, dt, layout)


def spd(rng, shape, dt="float32", layout="contig"):
    """Symmetric positive definite: A A^T + n I."""
    n = shape[-1]
    a = rng.uniform(-1, 1, shape)
    return I(a @ np.swapaxes(a, -1, -2) + n * np.eye(n), dt, layout)


def tri(rng, shape, upper, dt="float32"):
    n = shape[-1]
    a = rng.uniform(-1, 1, shape) + 3 * np.eye(n)
    return I(np.triu(a) if upper else np.tril(a), dt)


def mT(x):
    return x.transpose(-2, -1)


def tri_mask(L, n, upper):
    m = np.triu(np.ones((n, n))) if upper else np.tril(np.ones((n, n)))
    return L.from_numpy(m)


def strict_upper(L):
    return L.from_numpy(np.triu(np.ones((3, 3), dtype=np.float32), 1))


# ---------------------------------------------------------------- solvers

def test_solve_triangular(rng):
    for dt in DT:
        for upper in (True, False):
            A = tri(rng, (2, 4, 4), upper, dt)
            for left in (True, False):
                B = P(rng, (2, 4, 3) if left else (2, 3, 4), dt, "transposed")
                for unit in (False, True):
                    both(lambda L, A, B: L.linalg.solve_triangular(
                        A, B, upper=upper, left=left, unitriangular=unit), A, B, **TOL)
            # The other triangle is never read.
            both(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=upper),
                 wellcond(rng, (4, 4), dt), P(rng, (4, 2), dt), **TOL)
            both(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=upper),
                 A, P(rng, (3, 1, 4, 2), dt), what="broadcast batch", **TOL)
            for transpose in (False, True):
                for unit in (False, True):
                    both(lambda L, B, A: L.triangular_solve(B, A, upper, transpose, unit),
                         P(rng, (2, 4, 3), dt), A, **TOL)
                    both(lambda L, B, A: B.triangular_solve(A, upper=upper, transpose=transpose),
                         P(rng, (4, 3), dt), tri(rng, (4, 4), upper, dt), **TOL)
    both(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True), P(rng, (0, 0)),
         P(rng, (0, 2)))
    both(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True), P(rng, (3, 3)),
         P(rng, (3, 0)))
    raises_like_torch(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True),
                      P(rng, (3, 4)), P(rng, (3, 2)), what="non-square")
    raises_like_torch(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True),
                      P(rng, (3, 3)), P(rng, (4, 2)), what="shape mismatch")
    both(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True), tri(rng, (3, 3), True),
         P(rng, (3, 2), "float64"), what="mixed dtypes take A's dtype", **TOL)
    raises_like_torch(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True),
                      P(rng, (3, 3), "int64"), P(rng, (3, 2), "int64"), what="integer")
    for upper in (True, False):
        for left in (True, False):
            for unit in (False, True):
                grads(lambda L, A, B: L.linalg.solve_triangular(
                    A, B, upper=upper, left=left, unitriangular=unit),
                    tri(rng, (2, 3, 3), upper), P(rng, (3, 2) if left else (2, 3)),
                    what=f"upper={upper} left={left} unit={unit}")
        grads(lambda L, B, A: L.triangular_solve(B, A, upper, True), P(rng, (3, 2)),
              tri(rng, (3, 3), upper))
    gradcheck(lambda L, A, B: L.linalg.solve_triangular(A * tri_mask(L, 3, True), B, upper=True),
              wellcond(rng, (3, 3), "float64"), P(rng, (3, 2), "float64"))
    gradcheck(lambda L, A, B: L.linalg.solve_triangular(A * tri_mask(L, 3, False), B,
                                                        upper=False, left=False),
              wellcond(rng, (2, 3, 3), "float64"), P(rng, (2, 3), "float64"))


def test_solve(rng):
    for dt in DT:
        A = wellcond(rng, (2, 4, 4), dt, "transposed")
        for shape in ((2, 4, 3), (4, 3), (2, 4), (4,), (3, 2, 4, 1)):
            both(lambda L, A, B: L.linalg.solve(A, B), A, P(rng, shape, dt), what=str(shape),
                 **TOL)
        both(lambda L, A, B: L.linalg.solve(A, B, left=False), A, P(rng, (2, 3, 4), dt), **TOL)
        both(lambda L, A, B: L.linalg.solve(A, B, left=False), A, P(rng, (4,), dt), **TOL)
        both(lambda L, A, B: aten(L, "_linalg_solve")(A, B) if L is retorch else
             L.linalg.solve(A, B), A, P(rng, (2, 4, 2), dt), **TOL)
    both(lambda L, A, B: L.linalg.solve(A, B), P(rng, (0, 0)), P(rng, (0, 2)))
    sing = I([[1.0, 2.0], [2.0, 4.0]])
    raises_like_torch(lambda L, A, B: L.linalg.solve(A, B), sing, P(rng, (2, 1)), what="singular")
    raises_like_torch(lambda L, A, B: L.linalg.solve(A, B), P(rng, (3, 4)), P(rng, (3, 1)),
                      what="non-square")
    raises_like_torch(lambda L, A, B: L.linalg.solve(A, B), P(rng, (3, 3)), P(rng, (4, 1)),
                      what="shape mismatch")
    raises_like_torch(lambda L, A, B: L.linalg.solve(A, B), P(rng, (3,)), P(rng, (3,)),
                      what="1-D A")
    grads(lambda L, A, B: L.linalg.solve(A, B), wellcond(rng, (2, 3, 3)), P(rng, (3, 2)))
    grads(lambda L, A, B: L.linalg.solve(A, B), wellcond(rng, (3, 3)), P(rng, (2, 3, 2)))
    grads(lambda L, A, B: L.linalg.solve(A, B, left=False), wellcond(rng, (3, 3)),
          P(rng, (2, 3)))
    grads(lambda L, A, B: L.linalg.solve(A, B), wellcond(rng, (3, 3)), P(rng, (3,)))
    gradcheck(lambda L, A, B: L.linalg.solve(A, B), wellcond(rng, (2, 3, 3), "float64"),
              P(rng, (3, 2), "float64"))
    gradcheck(lambda L, A, B: L.linalg.solve(A, B, left=False), wellcond(rng, (3, 3), "float64"),
              P(rng, (2, 3), "float64"))
    second_order(lambda L, A: L.linalg.solve(A, L.ones(3, 2, dtype=L.float64)),
                 wellcond(rng, (3, 3), "float64"))


def test_inv(rng):
    for dt in DT:
        for shape in ((4, 4), (2, 3, 3), (1, 1), (0, 0), (2, 0, 0)):
            A = wellcond(rng, shape, dt, "transposed") if shape[-1] else P(rng, shape, dt)
            both(lambda L, A: L.linalg.inv(A), A, **TOL)
            both(lambda L, A: L.inverse(A), A, **TOL)
            both(lambda L, A: A.inverse(), A, **TOL)
    sing = I([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]]])
    raises_like_torch(lambda L, A: L.linalg.inv(A), sing, what="singular batch element")
    raises_like_torch(lambda L, A: L.linalg.inv(A), P(rng, (2, 3)), what="non-square")
    raises_like_torch(lambda L, A: L.linalg.inv(A), P(rng, (3,)), what="1-D")
    raises_like_torch(lambda L, A: L.inverse(A), P(rng, (2, 2), "int64"), what="integer")
    grads(lambda L, A: L.linalg.inv(A), wellcond(rng, (2, 3, 3), layout="transposed"))
    gradcheck(lambda L, A: L.linalg.inv(A), wellcond(rng, (3, 3), "float64"))
    second_order(lambda L, A: L.linalg.inv(A), wellcond(rng, (3, 3), "float64"))


def test_det_slogdet(rng):
    for dt in DT:
        for shape in ((4, 4), (2, 3, 3), (1, 1), (0, 0)):
            A = P(rng, shape, dt, "transposed")
            both(lambda L, A: L.linalg.det(A), A, **TOL)
            both(lambda L, A: L.det(A), A, **TOL)
            both(lambda L, A: A.det(), A, **TOL)
            both(lambda L, A: L.linalg.slogdet(A), A, **TOL)
            both(lambda L, A: L.slogdet(A), A, **TOL)
            both(lambda L, A: A.slogdet(), A, **TOL)
        sing = I([[1.0, 2.0], [2.0, 4.0]], dt)
        both(lambda L, A: L.linalg.det(A), sing, what="singular")
        both(lambda L, A: L.linalg.slogdet(A), sing, what="singular")
        both(lambda L, A: L.linalg.slogdet(A), I([[0.0, 1.0], [1.0, 0.0]], dt),
             what="negative det")
    raises_like_torch(lambda L, A: L.linalg.det(A), P(rng, (2, 3)), what="non-square")
    raises_like_torch(lambda L, A: L.det(A), P(rng, (2, 2), "int64"), what="integer")
    grads(lambda L, A: L.linalg.det(A), wellcond(rng, (2, 3, 3), layout="transposed"))
    grads(lambda L, A: L.linalg.slogdet(A)[1], wellcond(rng, (2, 3, 3)))
    grads(lambda L, A: L.linalg.slogdet(A), wellcond(rng, (3, 3)))
    gradcheck(lambda L, A: L.linalg.det(A), wellcond(rng, (2, 3, 3), "float64"))
    second_order(lambda L, A: L.linalg.det(A), wellcond(rng, (3, 3), "float64"))
    # Singular matrices: the gradient is still the cofactor matrix. torch 1.13's value there
    # comes from an LU solve with a zero pivot (implementation noise), so the reference is
    # the cofactor matrix computed from 2x2 minors in numpy.
    for sing in ([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]],
                 [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]):
        a = np.array(sing)
        cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                         for j in range(3)] for i in range(3)])
        x = retorch.from_numpy(a.copy()).requires_grad_(True)
        retorch.linalg.det(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), cof, atol=1e-10)
        xb = retorch.from_numpy(np.stack([a, 2 * np.eye(3)])).requires_grad_(True)
        retorch.linalg.det(xb).sum().backward()
        np.testing.assert_allclose(xb.grad.numpy()[0], cof, atol=1e-10)
        np.testing.assert_allclose(xb.grad.numpy()[1], 4 * np.eye(3), atol=1e-10)
    gradcheck(lambda L, A: L.linalg.slogdet(A)[1], P(rng, (3, 3), "float64"))


# ---------------------------------------------------------------- decompositions

def test_cholesky(rng):
    for dt in DT:
        for shape in ((4, 4), (2, 3, 3), (1, 1), (0, 0)):
            A = spd(rng, shape, dt)
            for upper in (False, True):
                both(lambda L, A: L.linalg.cholesky(A, upper=upper), A, **TOL)
                both(lambda L, A: L.cholesky(A, upper), A, **TOL)
                both(lambda L, A: A.cholesky(upper=upper), A, **TOL)
        # Only the lower triangle is read.
        both(lambda L, A: L.linalg.cholesky(A + strict_upper(L) * 5), spd(rng, (3, 3), dt),
             **TOL)
    not_pd = I([[[4.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])
    raises_like_torch(lambda L, A: L.linalg.cholesky(A), not_pd, what="not positive-definite")
    raises_like_torch(lambda L, A: L.linalg.cholesky(A), P(rng, (2, 3)), what="non-square")
    raises_like_torch(lambda L, A: L.cholesky(A), P(rng, (2, 2), "int64"), what="integer")
    for upper in (False, True):
        grads(lambda L, A: L.linalg.cholesky(A, upper=upper), spd(rng, (2, 3, 3)))
    gradcheck(lambda L, X: L.linalg.cholesky(X @ mT(X) + 3 * L.eye(3, dtype=L.float64)),
              P(rng, (2, 3, 3), "float64"))
    gradcheck(lambda L, X: L.cholesky(X @ mT(X) + 3 * L.eye(3, dtype=L.float64), True),
              P(rng, (3, 3), "float64"))
    second_order(lambda L, A: L.linalg.cholesky(A), spd(rng, (3, 3), "float64"))


def test_qr(rng):
    for dt in DT:
        for shape in ((5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 5), (0, 3), (3, 0)):
            A = P(rng, shape, dt, "transposed")
            for mode in ("reduced", "complete", "r"):
                both(lambda L, A: L.linalg.qr(A, mode)[1], A, what=f"R {shape} {mode}", **TOL)
                if mode != "r":
                    both(lambda L, A: L.linalg.qr(A, mode=mode)[0], A, what=f"Q {shape} {mode}",
                         **TOL)
                    # Invariants: Q R = A and Q orthonormal columns.
                    both(lambda L, A: (lambda q, r: (q @ r, mT(q) @ q))(*L.linalg.qr(A, mode)),
                         A, what=f"QR=A {shape} {mode}", **TOL)
    raises_like_torch(lambda L, A: L.linalg.qr(A, "bad"), P(rng, (3, 3)), what="mode")
    raises_like_torch(lambda L, A: L.linalg.qr(A), P(rng, (3,)), what="1-D")
    raises_like_torch(lambda L, A: L.linalg.qr(A), P(rng, (3, 3), "int64"), what="integer")
    for shape in ((5, 3), (3, 3), (3, 5), (2, 4, 2), (2, 2, 4)):
        grads(lambda L, A: L.linalg.qr(A), P(rng, shape), what=f"qr {shape}")
        grads(lambda L, A: L.linalg.qr(A)[0], P(rng, shape), what=f"Q only {shape}")
        grads(lambda L, A: L.linalg.qr(A)[1], P(rng, shape), what=f"R only {shape}")
    grads(lambda L, A: L.linalg.qr(A, "complete"), P(rng, (3, 5)))
    for L in (torch, retorch):
        A = L.ones(4, 2, dtype=L.float64).requires_grad_(True) if L is torch else \
            retorch.ones(4, 2, dtype=retorch.float64).requires_grad_(True)
        for mode in ("r", "complete"):
            try:
                L.autograd.grad(L.linalg.qr(A + 0, mode)[1].sum(), [A])
            except RuntimeError:
                continue
            raise AssertionError(f"{L.__name__}: qr mode={mode} backward should raise")
    gradcheck(lambda L, A: L.linalg.qr(A), P(rng, (4, 3), "float64"))
    gradcheck(lambda L, A: L.linalg.qr(A), P(rng, (2, 3, 4), "float64"))


def svd_distinct(rng, shape, dt="float32"):
    """Matrices with well separated singular values (3, 2, 1.5, ...) and random vectors."""
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    u = np.linalg.qr(rng.standard_normal(batch + (m, m)))[0][..., :k]
    v = np.linalg.qr(rng.standard_normal(batch + (n, n)))[0][..., :k]
    s = 1.0 + np.arange(k, 0, -1) * 0.7
    return I((u * s[None, :] if not batch else u * s) @ np.swapaxes(v, -1, -2), dt)


def test_svd(rng):
    for dt in DT:
        for shape in ((5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 4), (0, 3), (3, 0)):
            A = P(rng, shape, dt, "transposed")
            both(lambda L, A: L.linalg.svdvals(A), A, what=f"svdvals {shape}", **TOL)
            both(lambda L, A: L.linalg.svd(A)[1], A, **TOL)
            for full in (True, False):
                # Reconstruction and orthogonality are convention-free; |U|, |Vh| fix the sign.
                both(lambda L, A: [t.shape for t in L.linalg.svd(A, full_matrices=full)], A)
                both(lambda L, A: (lambda u, s, vh: (
                    (u[..., :s.shape[-1]] * s.unsqueeze(-2)) @ vh[..., :s.shape[-1], :],
                    mT(u) @ u, vh @ mT(vh)))(*L.linalg.svd(A, full)), A,
                    what=f"USVh=A {shape} full={full}", **TOL)
            for some in (True, False):
                both(lambda L, A: [t.shape for t in L.svd(A, some)], A)
                both(lambda L, A: (lambda u, s, v: (
                    (u[..., :s.shape[-1]] * s.unsqueeze(-2)) @ mT(v[..., :s.shape[-1]])))(
                    *L.svd(A, some=some)), A, what=f"svd some={some}", **TOL)
            both(lambda L, A: L.svd(A, compute_uv=False), A, what="compute_uv=False", **TOL)
            both(lambda L, A: A.svd()[1], A, **TOL)
            both(lambda L, A: aten(L, "_linalg_svd")(A)[1], A, **TOL)
        A = svd_distinct(rng, (4, 3), dt)
        both(lambda L, A: [t.abs() for t in L.linalg.svd(A, full_matrices=False)], A, **TOL)
    raises_like_torch(lambda L, A: L.linalg.svd(A), P(rng, (3,)), what="1-D")
    raises_like_torch(lambda L, A: L.linalg.svd(A), P(rng, (3, 3), "int64"), what="integer")
    raises_like_torch(lambda L, A: L.linalg.svd(A, driver="gesvd"), P(rng, (3, 3)),
                      what="driver on CPU")
    for shape in ((4, 3), (3, 4), (3, 3), (2, 4, 2)):
        A = svd_distinct(rng, shape)
        grads(lambda L, A: L.linalg.svdvals(A), A, what=f"svdvals {shape}")
        # Gauge-invariant functions of the vectors: |U|, |Vh| and U diag(S) Vh.
        grads(lambda L, A: (lambda u, s, vh: (u.abs(), s, vh.abs(), (u * s.unsqueeze(-2)) @ vh))(
            *L.linalg.svd(A, full_matrices=False)), A, what=f"svd {shape}")
        grads(lambda L, A: L.linalg.svd(A, full_matrices=False)[0].abs(), A, what="U only")
        grads(lambda L, A: L.linalg.svd(A, full_matrices=False)[2].abs(), A, what="Vh only")
        grads(lambda L, A: (lambda u, s, v: (u.abs(), s, v.abs()))(*L.svd(A)), A,
              what="torch.svd")
        # full_matrices: only the first min(m, n) vectors carry gradient, as in torch.
        grads(lambda L, A: [t.abs() for t in L.linalg.svd(A, full_matrices=True)], A,
              what=f"full_matrices {shape}")
        grads(lambda L, A: L.svd(A, some=False)[0].abs(), A, what="torch.svd some=False")
    d = svd_distinct(rng, (4, 3), "float64")
    gradcheck(lambda L, A: L.linalg.svdvals(A), d)
    gradcheck(lambda L, A: (lambda u, s, vh: (u.abs(), s, vh.abs()))(
        *L.linalg.svd(A, full_matrices=False)), d)
    gradcheck(lambda L, A: (lambda u, s, vh: (u.abs(), vh.abs()))(
        *L.linalg.svd(A, full_matrices=False)), svd_distinct(rng, (2, 3, 4), "float64"))


def test_eigh(rng):
    for dt in DT:
        for shape in ((4, 4), (2, 3, 3), (1, 1), (0, 0)):
            A = spd(rng, shape, dt)
            for uplo in ("L", "U"):
                both(lambda L, A: L.linalg.eigvalsh(A, uplo), A, **TOL)
                both(lambda L, A: L.linalg.eigh(A, UPLO=uplo)[0], A, **TOL)
                both(lambda L, A: L.linalg.eigh(A, uplo)[1].abs(), A, **TOL)
                # V diag(w) V^T = A (convention-free).
                both(lambda L, A: (lambda w, v: (v * w.unsqueeze(-2)) @ mT(v))(
                    *L.linalg.eigh(A, uplo)), A, **TOL)
                both(lambda L, A: aten(L, "_linalg_eigh")(A, uplo)[0], A, **TOL)
        # Only the named triangle is read.
        X = P(rng, (3, 3), dt)
        both(lambda L, A: L.linalg.eigvalsh(A, "U"), X, **TOL)
        both(lambda L, A: L.linalg.eigvalsh(A, "L"), X, **TOL)
    raises_like_torch(lambda L, A: L.linalg.eigh(A, "X"), spd(rng, (3, 3)), what="UPLO")
    raises_like_torch(lambda L, A: L.linalg.eigh(A), P(rng, (3, 4)), what="non-square")
    raises_like_torch(lambda L, A: L.linalg.eigh(A), P(rng, (3, 3), "int64"), what="integer")
    for shape in ((3, 3), (2, 4, 4)):
        A = spd(rng, shape)
        grads(lambda L, A: L.linalg.eigvalsh(A), A, what="eigvalsh")
        grads(lambda L, A: (lambda w, v: (w, v.abs()))(*L.linalg.eigh(A)), A, what="eigh")
        grads(lambda L, A: L.linalg.eigh(A)[1].abs(), A, what="vectors only")
    sym = lambda L, X: X + mT(X)  # noqa: E731
    gradcheck(lambda L, X: L.linalg.eigvalsh(sym(L, X)), P(rng, (3, 3), "float64"))
    gradcheck(lambda L, X: (lambda w, v: (w, v.abs()))(*L.linalg.eigh(sym(L, X))),
              P(rng, (2, 3, 3), "float64"))


def test_low_precision(rng):
    """Half/bfloat16: where torch 1.13 only lacks the kernel, the harness compares with torch
    computed in float32 (retorch computes in float and rounds once); inv, slogdet and the
    spectral matrix norms refuse them in both."""
    for dt in ("float16", "bfloat16"):
        A, S = wellcond(rng, (2, 3, 3), dt), spd(rng, (3, 3), dt)
        B = P(rng, (2, 3, 2), dt)
        tol = {"rtol": 3e-2, "atol": 3e-2}
        both(lambda L, A: L.linalg.det(A), A, **tol)
        both(lambda L, A, B: L.linalg.solve(A, B), A, B, **tol)
        both(lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True), A, B, **tol)
        both(lambda L, A: L.linalg.cholesky(A), S, **tol)
        both(lambda L, A: L.linalg.qr(A)[1].abs(), A, **tol)
        both(lambda L, A: L.linalg.svdvals(A), A, **tol)
        both(lambda L, A: L.linalg.eigvalsh(A), S, **tol)
        for f in (lambda L, A: L.linalg.inv(A), lambda L, A: L.linalg.slogdet(A),
                  lambda L, A: L.linalg.matrix_norm(A, 2),
                  lambda L, A: L.linalg.matrix_norm(A, "nuc")):
            raises_like_torch(f, A, what=f"{dt} refused")
