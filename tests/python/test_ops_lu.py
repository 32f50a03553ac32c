"""Oracle tests for the LU family: linalg.lu_factor(_ex), lu_unpack, linalg.lu, linalg.lu_solve,
torch.lu and torch.lu_solve (factors, pivots and infos equal to torch's, square/tall/wide and
batched, gradients against torch, float64 gradcheck and gradgradcheck, errors)."""
import numpy as np
import pytest

import retorch
from custom_helpers import I, P, both, gradcheck, gradgradcheck, grads, raises_like_torch

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_lu_factor": ["linalg_lu_factor_ex", "linalg_lu_factor"],
    "test_lu_unpack": ["lu_unpack"],
    "test_lu": ["linalg_lu"],
    "test_lu_solve": ["linalg_lu_solve", "lu_solve"],
}

SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 4), (2, 3, 6, 4), (1, 1), (0, 3), (2, 0, 0)]


def mats(rng, shape, dt="float64"):
    return P(rng, shape, dt)


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_lu_factor(rng, dt):
    for shape in SHAPES:
        A = mats(rng, shape, dt)
        tol = {"rtol": 1e-2, "atol": 1e-2} if dt in ("float16", "bfloat16") else {}
        both(lambda L, A: L.linalg.lu_factor(A), A, what=f"lu_factor {shape}", **tol)
        both(lambda L, A: L.linalg.lu_factor_ex(A), A, what=f"lu_factor_ex {shape}", **tol)
        both(lambda L, A: L.lu(A, get_infos=True), A, what=f"torch.lu {shape}", **tol)
        both(lambda L, A: A.lu(), A, what=f"Tensor.lu {shape}", **tol)
    # Singular matrices: info names the first zero pivot; lu_factor and check_errors raise.
    S = I([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]], dt)
    both(lambda L, A: L.linalg.lu_factor_ex(A), S)
    both(lambda L, A: L.lu(A, get_infos=True), S)
    both(lambda L, A: L.lu(A), S)
    for f in (lambda L, A: L.linalg.lu_factor(A),
              lambda L, A: L.linalg.lu_factor_ex(A, check_errors=True),
              lambda L, A: L.linalg.lu_factor(A[0])):
        raises_like_torch(f, S)
    with pytest.raises(RuntimeError, match=r"\(Batch element 0\): U\[2,2\] is zero"):
        retorch.linalg.lu_factor(S.r)


def test_lu_factor_errors(rng):
    A = mats(rng, (3, 3))
    raises_like_torch(lambda L, A: L.linalg.lu_factor(A, pivot=False), A)
    raises_like_torch(lambda L, A: L.linalg.lu_factor(A[0]), A)
    raises_like_torch(lambda L: L.linalg.lu_factor(L.ones(3, 3, dtype=L.int64)))
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        retorch.linalg.lu_factor(A.r, pivot=False)


def test_lu_unpack(rng):
    for shape in SHAPES:
        A = mats(rng, shape)
        both(lambda L, A: L.lu_unpack(*L.linalg.lu_factor(A)), A, what=f"{shape}")
        both(lambda L, A: L.lu_unpack(*L.linalg.lu_factor(A), unpack_data=False), A)
        both(lambda L, A: L.lu_unpack(*L.linalg.lu_factor(A), unpack_pivots=False), A)
    A = mats(rng, (4, 3))
    raises_like_torch(lambda L, A: L.lu_unpack(L.linalg.lu_factor(A)[0],
                                               L.linalg.lu_factor(A)[1].long()), A)
    raises_like_torch(lambda L, A: L.lu_unpack(L.linalg.lu_factor(A)[0][0],
                                               L.linalg.lu_factor(A)[1]), A)
    raises_like_torch(lambda L, A: L.lu_unpack(L.linalg.lu_factor(A)[0],
                                               L.tensor([5, 1, 1], dtype=L.int32)), A)
    # The permutation carries no gradient; L and U do (into LU's two triangles).
    grads(lambda L, A: L.lu_unpack(*L.linalg.lu_factor(A)), A)
    grads(lambda L, LU, p: L.lu_unpack(LU, p), mats(rng, (2, 5, 3)),
          I([[1, 2, 3], [3, 3, 3]], "int32"))
    grads(lambda L, LU, p: L.lu_unpack(LU, p), mats(rng, (3, 6)), I([2, 2, 3], "int32"))


def test_lu(rng):
    for shape in SHAPES:
        A = mats(rng, shape)
        both(lambda L, A: L.linalg.lu(A), A, what=f"linalg.lu {shape}")
        both(lambda L, A: L.linalg.lu(A.float()), A, what=f"linalg.lu float32 {shape}")
    for shape in [(4, 4), (6, 3), (3, 6), (2, 3, 3), (2, 5, 4), (2, 4, 5)]:
        A = mats(rng, shape)
        grads(lambda L, A: L.linalg.lu(A), A, what=f"linalg.lu grad {shape}", rtol=1e-7,
              atol=1e-9)
        grads(lambda L, A: L.linalg.lu_factor(A)[0], A, what=f"lu_factor grad {shape}",
              rtol=1e-7, atol=1e-9)
        gradcheck(lambda L, A: L.linalg.lu(A)[1:], A)
    gradcheck(lambda L, A: L.linalg.lu_factor(A)[0], mats(rng, (2, 4, 3)))
    gradgradcheck(lambda L, A: L.linalg.lu(A)[1:], mats(rng, (3, 3)))
    gradgradcheck(lambda L, A: L.linalg.lu_factor(A)[0], mats(rng, (3, 4)))


def test_lu_solve(rng):
    for left in (True, False):
        for adjoint in (True, False):
            for a_shape, b_shape in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 3)),
                                     ((2, 1, 3, 3), (4, 3, 3)), ((1, 1), (1, 5))]:
                if not left:
                    b_shape = b_shape[:-2] + b_shape[-2:][::-1]
                A = mats(rng, a_shape)
                B = mats(rng, b_shape)
                kw = {"left": left, "adjoint": adjoint}
                both(lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B, **kw), A, B,
                     what=f"lu_solve {a_shape} {b_shape} {kw}")
                grads(lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B, **kw), A, B,
                      what=f"lu_solve grad {a_shape} {b_shape} {kw}", rtol=1e-7, atol=1e-9)
                # Gradients with respect to the packed factors themselves, too.
                LU = P(rng, a_shape, "float64")
                piv = I(np.tile(np.arange(1, a_shape[-1] + 1, dtype=np.int32),
                                a_shape[:-2] + (1,)), "int32")
                grads(lambda L, LU, p, B: L.linalg.lu_solve(LU + 4 * L.eye(a_shape[-1],
                                                                         dtype=L.float64),
                                                           p, B, **kw), LU, piv, B,
                      what=f"lu_solve LU grad {kw}", rtol=1e-7, atol=1e-9)
    A, B = mats(rng, (3, 3)), mats(rng, (3, 2))
    both(lambda L, A, B: L.lu_solve(B, *L.linalg.lu_factor(A)), A, B)
    both(lambda L, A, B: B.lu_solve(*L.linalg.lu_factor(A)), A, B)
    both(lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A.float()), B.float()), A, B)
    gradcheck(lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B, adjoint=True), A, B)
    for f in (lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B[:2]),
              lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B[:, 0]),
              lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B.float()),
              lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B, left=False),
              lambda L, A, B: L.linalg.lu_solve(L.linalg.lu_factor(A)[0][:2],
                                                L.linalg.lu_factor(A)[1], B)):
        raises_like_torch(f, A, B)
