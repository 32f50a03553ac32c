// Backward formulas of the linear-algebra primitives (solvers, det, decompositions, distances),
// written in retorch ops so they differentiate again; they follow PyTorch's FunctionsManual.
#include "retorch/autograd/FunctionsManual.h"
#include "retorch/ops/composite/LinalgHelpers.h"

namespace retorch::autograd::fm {

using linalg_detail::diag_embed;
using linalg_detail::mT;

Tensor euclidean_dist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2,
                               const Tensor& result, bool for_x1) {
  // d dist_ij / d x1_i = (x1_i - x2_j) / dist_ij, taken as 0 where the distance is 0.
  Tensor ratio = where(result == 0, Scalar(0), grad / result);
  if (for_x1) return x1 * ratio.sum(IntArrayRef{-1}, true) - ratio.matmul(x2);
  return x2 * ratio.sum(IntArrayRef{-2}, false).unsqueeze(-1) - mT(ratio).matmul(x1);
}

Tensor solve_triangular_backward_B(const Tensor& grad, const Tensor& A, const Tensor& B, bool upper,
                                   bool left, bool unitriangular) {
  // left: X = A^-1 B, so gB = A^-T gX; right: X = B A^-1, so gB = gX A^-T.
  Tensor gB = linalg_solve_triangular(mT(A), grad, !upper, left, unitriangular);
  return sum_to(gB, B.sizes());
}

Tensor solve_triangular_backward_A(const Tensor& grad, const Tensor& A, const Tensor& X, bool upper,
                                   bool left, bool unitriangular) {
  Tensor gB = linalg_solve_triangular(mT(A), grad, !upper, left, unitriangular);
  Tensor gA = left ? -gB.matmul(mT(X)) : -mT(X).matmul(gB);
  // Only the triangle that was read (without the diagonal when it is taken as ones) gets a
  // gradient.
  gA = upper ? triu(gA, unitriangular ? 1 : 0) : tril(gA, unitriangular ? -1 : 0);
  return sum_to(gA, A.sizes());
}

Tensor linalg_solve_backward_B(const Tensor& grad, const Tensor& A, const Tensor& B) {
  return sum_to(_linalg_solve(mT(A), grad), B.sizes());
}

Tensor linalg_solve_backward_A(const Tensor& grad, const Tensor& A, const Tensor& B,
                               const Tensor& X) {
  Tensor gB = _linalg_solve(mT(A), grad);
  return sum_to(-gB.matmul(mT(X)), A.sizes());
}

std::tuple<Tensor, Tensor, Tensor> addmm_activation_backward(const Tensor& grad, const Tensor& self,
                                                             const Tensor& mat1, const Tensor& mat2,
                                                             const Scalar& beta,
                                                             const Scalar& alpha, bool use_gelu,
                                                             const Tensor& result,
                                                             std::array<bool, 3> mask) {
  // relu' reads off the saved output (positive exactly where the pre-activation was); GELU's
  // needs the pre-activation itself, recomputed here (one GEMM) so that the forward keeps a
  // single output.
  Tensor g = use_gelu ? gelu_backward(grad, addmm(self, mat1, mat2, beta, alpha), "none")
                      : threshold_backward(grad, result, 0);
  // self's gradient is summed to its (broadcast) shape by the engine, as for addmm.
  return {mask[0] ? maybe_multiply(g, beta) : Tensor(),
          mask[1] ? maybe_multiply(g.mm(mat2.t()), alpha) : Tensor(),
          mask[2] ? maybe_multiply(mat1.t().mm(g), alpha) : Tensor()};
}

Tensor linalg_inv_backward(const Tensor& grad, const Tensor& inv) {
  return -mT(inv).matmul(grad).matmul(mT(inv));
}

Tensor linalg_det_backward(const Tensor& grad, const Tensor& det, const Tensor& A) {
  // d det / dA is the cofactor matrix: det * A^-T when every matrix is invertible. Otherwise
  // (like PyTorch) it comes from an SVD A = U S Vh: cofactor = det(U) det(Vh) U diag(prod_{j!=i}
  // S_j) Vh, which stays finite for singular A.
  if (A.numel() == 0) return zeros_like(A);
  Tensor g = grad.unsqueeze(-1).unsqueeze(-1);
  if (!(det == 0).any().item<bool>())
    return g * det.unsqueeze(-1).unsqueeze(-1) * mT(linalg_inv(A));
  auto [U, S, Vh] = _linalg_svd(A, false, true, std::nullopt);
  int64_t n = S.size(-1);
  // Row i holds S with S_i replaced by 1, so its product is prod_{j != i} S_j.
  Tensor others = where(eye(n, n, TensorOptions().dtype(kBool)), Scalar(1), S.unsqueeze(-2));
  Tensor prods = others.prod(-1, false, std::nullopt);
  Tensor sign = (linalg_det(U) * linalg_det(Vh)).unsqueeze(-1).unsqueeze(-1);
  return g * sign * (U * prods.unsqueeze(-2)).matmul(Vh);
}

Tensor slogdet_backward(const Tensor& grad_logabsdet, const Tensor& A) {
  if (!grad_logabsdet.defined()) return zeros_like(A);
  return grad_logabsdet.unsqueeze(-1).unsqueeze(-1) * mT(linalg_inv(A));
}

Tensor cholesky_backward(const Tensor& grad, bool upper, const Tensor& L_or_U) {
  // A = L L^T: gA = L^-T Phi(L^T gL) L^-1 symmetrized, Phi = lower triangle with half diagonal.
  Tensor L = upper ? mT(L_or_U) : L_or_U;
  Tensor gL = upper ? mT(grad) : grad;
  Tensor gA = tril(mT(L).matmul(gL));
  gA = (gA + mT(tril(gA, -1))) * Scalar(0.5);
  gA = linalg_solve_triangular(mT(L), gA, true, true, false);
  return linalg_solve_triangular(L, gA, false, false, false);
}

namespace {

/// QR backward for m >= n (Q: m x n, R: n x n upper); gQ or gR may be undefined.
Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  Tensor M;
  if (gR.defined()) M = gR.matmul(mT(R));
  if (gQ.defined()) M = M.defined() ? M - mT(Q).matmul(gQ) : -mT(Q).matmul(gQ);
  // Symmetrize the upper triangle (copy it below the diagonal).
  Tensor Mu = triu(M);
  Tensor sym = Mu + mT(triu(M, 1));
  Tensor gA = Q.matmul(sym);
  if (gQ.defined()) gA = gA + gQ;
  return linalg_solve_triangular(mT(R), gA, false, false, false);
}

}  // namespace

namespace {

// Note [LU backward]: with A = P L U and X = L^-1 P^T dA U^-1 (square case), dL = L tril(X, -1)
// and dU = triu(X) U, so gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T. A wide A = P L
// [U1 U2] adds U2 = L^-1 P^T A2, whose gradient enters the strict lower part with -gU2 U2^T and
// gives gA2 = P L^-T gU2; a tall A = P [L1; L2] U adds L2 = (P^T A)_2 U^-1, entering the upper
// part with -L2^T gL2 and giving the bottom rows gL2 U^-T.
Tensor linalg_lu_backward(const Tensor& gL, const Tensor& gU, const Tensor& P, const Tensor& L,
                          const Tensor& U) {
  int64_t m = L.size(-2), n = U.size(-1);
  auto left_Lt = [](const Tensor& Lk, const Tensor& X) {  // L^-T X, L unit lower
    return linalg_solve_triangular(mT(Lk), X, /*upper=*/true, /*left=*/true, true);
  };
  auto right_Ut = [](const Tensor& Uk, const Tensor& X) {  // X U^-T
    return linalg_solve_triangular(mT(Uk), X, /*upper=*/false, /*left=*/false, false);
  };
  if (m == n) {
    Tensor M = tril(mT(L).matmul(gL), -1) + triu(gU.matmul(mT(U)));
    return P.matmul(right_Ut(U, left_Lt(L, M)));
  }
  if (m < n) {
    Tensor U1 = U.narrow(-1, 0, m), U2 = U.narrow(-1, m, n - m);
    Tensor gU1 = gU.narrow(-1, 0, m), gU2 = gU.narrow(-1, m, n - m);
    Tensor M = tril(mT(L).matmul(gL) - gU2.matmul(mT(U2)), -1) + triu(gU1.matmul(mT(U1)));
    return P.matmul(left_Lt(L, cat({right_Ut(U1, M), gU2}, -1)));
  }
  Tensor L1 = L.narrow(-2, 0, n), L2 = L.narrow(-2, n, m - n);
  Tensor gL1 = gL.narrow(-2, 0, n), gL2 = gL.narrow(-2, n, m - n);
  Tensor M = tril(mT(L1).matmul(gL1), -1) + triu(gU.matmul(mT(U)) - mT(L2).matmul(gL2));
  return P.matmul(right_Ut(U, cat({left_Lt(L1, M), gL2}, -2)));
}

}  // namespace

// L's strict lower triangle and U's upper triangle go back where lu_unpack read them in LU.
Tensor lu_unpack_backward(const Tensor& gL, const Tensor& gU, int64_t m, int64_t n) {
  int64_t k = std::min(m, n);
  Tensor gLU;
  if (gL.defined()) gLU = n > k ? constant_pad_nd(tril(gL, -1), {0, n - k}) : tril(gL, -1);
  if (gU.defined()) {
    Tensor u = m > k ? constant_pad_nd(triu(gU), {0, 0, 0, m - k}) : triu(gU);
    gLU = gLU.defined() ? gLU + u : u;
  }
  return gLU;
}

Tensor linalg_lu_factor_ex_backward(const Tensor& gLU, const Tensor& LU, const Tensor& pivots) {
  if (!gLU.defined()) return Tensor();
  int64_t k = std::min(LU.size(-2), LU.size(-1));
  auto [P, L, U] = lu_unpack(LU, pivots, true, true);
  return linalg_lu_backward(tril(gLU.narrow(-1, 0, k), -1), triu(gLU.narrow(-2, 0, k)), P, L, U);
}

Tensor linalg_qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R,
                          std::string_view mode) {
  RT_CHECK(mode != "r",
           "The derivative of linalg.qr depends on Q, which is not computed when "
           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
           "through linalg.qr.");
  int64_t m = Q.size(-2), n = R.size(-1);
  RT_CHECK(mode == "reduced" || m <= n,
           "The QR decomposition is not differentiable when "
           "mode='complete' and nrows > ncols.");
  if (m >= n) return qr_backward_tall(gQ, gR, Q, R);
  // Wide A = [X | Y] with X = Q U square and Y = Q V: differentiate the square QR of X and
  // the product Y = Q V (the approach of TensorFlow's QrGrad; the gradient is the same).
  Tensor U = R.narrow(-1, 0, m), V = R.narrow(-1, m, n - m);
  Tensor gU, gV;
  if (gR.defined()) {
    gU = gR.narrow(-1, 0, m);
    gV = gR.narrow(-1, m, n - m);
  }
  Tensor Y = Q.matmul(V);
  Tensor gQx = gQ;
  if (gV.defined()) gQx = gQx.defined() ? gQx + Y.matmul(mT(gV)) : Y.matmul(mT(gV));
  Tensor gX = qr_backward_tall(gQx, gU, Q, U);
  Tensor gY = gV.defined() ? Q.matmul(gV) : zeros_like(Y);
  return cat({gX, gY}, -1);
}

Tensor svd_backward(const Tensor& gU_in, const Tensor& gS, const Tensor& gVh_in, const Tensor& U_in,
                    const Tensor& S, const Tensor& Vh_in, bool full_matrices, bool compute_uv) {
  RT_CHECK(compute_uv,
           "linalg.svd: the derivative requires the singular vectors; call "
           "linalg.svd (compute_uv=True) to differentiate.");
  int64_t k = S.size(-1);
  // With full_matrices only the first k singular vectors carry gradient (PyTorch narrows too).
  Tensor U = full_matrices ? U_in.narrow(-1, 0, k) : U_in;
  Tensor Vh = full_matrices ? Vh_in.narrow(-2, 0, k) : Vh_in;
  Tensor gU = full_matrices && gU_in.defined() ? gU_in.narrow(-1, 0, k) : gU_in;
  Tensor gVh = full_matrices && gVh_in.defined() ? gVh_in.narrow(-2, 0, k) : gVh_in;
  int64_t m = U.size(-2), n = Vh.size(-1);
  if (!gU.defined() && !gVh.defined()) {
    return m >= n ? U.matmul(gS.unsqueeze(-1) * Vh) : (U * gS.unsqueeze(-2)).matmul(Vh);
  }
  auto skew = [](const Tensor& X) { return X - mT(X); };
  Tensor UhgU = gU.defined() ? skew(mT(U).matmul(gU)) : Tensor();
  Tensor VhgV = gVh.defined() ? skew(Vh.matmul(mT(gVh))) : Tensor();
  // E_ij = S_j^2 - S_i^2 off the diagonal; 1 on it (the numerators are 0 there).
  Tensor S2 = S * S;
  Tensor E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye(k, k, TensorOptions().dtype(S.dtype()));
  Tensor gA;
  if (gU.defined() && gVh.defined())
    gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E;
  else if (gU.defined())
    gA = UhgU * (S.unsqueeze(-2) / E);
  else
    gA = S.unsqueeze(-1) * (VhgV / E);
  if (gS.defined()) gA = gA + diag_embed(gS);
  if (m > n && gU.defined()) {
    gA = U.matmul(gA);
    Tensor gUSinv = gU / S.unsqueeze(-2);
    gA = gA + gUSinv - U.matmul(mT(U).matmul(gUSinv));
    return gA.matmul(Vh);
  }
  if (m < n && gVh.defined()) {
    gA = gA.matmul(Vh);
    Tensor SinvgVh = gVh / S.unsqueeze(-1);
    gA = gA + SinvgVh - SinvgVh.matmul(mT(Vh)).matmul(Vh);
    return U.matmul(gA);
  }
  return m >= n ? U.matmul(gA.matmul(Vh)) : U.matmul(gA).matmul(Vh);
}

Tensor eigh_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V) {
  RT_CHECK(V.numel() > 0 || L.numel() == 0,
           "linalg.eigh: the derivative requires the "
           "eigenvectors (compute_v=True).");
  if (!gV.defined()) return V.matmul(gL.unsqueeze(-1) * mT(V));
  // gA = V (skew(V^T gV) / E + diag(gL)) V^T with E_ij = L_j - L_i (1 on the diagonal).
  Tensor VhgV = mT(V).matmul(gV);
  VhgV = (VhgV - mT(VhgV)) * Scalar(0.5);
  int64_t n = L.size(-1);
  Tensor E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye(n, n, TensorOptions().dtype(L.dtype()));
  Tensor inner = VhgV / E;
  if (gL.defined()) inner = inner + diag_embed(gL);
  return V.matmul(inner.matmul(mT(V)));
}

}  // namespace retorch::autograd::fm
