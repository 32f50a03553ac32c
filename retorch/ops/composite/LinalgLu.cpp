// The LU family's composites (Note [LU family]): lu_factor with its singular-U check, lu as the
// unpacked factors, and lu_solve as a permutation and two triangular solves.
#include <algorithm>

#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"
#include "retorch/ops/composite/LinalgHelpers.h"

namespace retorch::composite {

using linalg_detail::mT;

std::tuple<Tensor, Tensor> linalg_lu_factor(const Tensor& A, bool pivot) {
  auto [LU, pivots, info] = linalg_lu_factor_ex(A, pivot, false);
  if (info.numel() > 0 && !info.device().is_meta() && info.ne(Scalar(0)).any().item<bool>()) {
    // The first failing matrix, named the way PyTorch's error check names it.
    Tensor flat = info.reshape({-1});
    int64_t b = flat.ne(Scalar(0)).to(kLong).argmax().item<int64_t>();
    int64_t i = flat.select(0, b).item<int64_t>();
    std::string where = A.dim() > 2 ? "(Batch element " + std::to_string(b) + "): " : "";
    RT_CHECK(false, "torch.linalg.lu_factor: ", where, "U[", i, ",", i, "] is zero and using it "
             "on lu_solve would result in a division by zero. If you still want to perform the "
             "factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, "
             "pivot)");
  }
  return {LU, pivots};
}

// pivot=False (a device's kernel; the cpu's refuses) leaves P empty, as PyTorch's.
std::tuple<Tensor, Tensor, Tensor> linalg_lu(const Tensor& A, bool pivot) {
  auto [LU, pivots, info] = linalg_lu_factor_ex(A, pivot, false);
  return lu_unpack(LU, pivots, true, pivot);
}

// A = P L U, so AX = B is X = U^-1 L^-1 P^T B; A^T X = B is X = P L^-T U^-T B; XA = B is
// X = B U^-1 L^-1 P^T; X A^T = B is X = B P L^-T U^-T.
Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left,
                       bool adjoint) {
  RT_CHECK(LU.dim() >= 2, "linalg.lu_solve: The input tensor LU must have at least 2 dimensions.");
  RT_CHECK(LU.size(-1) == LU.size(-2), "torch.linalg.lu_solve: A must be batches of square "
           "matrices, but they are ", LU.size(-2), " by ", LU.size(-1), " matrices");
  RT_CHECK(B.dim() >= 2, "linalg.lu_solve: The input tensor B must have at least 2 dimensions.");
  RT_CHECK(LU.dtype() == B.dtype(), "linalg.lu_solve: Expected LU and B to have the same dtype, "
           "but found LU of type ", LU.dtype(), " and B of type ", B.dtype(), " instead");
  int64_t n = LU.size(-1);
  RT_CHECK((left ? B.size(-2) : B.size(-1)) == n, "linalg.lu_solve: Incompatible shapes of A and "
           "B for the equation ", left ? "AX = B" : "XA = B", " (", n, "x", n, " and ",
           B.size(-2), "x", B.size(-1), ")");
  RT_CHECK(pivots.dim() >= 1 && pivots.size(-1) == n, "linalg.lu_solve: Expected pivots of "
           "shape (*, ", n, ") for LU of shape ", LU.sizes(), ", got ", pivots.sizes());
  auto [P, L, U] = lu_unpack(LU, pivots, true, true);
  auto solve = [](const Tensor& T, const Tensor& X, bool upper, bool on_left, bool unit) {
    return linalg_solve_triangular(T, X, upper, on_left, unit);
  };
  if (left && !adjoint)
    return solve(U, solve(L, mT(P).matmul(B), false, true, true), true, true, false);
  if (left)
    return P.matmul(solve(mT(L), solve(mT(U), B, false, true, false), true, true, true));
  if (!adjoint)
    return solve(L, solve(U, B, true, false, false), false, false, true).matmul(mT(P));
  return solve(mT(U), solve(mT(L), B.matmul(P), true, false, true), false, false, false);
}

Tensor lu_solve(const Tensor& self, const Tensor& LU_data, const Tensor& LU_pivots) {
  return retorch::linalg_lu_solve(LU_data, LU_pivots, self, true, false);
}

}  // namespace retorch::composite
