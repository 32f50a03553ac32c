// LAPACK-backed linear algebra kernels (float32/float64, batched over leading dims): LU (solve,
// inv, det, slogdet, the factors and their unpacking), Cholesky, QR, SVD, symmetric eigh,
// triangular solve; and _euclidean_dist.
#include <cblas.h>

#include <cmath>
#include <string>
#include <vector>

#include "retorch/core/Dtypes.h"
#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

// Fortran LAPACK entry points (OpenBLAS bundles them). Character arguments are single letters,
// so the hidden Fortran string lengths are not passed (LAPACK only reads the first character).
extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda,
             const int* ipiv, float* b, const int* ldb, int* info);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda,
             const int* ipiv, double* b, const int* ldb, int* info);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s,
             float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
             int* iwork, int* info);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
             int* iwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info);
}

namespace retorch::cpu {

namespace {

// One overload set per precision, so the kernels below are written once as templates.
void getrf(int m, int n, float* a, int lda, int* ipiv, int* info) {
  sgetrf_(&m, &n, a, &lda, ipiv, info);
}
void getrf(int m, int n, double* a, int lda, int* ipiv, int* info) {
  dgetrf_(&m, &n, a, &lda, ipiv, info);
}
void getrs(char t, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b, int ldb,
           int* info) {
  sgetrs_(&t, &n, &nrhs, a, &lda, ipiv, b, &ldb, info);
}
void getrs(char t, int n, int nrhs, const double* a, int lda, const int* ipiv, double* b, int ldb,
           int* info) {
  dgetrs_(&t, &n, &nrhs, a, &lda, ipiv, b, &ldb, info);
}
void potrf(char uplo, int n, float* a, int lda, int* info) {
  spotrf_(&uplo, &n, a, &lda, info);
}
void potrf(char uplo, int n, double* a, int lda, int* info) {
  dpotrf_(&uplo, &n, a, &lda, info);
}
void geqrf(int m, int n, float* a, int lda, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, int lda, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* work, int lwork,
           int* info) {
  sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* work, int lwork,
           int* info) {
  dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt,
           int ldvt, float* work, int lwork, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt,
           int ldvt, double* work, int lwork, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
void syevd(char jobz, char uplo, int n, float* a, int lda, float* w, float* work, int lwork,
           int* iwork, int liwork, int* info) {
  ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}
void syevd(char jobz, char uplo, int n, double* a, int lda, double* w, double* work, int lwork,
           int* iwork, int liwork, int* info) {
  dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}

/// Floating inputs only. Half/bfloat16 are computed in float by the callers (see
/// Note [Low precision LAPACK]) unless reject_low is set (PyTorch refuses them for inv/slogdet).
void check_lapack_dtype(const Tensor& t, const char* op, bool reject_low = false) {
  RT_CHECK(is_floating_type(t.dtype()), op,
           ": Expected a floating point or complex tensor as "
           "input. Got ",
           t.dtype());
  RT_CHECK(!reject_low || t.dtype() == kFloat || t.dtype() == kDouble, op,
           ": Low precision "
           "dtypes not supported. Got ",
           t.dtype());
}

// Note [Low precision LAPACK]: LAPACK has no half or bfloat16 routines. Where PyTorch merely
// lacks the kernel ("not implemented for 'Half'"), retorch runs the float32 kernel on a float
// copy and rounds the results once; where PyTorch refuses on purpose (inv, slogdet), so do we.
bool low_precision(const Tensor& t) {
  return t.dtype() == kHalf || t.dtype() == kBFloat16;
}
Tensor to_float(const Tensor& t) {
  return t.to(kFloat);
}

/// Calls f(float{}) or f(double{}) for A's dtype (check_lapack_dtype has ruled out the others);
/// nothing on the meta device, whose outputs are allocated already (Note [Meta through CPU
/// kernels]).
template <typename F>
void dispatch_lapack(const Tensor& A, const F& f) {
  if (A.device().is_meta()) return;
  if (A.dtype() == kFloat)
    f(float{});
  else
    f(double{});
}

void check_square(const Tensor& A, const char* op, const char* name = "A") {
  RT_CHECK(A.dim() >= 2, op, ": The input tensor ", name, " must have at least 2 dimensions.");
  RT_CHECK(A.size(-1) == A.size(-2), op, ": ", name,
           " must be batches of square matrices, but "
           "they are ",
           A.size(-2), " by ", A.size(-1), " matrices");
}

/// The batch dims of A (all but the last two) and the number of matrices.
std::vector<int64_t> batch_shape(const Tensor& A) {
  return std::vector<int64_t>(A.sizes().begin(), A.sizes().end() - 2);
}
int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}
std::vector<int64_t> with_tail(std::vector<int64_t> s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

/// "(Batch element 3): " for batched inputs, as PyTorch prefixes its LAPACK errors.
std::string batch_prefix(bool batched, int64_t b) {
  return batched ? "(Batch element " + std::to_string(b) + "): " : "";
}

/// Row-major contiguous copy of A as (batch, r, c) so kernels can index matrix b directly.
Tensor as_batches(const Tensor& A) {
  return A.contiguous().reshape({numel_of(batch_shape(A)), A.size(-2), A.size(-1)});
}

// Col-major scratch copy of matrix b of a (B, r, c) contiguous tensor.
template <typename T>
void load_col_major(const Tensor& A3, int64_t b, std::vector<T>& buf, int64_t ld) {
  int64_t r = A3.size(1), c = A3.size(2);
  const T* src = A3.data_ptr<T>() + b * r * c;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) buf[size_t(i + j * ld)] = src[i * c + j];
}
template <typename T>
void store_col_major(const std::vector<T>& buf, int64_t ld, Tensor& out3, int64_t b) {
  int64_t r = out3.size(1), c = out3.size(2);
  T* dst = out3.data_ptr<T>() + b * r * c;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) dst[i * c + j] = buf[size_t(i + j * ld)];
}

// LU factorization of every matrix; calls f(b, lu, ipiv, info) with lu col-major.
template <typename T, typename F>
void for_each_lu(const Tensor& A3, const F& f) {
  int64_t n = A3.size(1);
  int ld = int(std::max<int64_t>(n, 1));
  std::vector<T> lu(size_t(n * n));
  std::vector<int> ipiv(static_cast<size_t>(n));
  for (int64_t b = 0; b < A3.size(0); ++b) {
    load_col_major(A3, b, lu, n);
    int info = 0;
    if (n > 0) getrf(int(n), int(n), lu.data(), ld, ipiv.data(), &info);
    f(b, lu, ipiv, info);
  }
}

}  // namespace

Tensor linalg_solve_primitive(const Tensor& A, const Tensor& B) {
  // A: (*, n, n); B: (*, n, k); batch dims broadcast. See composite linalg_solve for vectors.
  check_square(A, "linalg.solve");
  check_lapack_dtype(A, "linalg.solve");
  if (low_precision(A) && A.dtype() == B.dtype())
    return cpu::linalg_solve_primitive(to_float(A), to_float(B)).to(A.dtype());
  RT_CHECK(A.dtype() == B.dtype(),
           "linalg.solve: Expected A and B to have the same dtype, but "
           "found A of type ",
           A.dtype(), " and B of type ", B.dtype(), " instead");
  RT_CHECK(B.dim() >= 2 && B.size(-2) == A.size(-1),
           "linalg.solve: Incompatible shapes of A "
           "and B for the equation AX = B (",
           A.sizes(), " and ", B.sizes(), ")");
  auto batch =
      broadcast_shapes(IntArrayRef(batch_shape(A)), IntArrayRef(batch_shape(B)), "linalg.solve");
  std::vector<int64_t> bs(batch.begin(), batch.end());
  int64_t n = A.size(-1), k = B.size(-1);
  Tensor A3 = as_batches(A.expand(with_tail(bs, {n, n})));
  Tensor B3 = as_batches(B.expand(with_tail(bs, {n, k})));
  Tensor X3 = make_empty({A3.size(0), n, k}, A.dtype(), A.device());
  dispatch_lapack(A, [&](auto tag) {
    using scalar_t = decltype(tag);
    {
      std::vector<scalar_t> rhs(size_t(n * k));
      for_each_lu<scalar_t>(A3, [&](int64_t b, auto& lu, auto& ipiv, int info) {
        RT_CHECK(info == 0, "torch.linalg.solve: ", batch_prefix(!bs.empty(), b),
                 "The diagonal element ", info,
                 " is zero, the solve could not be completed "
                 "because the input matrix is singular.");
        if (n == 0 || k == 0) return;
        load_col_major(B3, b, rhs, n);
        int inf2 = 0;
        getrs('N', int(n), int(k), lu.data(), int(n), ipiv.data(), rhs.data(), int(n), &inf2);
        store_col_major(rhs, n, X3, b);
      });
    }
  });
  return X3.reshape(with_tail(bs, {n, k}));
}

Tensor linalg_inv(const Tensor& A) {
  check_square(A, "linalg.inv");
  check_lapack_dtype(A, "linalg.inv", true);
  int64_t n = A.size(-1);
  Tensor A3 = as_batches(A);
  Tensor X3 = make_empty(A3.sizes(), A.dtype(), A.device());
  dispatch_lapack(A, [&](auto tag) {
    using scalar_t = decltype(tag);
    {
      std::vector<scalar_t> eye(size_t(n * n));
      for_each_lu<scalar_t>(A3, [&](int64_t b, auto& lu, auto& ipiv, int info) {
        RT_CHECK(info == 0, "linalg.inv: ", batch_prefix(A.dim() > 2, b), "The diagonal element ",
                 info,
                 " is zero, the inversion could not be completed because the input matrix is "
                 "singular.");
        if (n == 0) return;
        std::fill(eye.begin(), eye.end(), scalar_t(0));
        for (int64_t i = 0; i < n; ++i) eye[size_t(i * n + i)] = 1;
        int inf2 = 0;
        getrs('N', int(n), int(n), lu.data(), int(n), ipiv.data(), eye.data(), int(n), &inf2);
        store_col_major(eye, n, X3, b);
      });
    }
  });
  return X3.reshape(A.sizes());
}

namespace {

/// Sign and log|det| of every matrix from its LU factors.
std::tuple<Tensor, Tensor> lu_slogdet(const Tensor& A, const char* op) {
  check_square(A, op);
  check_lapack_dtype(A, op);
  int64_t n = A.size(-1);
  Tensor A3 = as_batches(A);
  Tensor sign = make_empty({A3.size(0)}, A.dtype(), A.device());
  Tensor logabs = make_empty({A3.size(0)}, A.dtype(), A.device());
  dispatch_lapack(A, [&](auto tag) {
    using scalar_t = decltype(tag);
    {
      scalar_t* sp = sign.data_ptr<scalar_t>();
      scalar_t* lp = logabs.data_ptr<scalar_t>();
      for_each_lu<scalar_t>(A3, [&](int64_t b, auto& lu, auto& ipiv, int) {
        // A singular U has a zero pivot: log|det| = -inf and sign 0, as in PyTorch.
        double s = 1, l = 0;
        for (int64_t i = 0; i < n; ++i) {
          double d = double(lu[size_t(i * n + i)]);
          if (ipiv[size_t(i)] != i + 1) s = -s;
          if (d < 0) s = -s;
          if (d == 0) s = 0;
          l += std::log(std::abs(d));
        }
        sp[b] = scalar_t(s);
        lp[b] = scalar_t(l);
      });
    }
  });
  auto bs = batch_shape(A);
  return {sign.reshape(bs), logabs.reshape(bs)};
}

}  // namespace

Tensor linalg_det(const Tensor& A) {
  if (low_precision(A)) return cpu::linalg_det(to_float(A)).to(A.dtype());
  auto [sign, logabs] = lu_slogdet(A, "linalg.det");
  return sign * logabs.exp();
}

std::tuple<Tensor, Tensor> linalg_slogdet(const Tensor& A) {
  check_lapack_dtype(A, "linalg.slogdet", true);
  return lu_slogdet(A, "linalg.slogdet");
}

// See Note [LU family]. getrf on each (m, n) matrix: LU holds L below the diagonal (unit
// diagonal implied) and U on and above it; pivots are LAPACK's 1-based row swaps (int32) and
// info the 1-based index of the first zero pivot (0 when U is invertible).
std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot,
                                                       bool check_errors) {
  RT_CHECK(A.dim() >= 2, "linalg.lu_factor: Expected tensor with 2 or more dimensions. Got size: ",
           A.sizes(), " instead");
  check_lapack_dtype(A, "linalg.lu_factor");
  RT_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  if (low_precision(A)) {
    auto [LU, piv, info] = cpu::linalg_lu_factor_ex(to_float(A), pivot, check_errors);
    return {LU.to(A.dtype()), piv, info};
  }
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  auto bs = batch_shape(A);
  Tensor A3 = as_batches(A);
  Tensor LU3 = make_empty(A3.sizes(), A.dtype(), A.device());
  Tensor piv = make_empty(with_tail(bs, {k}), kInt, A.device());
  Tensor info = make_empty(bs, kInt, A.device());
  dispatch_lapack(A, [&](auto tag) {
    using scalar_t = decltype(tag);
    int ld = int(std::max<int64_t>(m, 1));
    std::vector<scalar_t> lu(size_t(m * n));
    int* pp = piv.data_ptr<int>();
    int* ip = info.data_ptr<int>();
    for (int64_t b = 0; b < A3.size(0); ++b) {
      load_col_major(A3, b, lu, m);
      int inf = 0;
      if (k > 0) getrf(int(m), int(n), lu.data(), ld, pp + b * k, &inf);
      ip[b] = inf;
      store_col_major(lu, m, LU3, b);
      RT_CHECK(!check_errors || inf == 0, "torch.linalg.lu_factor_ex: ",
               batch_prefix(!bs.empty(), b), "U[", inf, ",", inf, "] is zero and using it on "
               "lu_solve would result in a division by zero. If you still want to perform the "
               "factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, "
               "pivot)");
    }
  });
  return {LU3.reshape(A.sizes()), piv, info};
}

// P (m, m) with A = P L U: the pivots' row swaps applied in order to the identity's rows give
// perm with (P^T A)[i] = A[perm[i]], so P[perm[i], i] = 1. L is (m, k) unit lower, U (k, n).
std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU, const Tensor& pivots,
                                             bool unpack_data, bool unpack_pivots) {
  RT_CHECK(LU.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ",
           LU.sizes(), " instead");
  int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  RT_CHECK(pivots.dtype() == kInt, "torch.lu_unpack: LU_pivots is expected to be a contiguous "
           "tensor of torch.int32 dtype (got ", pivots.dtype(), ").\nNote: this function is "
           "intended to be used with the output produced by torch.linalg.lu_factor");
  auto bs = batch_shape(LU);
  RT_CHECK(pivots.dim() >= 1 && pivots.size(-1) <= k &&
               IntArrayRef(pivots.sizes().begin(), pivots.sizes().end() - 1) == IntArrayRef(bs),
           "torch.lu_unpack: Expected LU_pivots of shape ", IntArrayRef(with_tail(bs, {k})),
           " for LU_data of shape ", LU.sizes(), ", got ", pivots.sizes());
  Tensor P, L, U;
  auto empty0 = [&] { return make_empty({0}, LU.dtype(), LU.device()); };
  if (unpack_data) {
    Tensor eye_mk = eye(m, k, TensorOptions().dtype(LU.dtype()).device(LU.device()));
    L = tril(LU.narrow(-1, 0, k), -1) + eye_mk;
    U = triu(LU.narrow(-2, 0, k));
  } else {
    L = empty0();
    U = empty0();
  }
  if (!unpack_pivots) return {empty0(), L, U};
  P = make_empty(with_tail(bs, {m, m}), LU.dtype(), LU.device());
  if (LU.device().is_meta()) return {P, L, U};  // See Note [Meta through CPU kernels]
  Tensor piv = pivots.contiguous();
  const int* pp = piv.data_ptr<int>();
  int64_t np = piv.size(-1);
  for (int64_t i = 0; i < piv.numel(); ++i)
    RT_CHECK(pp[i] >= 1 && pp[i] <= m, "pivots passed to lu_unpack must be between 1 and "
             "LU.size(-2) inclusive. Did you properly pass the result of lu_factor?");
  P.zero_();
  RT_DISPATCH_FLOATING(LU.dtype(), "lu_unpack", [&] {
    scalar_t* dst = P.data_ptr<scalar_t>();
    std::vector<int64_t> perm(static_cast<size_t>(m));
    for (int64_t b = 0; b < numel_of(bs); ++b) {
      for (int64_t i = 0; i < m; ++i) perm[size_t(i)] = i;
      for (int64_t i = 0; i < np; ++i) std::swap(perm[size_t(i)], perm[size_t(pp[b * np + i] - 1)]);
      for (int64_t i = 0; i < m; ++i) dst[b * m * m + perm[size_t(i)] * m + i] = scalar_t(1);
    }
  });
  return {P, L, U};
}

Tensor linalg_cholesky(const Tensor& self, bool upper) {
  check_square(self, "linalg.cholesky");
  check_lapack_dtype(self, "linalg.cholesky");
  if (low_precision(self)) return cpu::linalg_cholesky(to_float(self), upper).to(self.dtype());
  int64_t n = self.size(-1);
  Tensor A3 = as_batches(self);
  Tensor L3 = make_empty(A3.sizes(), self.dtype(), self.device());
  dispatch_lapack(self, [&](auto tag) {
    using scalar_t = decltype(tag);
    {
      std::vector<scalar_t> a(size_t(n * n));
      for (int64_t b = 0; b < A3.size(0); ++b) {
        load_col_major(A3, b, a, n);
        int info = 0;
        // Only the lower triangle of A is read, like PyTorch.
        if (n > 0) potrf('L', int(n), a.data(), int(n), &info);
        RT_CHECK(info == 0, "linalg.cholesky: ", batch_prefix(self.dim() > 2, b),
                 "The factorization could "
                 "not be completed because the input is not positive-definite (the leading "
                 "minor of order ",
                 info, " is not positive-definite).");
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < j; ++i) a[size_t(i + j * n)] = 0;
        store_col_major(a, n, L3, b);
      }
    }
  });
  Tensor L = L3.reshape(self.sizes());
  return upper ? L.transpose(-2, -1).contiguous() : L;
}

std::tuple<Tensor, Tensor> linalg_qr(const Tensor& A, std::string_view mode) {
  RT_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
           "qr received unrecognized "
           "mode '",
           mode, "' but expected one of 'reduced' (default), 'r', or 'complete'");
  RT_CHECK(A.dim() >= 2, "linalg.qr: The input tensor A must have at least 2 dimensions.");
  check_lapack_dtype(A, "linalg.qr");
  if (low_precision(A)) {
    auto [Q, R] = cpu::linalg_qr(to_float(A), mode);
    return {Q.to(A.dtype()), R.to(A.dtype())};
  }
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  bool complete = mode == "complete";
  int64_t qcols = complete ? m : k, rrows = complete ? m : k;
  Tensor A3 = as_batches(A);
  int64_t B = A3.size(0);
  Tensor Q3 = make_empty({B, m, qcols}, A.dtype(), A.device());
  Tensor R3 = make_empty({B, rrows, n}, A.dtype(), A.device());
  dispatch_lapack(A, [&](auto tag) {
    using scalar_t = decltype(tag);
    {
      int64_t ld = std::max<int64_t>(m, 1);
      std::vector<scalar_t> a(size_t(ld * std::max(n, qcols)), scalar_t(0));
      std::vector<scalar_t> tau(size_t(std::max<int64_t>(k, 1)));
      std::vector<scalar_t> r(size_t(rrows * n));
      for (int64_t b = 0; b < B; ++b) {
        load_col_major(A3, b, a, ld);
        int info = 0;
        if (k > 0) {
          scalar_t wq = 0;
          geqrf(int(m), int(n), a.data(), int(ld), tau.data(), &wq, -1, &info);
          std::vector<scalar_t> work(size_t(std::max<int64_t>(int64_t(wq), 1)));
          geqrf(int(m), int(n), a.data(), int(ld), tau.data(), work.data(), int(work.size()),
                &info);
        }
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < rrows; ++i)
            r[size_t(i + j * rrows)] = (i <= j && i < m) ? a[size_t(i + j * ld)] : scalar_t(0);
        store_col_major(r, rrows, R3, b);
        if (mode == "r") continue;
        if (qcols > 0 && m > 0) {
          scalar_t wq = 0;
          orgqr(int(m), int(qcols), int(k), a.data(), int(ld), tau.data(), &wq, -1, &info);
          std::vector<scalar_t> work(size_t(std::max<int64_t>(int64_t(wq), 1)));
          orgqr(int(m), int(qcols), int(k), a.data(), int(ld), tau.data(), work.data(),
                int(work.size()), &info);
        }
        store_col_major(a, ld, Q3, b);
      }
    }
  });
  auto bs = batch_shape(A);
  Tensor R = R3.reshape(with_tail(bs, {rrows, n}));
  if (mode == "r") return {make_empty({0}, A.dtype(), A.device()), R};
  return {Q3.reshape(with_tail(bs, {m, qcols})), R};
}

std::tuple<Tensor, Tensor, Tensor> linalg_svd_primitive(const Tensor& A, bool full_matrices,
                                                        bool compute_uv,
                                                        std::optional<std::string_view> driver) {
  RT_CHECK(!driver,
           "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA "
           "inputs with cuSOLVER backend.");
  RT_CHECK(A.dim() >= 2, "linalg.svd: The input tensor A must have at least 2 dimensions.");
  check_lapack_dtype(A, "linalg.svd");
  if (low_precision(A)) {
    auto [U, S, Vh] = cpu::linalg_svd_primitive(to_float(A), full_matrices, compute_uv, driver);
    return {U.to(A.dtype()), S.to(A.dtype()), Vh.to(A.dtype())};
  }
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  Tensor A3 = as_batches(A);
  int64_t B = A3.size(0);
  Tensor U3 = make_empty({B, m, compute_uv ? ucols : 0}, A.dtype(), A.device());
  Tensor S2 = make_empty({B, k}, A.dtype(), A.device());
  Tensor V3 = make_empty({B, compute_uv ? vrows : 0, n}, A.dtype(), A.device());
  dispatch_lapack(A, [&](auto tag) {
    using scalar_t = decltype(tag);
    {
      int64_t ld = std::max<int64_t>(m, 1);
      std::vector<scalar_t> a(size_t(ld * n)), u(size_t(std::max<int64_t>(m * ucols, 1))),
          vt(size_t(std::max<int64_t>(vrows * n, 1)));
      std::vector<int> iwork(size_t(std::max<int64_t>(8 * k, 1)));
      char jobz = !compute_uv ? 'N' : (full_matrices ? 'A' : 'S');
      int ldu = int(ld), ldvt = int(std::max<int64_t>(vrows, 1));
      for (int64_t b = 0; b < B; ++b) {
        if (k == 0) {
          // Empty input: U and Vh are identities (full) or empty; LAPACK is not called.
          std::fill(u.begin(), u.end(), scalar_t(0));
          std::fill(vt.begin(), vt.end(), scalar_t(0));
          for (int64_t i = 0; i < ucols; ++i) u[size_t(i + i * ld)] = 1;
          for (int64_t i = 0; i < vrows; ++i) vt[size_t(i + i * ldvt)] = 1;
        } else {
          load_col_major(A3, b, a, ld);
          int info = 0;
          scalar_t wq = 0;
          gesdd(jobz, int(m), int(n), a.data(), int(ld), S2.data_ptr<scalar_t>() + b * k, u.data(),
                ldu, vt.data(), ldvt, &wq, -1, iwork.data(), &info);
          std::vector<scalar_t> work(size_t(std::max<int64_t>(int64_t(wq), 1)));
          gesdd(jobz, int(m), int(n), a.data(), int(ld), S2.data_ptr<scalar_t>() + b * k, u.data(),
                ldu, vt.data(), ldvt, work.data(), int(work.size()), iwork.data(), &info);
          RT_CHECK(info == 0, "linalg.svd: ", batch_prefix(A.dim() > 2, b),
                   "The algorithm failed to "
                   "converge because the input matrix is ill-conditioned or has too many "
                   "repeated singular values (error code: ",
                   info, ").");
        }
        if (!compute_uv) continue;
        store_col_major(u, ld, U3, b);
        store_col_major(vt, ldvt, V3, b);
      }
    }
  });
  auto bs = batch_shape(A);
  Tensor S = S2.reshape(with_tail(bs, {k}));
  if (!compute_uv)
    return {make_empty({0}, A.dtype(), A.device()), S, make_empty({0}, A.dtype(), A.device())};
  return {U3.reshape(with_tail(bs, {m, ucols})), S, V3.reshape(with_tail(bs, {vrows, n}))};
}

std::tuple<Tensor, Tensor> linalg_eigh_primitive(const Tensor& A, std::string_view UPLO,
                                                 bool compute_v) {
  RT_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u",
           "linalg.eigh: Expected "
           "UPLO argument to be 'L' or 'U', but got ",
           UPLO);
  check_square(A, "linalg.eigh");
  check_lapack_dtype(A, "linalg.eigh");
  if (low_precision(A)) {
    auto [W, V] = cpu::linalg_eigh_primitive(to_float(A), UPLO, compute_v);
    return {W.to(A.dtype()), V.to(A.dtype())};
  }
  int64_t n = A.size(-1);
  Tensor A3 = as_batches(A);
  int64_t B = A3.size(0);
  Tensor W2 = make_empty({B, n}, A.dtype(), A.device());
  Tensor V3 = make_empty({B, n, n}, A.dtype(), A.device());
  dispatch_lapack(A, [&](auto tag) {
    using scalar_t = decltype(tag);
    {
      std::vector<scalar_t> a(size_t(n * n));
      char jobz = compute_v ? 'V' : 'N';
      char uplo = (UPLO == "U" || UPLO == "u") ? 'U' : 'L';
      for (int64_t b = 0; b < B && n > 0; ++b) {
        load_col_major(A3, b, a, n);
        int info = 0, iq = 0;
        scalar_t wq = 0;
        syevd(jobz, uplo, int(n), a.data(), int(n), W2.data_ptr<scalar_t>() + b * n, &wq, -1, &iq,
              -1, &info);
        std::vector<scalar_t> work(size_t(std::max<int64_t>(int64_t(wq), 1)));
        std::vector<int> iwork(size_t(std::max(iq, 1)));
        syevd(jobz, uplo, int(n), a.data(), int(n), W2.data_ptr<scalar_t>() + b * n, work.data(),
              int(work.size()), iwork.data(), int(iwork.size()), &info);
        RT_CHECK(info == 0, "linalg.eigh: ", batch_prefix(A.dim() > 2, b),
                 "The algorithm failed to "
                 "converge because the input matrix is ill-conditioned or has too many repeated "
                 "eigenvalues (error code: ",
                 info, ").");
        if (compute_v) store_col_major(a, n, V3, b);
      }
    }
  });
  auto bs = batch_shape(A);
  Tensor W = W2.reshape(with_tail(bs, {n}));
  if (!compute_v) return {W, make_empty({0}, A.dtype(), A.device())};
  return {W, V3.reshape(A.sizes())};
}

Tensor linalg_solve_triangular(const Tensor& self, const Tensor& B_in, bool upper, bool left,
                               bool unitriangular) {
  // B takes A's dtype (what PyTorch 1.13 returns for mixed inputs).
  ScalarType dt = self.dtype();
  check_square(self, "linalg.solve_triangular");
  check_lapack_dtype(self, "linalg.solve_triangular");
  if (low_precision(self))
    return cpu::linalg_solve_triangular(to_float(self), B_in, upper, left, unitriangular).to(dt);
  Tensor A = self, B = B_in.to(dt);
  RT_CHECK(B.dim() >= 2,
           "linalg.solve_triangular: The input tensor B must have at least 2 "
           "dimensions.");
  int64_t n = A.size(-1);
  RT_CHECK(left ? B.size(-2) == n : B.size(-1) == n,
           "linalg.solve_triangular: Incompatible "
           "shapes of A and B for the equation ",
           left ? "AX = B" : "XA = B", " (", A.sizes(), " and ", B.sizes(), ")");
  auto batch = broadcast_shapes(IntArrayRef(batch_shape(A)), IntArrayRef(batch_shape(B)),
                                "linalg.solve_triangular");
  std::vector<int64_t> bs(batch.begin(), batch.end());
  int64_t r = B.size(-2), c = B.size(-1);
  Tensor A3 = as_batches(A.expand(with_tail(bs, {n, n})));
  // X starts as a copy of B and is solved in place by trsm.
  Tensor X3 = as_batches(B.expand(with_tail(bs, {r, c}))).clone();
  if (r > 0 && c > 0 && !A.device().is_meta()) {  // See Note [Meta through CPU kernels]
    auto side = left ? CblasLeft : CblasRight;
    auto uplo = upper ? CblasUpper : CblasLower;
    auto diag = unitriangular ? CblasUnit : CblasNonUnit;
    for (int64_t b = 0; b < X3.size(0); ++b) {
      if (A.dtype() == kFloat) {
        cblas_strsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, int(r), int(c), 1.0f,
                    A3.data_ptr<float>() + b * n * n, int(n), X3.data_ptr<float>() + b * r * c,
                    int(c));
      } else {
        cblas_dtrsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, int(r), int(c), 1.0,
                    A3.data_ptr<double>() + b * n * n, int(n), X3.data_ptr<double>() + b * r * c,
                    int(c));
      }
    }
  }
  return X3.reshape(with_tail(bs, {r, c}));
}

Tensor euclidean_dist(const Tensor& x1, const Tensor& x2) {
  // ||a - b||^2 = |a|^2 - 2 a.b + |b|^2 as one matmul of padded operands (PyTorch's trick);
  // clamped at 0 because cancellation can make it slightly negative.
  Tensor n1 = x1.pow(Scalar(2)).sum(IntArrayRef{-1}, true);
  Tensor n2 = x2.pow(Scalar(2)).sum(IntArrayRef{-1}, true);
  Tensor a = retorch::cat({x1 * Scalar(-2), n1, ones_like(n1)}, -1);
  Tensor b = retorch::cat({x2, ones_like(n2), n2}, -1);
  return a.matmul(b.transpose(-2, -1)).clamp(Scalar(0), std::nullopt).sqrt();
}

}  // namespace retorch::cpu
