// CUDA kernels of the LAPACK ops through cuSOLVER (opened at run time) and cuBLAS's trsm:
// cholesky, LU (factor, unpack, solve, inverse, determinants), triangular solves, QR, eigh and
// SVD of float32 and float64 matrices, a 2-d call per matrix of the batch.
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "retorch/backend/cuda/CudaLinalg.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/SharedLibrary.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/generated/Functions.h"

namespace retorch::cuda_backend {

// Note [CUDA linear algebra]
// cuSOLVER is dlopen'd on the first call (RETORCH_CUSOLVER names it, else libcusolver.so.12/.11
// or /usr/local/cuda/lib64/libcusolver.so), and cuBLAS again for trsm (its handle is this file's
// own), as Note [cuBLAS products]; without them, for dtypes other than float32 and float64, for
// empty inputs and for arguments the cpu kernel refuses, an op takes the device fallback, so
// its results and errors are the cpu kernel's (backend/cpu/Lapack.cpp). Each matrix of a batch
// is one 2-d call of the legacy S/D API on the thread's handle, on the current stream, with a
// workspace from the caching allocator sized once by *_bufferSize; the solver works on a
// fresh contiguous copy made on the device.
// Layouts: cuSOLVER is column-major, and a row-major [r, c] buffer read column-major is the
// c x r transpose. So a copy of A as stored hands cuSOLVER M = Aᵀ (lda = c), and a copy of
// A.transpose(-2, -1) hands it A itself (lda = r); a column-major result X read back row-major
// is Xᵀ. Each op uses whichever needs fewer transposes:
//  - cholesky: M = Aᵀ, potrf(UPPER) reads M's upper triangle, which is A's lower (the cpu's
//    potrf('L') reads A's lower), and writes U with M = UᵀU; read row-major U is L = Uᵀ in the
//    lower triangle, the untouched strict upper is zeroed. upper=True is Lᵀ, a transposed copy.
//  - det, slogdet, inv: M = Aᵀ has A's determinant; inv solves M Y = I, so Y = (A⁻¹)ᵀ, which
//    read row-major is A⁻¹. The pivots of Aᵀ differ from A's, but only their sign is used.
//  - lu_factor_ex: the pivots must be A's row swaps, so A itself (the transposed copy) is
//    factored and the m x n LU transposed back. pivot=False hands getrf no pivot array (no
//    swaps); the pivots returned are 1..k and a check_errors failure is raised here, since the
//    cpu kernel refuses pivot=False altogether.
//  - _linalg_solve: M = Aᵀ is factored and getrs(OP_T) solves Mᵀ X = A X = B, B handed
//    column-major (its transposed copy), X transposed back.
//  - solve_triangular: A X = B is Xᵀ Aᵀ = Bᵀ, so cuBLAS sees X's row-major buffer (Xᵀ, c x r,
//    ldb c) solved from the right (left=False: from the left) by M = Aᵀ, whose triangle is the
//    other one (upper A: lower M). Nothing is transposed.
//  - qr: A itself (lda m) through geqrf; R is the upper triangle of its first rows, Q the
//    orgqr of it (complete mode with m > n: a buffer of m columns, A in its first n), both
//    transposed back.
//  - eigh: M = Aᵀ with the other triangle (UPLO L: UPPER) is the same symmetric matrix; the
//    eigenvectors are M's columns, transposed back; the eigenvalues are written in place.
//  - svd: gesvd needs rows ≥ cols. m ≥ n: A itself, U and Vᵀ transposed back. m < n: M = Aᵀ
//    (n x m) = U' S V'ᵀ, so A = V' S U'ᵀ: U' read row-major is A's Vh and V'ᵀ read row-major
//    is A's U, nothing transposed. The driver argument (CUDA-only in PyTorch) accepts gesvd,
//    gesvdj and gesvda, all answered by gesvd.
// Errors: where the cpu kernel raises on a matrix's info (cholesky of a matrix that is not
// positive-definite, inv or solve of a singular one, lu_factor_ex with check_errors, eigh or
// svd not converging), the infos are read back (one synchronization, as PyTorch's) and the call
// reruns through the fallback, whose cpu kernel raises its own error; nothing on the device
// is left in a bad state. det and slogdet of a singular matrix are 0 and -inf as the cpu's,
// without a synchronization. lu_unpack does not read its pivots back: one outside [1, m],
// which the cpu kernel refuses, is skipped (PyTorch's CUDA kernel only asserts).

namespace {

template <typename T>
struct Routines {
  cusolverStatus_t (*potrf_size)(cusolverDnHandle_t, cublasFillMode_t, int, T*, int, int*);
  cusolverStatus_t (*potrf)(cusolverDnHandle_t, cublasFillMode_t, int, T*, int, T*, int, int*);
  cusolverStatus_t (*getrf_size)(cusolverDnHandle_t, int, int, T*, int, int*);
  cusolverStatus_t (*getrf)(cusolverDnHandle_t, int, int, T*, int, T*, int*, int*);
  cusolverStatus_t (*getrs)(cusolverDnHandle_t, cublasOperation_t, int, int, const T*, int,
                            const int*, T*, int, int*);
  cusolverStatus_t (*geqrf_size)(cusolverDnHandle_t, int, int, T*, int, int*);
  cusolverStatus_t (*geqrf)(cusolverDnHandle_t, int, int, T*, int, T*, T*, int, int*);
  cusolverStatus_t (*orgqr_size)(cusolverDnHandle_t, int, int, int, const T*, int, const T*,
                                 int*);
  cusolverStatus_t (*orgqr)(cusolverDnHandle_t, int, int, int, T*, int, const T*, T*, int, int*);
  cusolverStatus_t (*syevd_size)(cusolverDnHandle_t, cusolverEigMode_t, cublasFillMode_t, int,
                                 const T*, int, const T*, int*);
  cusolverStatus_t (*syevd)(cusolverDnHandle_t, cusolverEigMode_t, cublasFillMode_t, int, T*, int,
                            T*, T*, int, int*);
  cusolverStatus_t (*gesvd_size)(cusolverDnHandle_t, int, int, int*);
  cusolverStatus_t (*gesvd)(cusolverDnHandle_t, signed char, signed char, int, int, T*, int, T*,
                            T*, int, T*, int, T*, int, T*, int*);
  cublasStatus_t (*trsm)(cublasHandle_t, cublasSideMode_t, cublasFillMode_t, cublasOperation_t,
                         cublasDiagType_t, int, int, const T*, const T*, int, T*, int);
};

// cuSOLVER's functions of one precision ("S" or "D").
template <typename T>
bool bind_solver(void* lib, const char* p, Routines<T>* r) {
  auto bind = [&](const char* op, auto* f) {
    return bind_symbol(lib, (std::string("cusolverDn") + p + op).c_str(), f);
  };
  return bind("potrf_bufferSize", &r->potrf_size) && bind("potrf", &r->potrf) &&
         bind("getrf_bufferSize", &r->getrf_size) && bind("getrf", &r->getrf) &&
         bind("getrs", &r->getrs) && bind("geqrf_bufferSize", &r->geqrf_size) &&
         bind("geqrf", &r->geqrf) && bind("orgqr_bufferSize", &r->orgqr_size) &&
         bind("orgqr", &r->orgqr) && bind("syevd_bufferSize", &r->syevd_size) &&
         bind("syevd", &r->syevd) && bind("gesvd_bufferSize", &r->gesvd_size) &&
         bind("gesvd", &r->gesvd);
}

struct Libraries {
  void* solver = nullptr;
  void* blas = nullptr;  // nullptr without cuBLAS: trsm takes the fallback
  std::string why;
  cusolverStatus_t (*create)(cusolverDnHandle_t*) = nullptr;
  cusolverStatus_t (*set_stream)(cusolverDnHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*blas_create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*blas_set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  Routines<float> s{};
  Routines<double> d{};
  // made by the loader, given to the first thread that asks
  std::atomic<cusolverDnHandle_t> first{nullptr};
};

// The libraries, or nullptr when cuSOLVER cannot be loaded or cannot make a handle.
Libraries* libraries() {
  static Libraries* c = [] {
    auto* r = new Libraries();
    r->solver = open_library("RETORCH_CUSOLVER",
                             {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so",
                              "/usr/local/cuda/lib64/libcusolver.so"},
                             &r->why);
    if (r->solver && !(bind_symbol(r->solver, "cusolverDnCreate", &r->create) &&
                       bind_symbol(r->solver, "cusolverDnSetStream", &r->set_stream) &&
                       bind_solver(r->solver, "S", &r->s) && bind_solver(r->solver, "D", &r->d))) {
      r->why = "libcusolver lacks the functions used here";
      r->solver = nullptr;
    }
    cusolverDnHandle_t probe = nullptr;  // the first handle, made here so a failure means none
    if (r->solver && r->create(&probe) != CUSOLVER_STATUS_SUCCESS) {
      r->why = "cusolverDnCreate failed";
      r->solver = nullptr;
    }
    if (r->solver) r->first = probe;
    std::string blas_why;
    r->blas = open_library("RETORCH_CUBLAS",
                           {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                            "/usr/local/cuda/lib64/libcublas.so"},
                           &blas_why);
    if (r->blas && !(bind_symbol(r->blas, "cublasCreate_v2", &r->blas_create) &&
                     bind_symbol(r->blas, "cublasSetStream_v2", &r->blas_set_stream) &&
                     bind_symbol(r->blas, "cublasStrsm_v2", &r->s.trsm) &&
                     bind_symbol(r->blas, "cublasDtrsm_v2", &r->d.trsm)))
      r->blas = nullptr;
    return r;
  }();
  return c->solver ? c : nullptr;
}

template <typename T>
const Routines<T>& routines(const Libraries& l) {
  if constexpr (std::is_same_v<T, float>)
    return l.s;
  else
    return l.d;
}

// This thread's cuSOLVER handle (one device: Note [CUDA tensors]) on the current stream.
cusolverDnHandle_t solver_handle(Libraries& lib) {
  cusolverDnHandle_t h = thread_handle<cusolverDnHandle_t>([&] {
    cusolverDnHandle_t made = lib.first.exchange(nullptr);
    if (made == nullptr) {
      const cusolverStatus_t st = lib.create(&made);
      RT_CHECK(st == CUSOLVER_STATUS_SUCCESS, "cuda linalg: cusolverDnCreate failed (status ",
               int(st), ")");
    }
    return made;
  });
  const cusolverStatus_t st = lib.set_stream(h, static_cast<cudaStream_t>(current_stream()));
  RT_CHECK(st == CUSOLVER_STATUS_SUCCESS, "cuda linalg: cusolverDnSetStream failed (status ",
           int(st), ")");
  return h;
}

// This thread's cuBLAS handle of this file (trsm), on the current stream.
cublasHandle_t blas_handle(Libraries& lib) {
  cublasHandle_t h = thread_handle<cublasHandle_t>([&] {
    cublasHandle_t made = nullptr;
    const cublasStatus_t st = lib.blas_create(&made);
    RT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda linalg: cublasCreate failed (status ", int(st),
             ")");
    return made;
  });
  const cublasStatus_t st = lib.blas_set_stream(h, static_cast<cudaStream_t>(current_stream()));
  RT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda linalg: cublasSetStream failed (status ", int(st),
           ")");
  return h;
}

void check(cusolverStatus_t st, const char* what) {
  RT_CHECK(st == CUSOLVER_STATUS_SUCCESS, "cuda ", what, ": cuSOLVER failed (status ", int(st),
           ")");
}

// Calls f(float{}) or f(double{}) for dtype (float32 or float64).
template <typename F>
void with_lapack(ScalarType dtype, const F& f) {
  if (dtype == kFloat)
    f(float{});
  else
    f(double{});
}

template <typename T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(device_ptr(t));
}

// A non-empty float32 or float64 tensor of at least 2 dims in device memory whose matrices fit
// cuSOLVER's int sizes.
bool lapack_input(const Tensor& t) {
  return in_device_memory(t) && (t.dtype() == kFloat || t.dtype() == kDouble) && t.dim() >= 2 &&
         t.numel() > 0 && t.size(-1) <= INT32_MAX && t.size(-2) <= INT32_MAX &&
         t.size(-1) * t.size(-2) <= INT32_MAX;
}

bool square_input(const Tensor& t) {
  return lapack_input(t) && t.size(-1) == t.size(-2);
}

DimVector batch_dims(const Tensor& t) {
  return DimVector(t.sizes().begin(), t.sizes().end() - 2);
}

DimVector with_tail(DimVector s, std::initializer_list<int64_t> tail) {
  for (int64_t v : tail) s.push_back(v);
  return s;
}

// The broadcast batch dims of a and b, or nullopt when they do not broadcast.
std::optional<DimVector> broadcast_batch(const Tensor& a, const Tensor& b) {
  const DimVector x = batch_dims(a), y = batch_dims(b);
  const int64_t nx = int64_t(x.size()), ny = int64_t(y.size()), nd = std::max(nx, ny);
  DimVector out;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t ix = i - (nd - nx), iy = i - (nd - ny);
    const int64_t u = ix >= 0 ? x[size_t(ix)] : 1, v = iy >= 0 ? y[size_t(iy)] : 1;
    if (u != v && u != 1 && v != 1) return std::nullopt;
    out.push_back(u == 1 ? v : u);
  }
  return out;
}

// A fresh contiguous [batch, rows, cols] copy of t's matrices made on the device, or of their
// transposes ([batch, cols, rows]): a buffer cuSOLVER may overwrite (Note [CUDA linear
// algebra] on which to hand it).
Tensor matrices(const Tensor& t, bool transposed) {
  const Tensor src = transposed ? t.transpose(-2, -1) : t;
  Tensor c = make_empty(src.sizes(), src.dtype(), src.device());
  RT_CHECK(copy_on_device(c, src), "cuda linalg: could not copy a ", src.sizes(), " operand");
  const int64_t r = src.size(-2), cols = src.size(-1);
  return c.view({src.numel() / (r * cols), r, cols});
}

// A workspace of `count` elements of t's dtype.
Tensor workspace(int count, const Tensor& t) {
  return make_empty({std::max(count, 1)}, t.dtype(), t.device());
}

// Whether every int of `info` (devInfo per matrix) is 0: one synchronization, the copy to the
// host waiting for the stream.
bool all_zero(const Tensor& info) {
  const Tensor host = info.to(Device(kCPU));
  const int* p = host.data_ptr<int>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (p[i] != 0) return false;
  return true;
}

// The cpu kernel's check_errors failure for the first matrix whose info is non-zero (its U has
// a zero diagonal element), where the cpu kernel cannot run the call itself.
[[noreturn]] void raise_singular_u(const Tensor& info, bool batched, const char* op) {
  const Tensor host = info.to(Device(kCPU)).reshape({-1});
  const int* p = host.data_ptr<int>();
  int64_t b = 0;
  while (b + 1 < host.numel() && p[b] == 0) ++b;
  const std::string where = batched ? "(Batch element " + std::to_string(b) + "): " : "";
  RT_ERROR(op, ": ", where, "U[", p[b], ",", p[b], "] is zero and using it on lu_solve would "
           "result in a division by zero. If you still want to perform the factorization, "
           "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
}

FloatType ftype(const Tensor& t) {
  return t.dtype() == kFloat ? FloatType::kFloat : FloatType::kDouble;
}

Tensor empty0(const Tensor& like) {
  return make_empty({0}, like.dtype(), like.device());
}

const IValue* args(const OpSchema& s, Stack* stack) {
  return &(*stack)[stack->size() - size_t(s.num_args)];
}

// getrf of each [n, n] matrix of m (column-major), pivots and infos per matrix.
template <typename T>
void lu_in_place(Libraries& lib, const Tensor& m, const Tensor& pivots, const Tensor& info,
                 const char* what) {
  const Routines<T>& r = routines<T>(lib);
  cusolverDnHandle_t hd = solver_handle(lib);
  const int64_t n = m.size(1), batch = m.size(0);
  int lwork = 0;
  check(r.getrf_size(hd, int(n), int(n), ptr<T>(m), int(n), &lwork), what);
  const Tensor work = workspace(lwork, m);
  for (int64_t b = 0; b < batch; ++b)
    check(r.getrf(hd, int(n), int(n), ptr<T>(m) + b * n * n, int(n), ptr<T>(work),
                  ptr<int>(pivots) + b * n, ptr<int>(info) + b),
          what);
}

// getrf of each [n, n] matrix of m (column-major), then getrs(op) of the matching [n, k] block
// of x (column-major) in place; false when some matrix is singular (its info read back).
bool lu_solve(Libraries& lib, const Tensor& m, const Tensor& x, int64_t k, cublasOperation_t op,
              const char* what) {
  const int64_t n = m.size(1), batch = m.size(0);
  const Tensor pivots = make_empty({batch, n}, kInt, m.device());
  const Tensor info = make_empty({batch}, kInt, m.device());
  const Tensor scratch = make_empty({1}, kInt, m.device());
  with_lapack(m.dtype(), [&](auto tag) {
    using T = decltype(tag);
    lu_in_place<T>(lib, m, pivots, info, what);
    const Routines<T>& r = routines<T>(lib);
    cusolverDnHandle_t hd = solver_handle(lib);
    for (int64_t b = 0; b < batch; ++b)
      check(r.getrs(hd, op, int(n), int(k), ptr<T>(m) + b * n * n, int(n),
                    ptr<int>(pivots) + b * n, ptr<T>(x) + b * n * k, int(n), ptr<int>(scratch)),
            what);
  });
  return all_zero(info);
}

// linalg_cholesky(self, *, upper)
void cholesky(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor A = a[0].to_tensor();
  const bool upper = a[1].to_bool();
  Libraries* lib = libraries();
  if (!lib || !square_input(A)) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor m = matrices(A, false);  // M = Aᵀ: its upper triangle is A's lower
  const int64_t n = A.size(-1), batch = m.size(0);
  const Tensor info = make_empty({batch}, kInt, A.device());
  with_lapack(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Routines<T>& r = routines<T>(*lib);
    cusolverDnHandle_t hd = solver_handle(*lib);
    int lwork = 0;
    check(r.potrf_size(hd, CUBLAS_FILL_MODE_UPPER, int(n), ptr<T>(m), int(n), &lwork),
          "linalg_cholesky");
    const Tensor work = workspace(lwork, A);
    for (int64_t b = 0; b < batch; ++b)
      check(r.potrf(hd, CUBLAS_FILL_MODE_UPPER, int(n), ptr<T>(m) + b * n * n, int(n),
                    ptr<T>(work), lwork, ptr<int>(info) + b),
            "linalg_cholesky");
  });
  if (!all_zero(info)) return run_device_fallback(h, ks, stack);  // the cpu's error
  launch_triangle(ftype(A), device_ptr(m), batch, n, n, true, false, current_stream());
  const Tensor L = upper ? matrices(m, true) : m;
  push_results(s, {L.view(A.sizes())}, stack);
}

// linalg_lu_factor_ex(A, *, pivot, check_errors) -> (LU, pivots, info). pivot=False (which the
// cpu refuses) is getrf without a pivot array, which factors without row swaps, and the pivots
// are the identity's, 1..k, as PyTorch's CUDA kernel returns them.
void lu_factor_ex(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor A = a[0].to_tensor();
  const bool pivot = a[1].to_bool(), check_errors = a[2].to_bool();
  Libraries* lib = libraries();
  if (!lib || !lapack_input(A)) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const Tensor buf = matrices(A, true);  // A itself, column-major, lda m
  const int64_t batch = buf.size(0);
  const DimVector bs = batch_dims(A);
  const Tensor pivots =
      pivot ? make_empty(with_tail(bs, {k}), kInt, A.device())
            : arange(1, k + 1, 1, TensorOptions(kInt).device(A.device()))
                  .expand(with_tail(bs, {k}))
                  .contiguous();
  const Tensor info = make_empty(bs, kInt, A.device());
  with_lapack(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Routines<T>& r = routines<T>(*lib);
    cusolverDnHandle_t hd = solver_handle(*lib);
    int lwork = 0;
    check(r.getrf_size(hd, int(m), int(n), ptr<T>(buf), int(m), &lwork), "linalg_lu_factor_ex");
    const Tensor work = workspace(lwork, A);
    for (int64_t b = 0; b < batch; ++b)
      check(r.getrf(hd, int(m), int(n), ptr<T>(buf) + b * m * n, int(m), ptr<T>(work),
                    pivot ? ptr<int>(pivots) + b * k : nullptr, ptr<int>(info) + b),
            "linalg_lu_factor_ex");
  });
  if (check_errors && !all_zero(info)) {
    if (pivot) return run_device_fallback(h, ks, stack);  // the cpu kernel's error
    raise_singular_u(info, A.dim() > 2, "torch.linalg.lu_factor_ex");
  }
  push_results(s, {matrices(buf, true).view(A.sizes()), pivots, info}, stack);
}

// lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots) -> (P, L, U)
void lu_unpack(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor LU = a[0].to_tensor(), piv = a[1].to_tensor();
  const bool unpack_data = a[2].to_bool(), unpack_pivots = a[3].to_bool();
  bool ok = lapack_input(LU) && in_device_memory(piv) && piv.dtype() == kInt && piv.dim() >= 1 &&
            piv.device() == LU.device();
  const int64_t m = ok ? LU.size(-2) : 0, n = ok ? LU.size(-1) : 0, k = std::min(m, n);
  const DimVector bs = ok ? batch_dims(LU) : DimVector();
  ok = ok && piv.size(-1) <= k &&
       IntArrayRef(piv.sizes().begin(), piv.sizes().end() - 1) == IntArrayRef(bs);
  if (!ok) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  Tensor P = empty0(LU), L = empty0(LU), U = empty0(LU);
  if (unpack_data) {
    const Tensor l = matrices(LU.narrow(-1, 0, k), false), u = matrices(LU.narrow(-2, 0, k), false);
    launch_triangle(ftype(LU), device_ptr(l), l.size(0), m, k, true, true, current_stream());
    launch_triangle(ftype(LU), device_ptr(u), u.size(0), k, n, false, false, current_stream());
    L = l.view(with_tail(bs, {m, k}));
    U = u.view(with_tail(bs, {k, n}));
  }
  if (unpack_pivots) {
    const Tensor pc = contiguous_on_device(piv);
    const int64_t batch = LU.numel() / (m * n);
    P = make_empty(with_tail(bs, {m, m}), LU.dtype(), LU.device());
    const Tensor perm = make_empty({batch, m}, kLong, LU.device());
    launch_permutation(ftype(LU), ptr<int32_t>(pc), batch, m, piv.size(-1), ptr<int64_t>(perm),
                       device_ptr(P), current_stream());
  }
  push_results(s, {P, L, U}, stack);
}

// _linalg_solve(A, B): X with A X = B, batch dims broadcast.
void solve(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor A = a[0].to_tensor(), B = a[1].to_tensor();
  Libraries* lib = libraries();
  bool ok = lib && square_input(A) && lapack_input(B) && B.dtype() == A.dtype() &&
            B.device() == A.device() && B.size(-2) == A.size(-1);
  const std::optional<DimVector> bs = ok ? broadcast_batch(A, B) : std::nullopt;
  if (!bs) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t n = A.size(-1), k = B.size(-1);
  const Tensor m = matrices(A.expand(with_tail(*bs, {n, n})), false);  // M = Aᵀ
  const Tensor x = matrices(B.expand(with_tail(*bs, {n, k})), true);   // B column-major
  // Mᵀ X = A X = B
  if (!lu_solve(*lib, m, x, k, CUBLAS_OP_T, "linalg_solve"))
    return run_device_fallback(h, ks, stack);  // singular: the cpu's error
  push_results(s, {matrices(x, true).view(with_tail(*bs, {n, k}))}, stack);
}

// linalg_inv(A): M = Aᵀ solved against the identity is (A⁻¹)ᵀ column-major, A⁻¹ row-major.
void inv(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const Tensor A = args(s, stack)[0].to_tensor();
  Libraries* lib = libraries();
  if (!lib || !square_input(A)) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t n = A.size(-1);
  const Tensor m = matrices(A, false);
  const int64_t batch = m.size(0);
  const Tensor x = make_empty({batch, n, n}, A.dtype(), A.device());
  check_status(cudaMemsetAsync(device_ptr(x), 0, size_t(x.numel()) * size_t(x.element_size()),
                               static_cast<cudaStream_t>(current_stream())),
               "cudaMemsetAsync");
  launch_triangle(ftype(A), device_ptr(x), batch, n, n, true, true, current_stream());  // I
  if (!lu_solve(*lib, m, x, n, CUBLAS_OP_N, "linalg_inv"))
    return run_device_fallback(h, ks, stack);  // singular: the cpu's error
  push_results(s, {x.view(A.sizes())}, stack);
}

// linalg_det(A) (`det`) and linalg_slogdet(A): getrf of M = Aᵀ, then a thread per matrix over
// the diagonal and the pivots, as the cpu's lu_slogdet; no synchronization.
void determinant(bool det, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const Tensor A = args(s, stack)[0].to_tensor();
  Libraries* lib = libraries();
  if (!lib || !square_input(A)) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t n = A.size(-1);
  const Tensor m = matrices(A, false);
  const int64_t batch = m.size(0);
  const DimVector bs = batch_dims(A);
  const Tensor pivots = make_empty({batch, n}, kInt, A.device());
  const Tensor info = make_empty({batch}, kInt, A.device());
  with_lapack(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    lu_in_place<T>(*lib, m, pivots, info, det ? "linalg_det" : "linalg_slogdet");
  });
  if (det) {
    const Tensor d = make_empty(bs, A.dtype(), A.device());
    launch_lu_det(ftype(A), device_ptr(m), ptr<int32_t>(pivots), batch, n, nullptr, nullptr,
                  device_ptr(d), current_stream());
    return push_results(s, {d}, stack);
  }
  const Tensor sign = make_empty(bs, A.dtype(), A.device());
  const Tensor logabs = make_empty(bs, A.dtype(), A.device());
  launch_lu_det(ftype(A), device_ptr(m), ptr<int32_t>(pivots), batch, n, device_ptr(sign),
                device_ptr(logabs), nullptr, current_stream());
  push_results(s, {sign, logabs}, stack);
}

void det(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  determinant(true, h, ks, stack);
}
void slogdet(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  determinant(false, h, ks, stack);
}

// linalg_solve_triangular(self, B, *, upper, left, unitriangular) through cuBLAS trsm on the
// row-major buffers as they are (Note [CUDA linear algebra]). B of another dtype (which the
// cpu converts) takes the fallback.
void solve_triangular(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor A = a[0].to_tensor(), B = a[1].to_tensor();
  const bool upper = a[2].to_bool(), left = a[3].to_bool(), unit = a[4].to_bool();
  Libraries* lib = libraries();
  const bool ok = lib && lib->blas && square_input(A) && lapack_input(B) &&
                  B.dtype() == A.dtype() && B.device() == A.device() &&
                  (left ? B.size(-2) : B.size(-1)) == A.size(-1);
  const std::optional<DimVector> bs = ok ? broadcast_batch(A, B) : std::nullopt;
  if (!bs) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t n = A.size(-1), r = B.size(-2), c = B.size(-1);
  const Tensor m = matrices(A.expand(with_tail(*bs, {n, n})), false);  // M = Aᵀ
  const Tensor x = matrices(B.expand(with_tail(*bs, {r, c})), false);  // Xᵀ column-major, c x r
  with_lapack(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Routines<T>& rt = routines<T>(*lib);
    cublasHandle_t hd = blas_handle(*lib);
    const T one = 1;
    for (int64_t b = 0; b < x.size(0); ++b) {
      const cublasStatus_t st =
          rt.trsm(hd, left ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT,
                  upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                  unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, int(c), int(r), &one,
                  ptr<T>(m) + b * n * n, int(n), ptr<T>(x) + b * r * c, int(c));
      RT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda linalg_solve_triangular: cuBLAS failed (status ",
               int(st), ")");
    }
  });
  push_results(s, {x.view(with_tail(*bs, {r, c}))}, stack);
}

// linalg_qr(A, mode) -> (Q, R): geqrf of A itself, R from its upper triangle, Q by orgqr.
void qr(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor A = a[0].to_tensor();
  const std::string mode = a[1].to_string();
  Libraries* lib = libraries();
  if (!lib || !lapack_input(A) || !(mode == "reduced" || mode == "complete" || mode == "r"))
    return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const bool complete = mode == "complete";
  const int64_t qcols = complete ? m : k, rrows = complete ? m : k, cols = std::max(n, qcols);
  Tensor buf = matrices(A, true);  // A column-major, lda m: [batch, n, m]
  const int64_t batch = buf.size(0);
  if (cols > n) {  // complete with m > n: orgqr writes m columns
    Tensor wide = make_empty({batch, cols, m}, A.dtype(), A.device());
    RT_CHECK(copy_on_device(wide.narrow(1, 0, n), buf), "cuda linalg_qr: copy failed");
    buf = wide;
  }
  const Tensor tau = make_empty({batch, k}, A.dtype(), A.device());
  const Tensor scratch = make_empty({1}, kInt, A.device());
  const Tensor R = make_empty({batch, rrows, n}, A.dtype(), A.device());
  with_lapack(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Routines<T>& r = routines<T>(*lib);
    cusolverDnHandle_t hd = solver_handle(*lib);
    int lwork = 0, lwork_q = 0;
    check(r.geqrf_size(hd, int(m), int(n), ptr<T>(buf), int(m), &lwork), "linalg_qr");
    if (mode != "r")
      check(r.orgqr_size(hd, int(m), int(qcols), int(k), ptr<T>(buf), int(m), ptr<T>(tau),
                         &lwork_q),
            "linalg_qr");
    lwork = std::max(lwork, lwork_q);
    const Tensor work = workspace(lwork, A);
    for (int64_t b = 0; b < batch; ++b)
      check(r.geqrf(hd, int(m), int(n), ptr<T>(buf) + b * cols * m, int(m), ptr<T>(tau) + b * k,
                    ptr<T>(work), lwork, ptr<int>(scratch)),
            "linalg_qr");
    // R = the first rrows rows of the factored A, upper triangle; copied before orgqr runs.
    RT_CHECK(copy_on_device(R, buf.narrow(1, 0, n).transpose(1, 2).narrow(1, 0, rrows)),
             "cuda linalg_qr: copy failed");
    launch_triangle(ftype(A), device_ptr(R), batch, rrows, n, false, false, current_stream());
    if (mode == "r") return;
    for (int64_t b = 0; b < batch; ++b)
      check(r.orgqr(hd, int(m), int(qcols), int(k), ptr<T>(buf) + b * cols * m, int(m),
                    ptr<T>(tau) + b * k, ptr<T>(work), lwork, ptr<int>(scratch)),
            "linalg_qr");
  });
  const DimVector bs = batch_dims(A);
  const Tensor Rv = R.view(with_tail(bs, {rrows, n}));
  if (mode == "r") return push_results(s, {empty0(A), Rv}, stack);
  const Tensor Q = matrices(buf.narrow(1, 0, qcols), true).view(with_tail(bs, {m, qcols}));
  push_results(s, {Q, Rv}, stack);
}

// _linalg_eigh(A, UPLO, compute_v) -> (eigenvalues, eigenvectors) by syevd of M = Aᵀ.
void eigh(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor A = a[0].to_tensor();
  const std::string uplo = a[1].to_string();
  const bool compute_v = a[2].to_bool();
  Libraries* lib = libraries();
  if (!lib || !square_input(A) || !(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u"))
    return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const bool lower = uplo == "L" || uplo == "l";
  const int64_t n = A.size(-1);
  const Tensor m = matrices(A, false);
  const int64_t batch = m.size(0);
  const Tensor w = make_empty({batch, n}, A.dtype(), A.device());
  const Tensor info = make_empty({batch}, kInt, A.device());
  const cusolverEigMode_t jobz = compute_v ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  const cublasFillMode_t fill = lower ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  with_lapack(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Routines<T>& r = routines<T>(*lib);
    cusolverDnHandle_t hd = solver_handle(*lib);
    int lwork = 0;
    check(r.syevd_size(hd, jobz, fill, int(n), ptr<T>(m), int(n), ptr<T>(w), &lwork),
          "linalg_eigh");
    const Tensor work = workspace(lwork, A);
    for (int64_t b = 0; b < batch; ++b)
      check(r.syevd(hd, jobz, fill, int(n), ptr<T>(m) + b * n * n, int(n), ptr<T>(w) + b * n,
                    ptr<T>(work), lwork, ptr<int>(info) + b),
            "linalg_eigh");
  });
  if (!all_zero(info)) return run_device_fallback(h, ks, stack);  // the cpu's error
  const DimVector bs = batch_dims(A);
  const Tensor V = compute_v ? matrices(m, true).view(A.sizes()) : empty0(A);
  push_results(s, {w.view(with_tail(bs, {n})), V}, stack);
}

// _linalg_svd(A, full_matrices, compute_uv, *, driver) -> (U, S, Vh) by gesvd (rows ≥ cols:
// A itself when m ≥ n, else M = Aᵀ, Note [CUDA linear algebra]).
void svd(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = args(s, stack);
  const Tensor A = a[0].to_tensor();
  const bool full = a[1].to_bool(), compute_uv = a[2].to_bool();
  const std::string driver = a[3].is_none() ? "gesvd" : a[3].to_string();
  Libraries* lib = libraries();
  if (!lib || !lapack_input(A) || !(driver == "gesvd" || driver == "gesvdj" || driver == "gesvda"))
    return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const bool tall = m >= n;
  const int64_t rows = tall ? m : n, cols = tall ? n : m;  // the factored matrix, rows ≥ cols
  const int64_t ucols = full ? rows : cols;                 // its U: rows x ucols; its Vᵀ: k x k
  const Tensor buf = matrices(A, tall);                      // column-major, lda rows
  const int64_t batch = buf.size(0);
  const Tensor S = make_empty({batch, k}, A.dtype(), A.device());
  const Tensor u = compute_uv ? make_empty({batch, ucols, rows}, A.dtype(), A.device()) : Tensor();
  const Tensor vt = compute_uv ? make_empty({batch, k, k}, A.dtype(), A.device()) : Tensor();
  const Tensor info = make_empty({batch}, kInt, A.device());
  const Tensor rwork = workspace(int(std::max<int64_t>(k - 1, 1)), A);
  const signed char jobu = !compute_uv ? 'N' : full ? 'A' : 'S', jobvt = compute_uv ? 'A' : 'N';
  with_lapack(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Routines<T>& r = routines<T>(*lib);
    cusolverDnHandle_t hd = solver_handle(*lib);
    int lwork = 0;
    check(r.gesvd_size(hd, int(rows), int(cols), &lwork), "linalg_svd");
    const Tensor work = workspace(lwork, A);
    for (int64_t b = 0; b < batch; ++b)
      check(r.gesvd(hd, jobu, jobvt, int(rows), int(cols), ptr<T>(buf) + b * rows * cols,
                    int(rows), ptr<T>(S) + b * k,
                    compute_uv ? ptr<T>(u) + b * ucols * rows : nullptr, int(rows),
                    compute_uv ? ptr<T>(vt) + b * k * k : nullptr, int(k), ptr<T>(work), lwork,
                    ptr<T>(rwork), ptr<int>(info) + b),
            "linalg_svd");
  });
  if (!all_zero(info)) return run_device_fallback(h, ks, stack);  // the cpu's error
  const DimVector bs = batch_dims(A);
  const Tensor Sv = S.view(with_tail(bs, {k}));
  if (!compute_uv) return push_results(s, {empty0(A), Sv, empty0(A)}, stack);
  // m ≥ n: U and Vᵀ are A's, transposed back. m < n: Vᵀ read row-major is A's U, U read
  // row-major is A's Vh.
  const Tensor U = tall ? matrices(u, true) : vt;
  const Tensor Vh = tall ? matrices(vt, true) : u;
  push_results(s, {U.view(with_tail(bs, {m, tall ? ucols : m})), Sv,
                   Vh.view(with_tail(bs, {tall ? n : ucols, n}))},
               stack);
}

}  // namespace

void register_linalg_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU) || !s.overload.empty())
      continue;
    const std::string_view n = s.name;
    if (n == "linalg_cholesky") set_cuda_kernel(h, &cholesky);
    else if (n == "linalg_lu_factor_ex") set_cuda_kernel(h, &lu_factor_ex);
    else if (n == "lu_unpack") set_cuda_kernel(h, &lu_unpack);
    else if (n == "_linalg_solve") set_cuda_kernel(h, &solve);
    else if (n == "linalg_inv") set_cuda_kernel(h, &inv);
    else if (n == "linalg_det") set_cuda_kernel(h, &det);
    else if (n == "linalg_slogdet") set_cuda_kernel(h, &slogdet);
    else if (n == "linalg_solve_triangular") set_cuda_kernel(h, &solve_triangular);
    else if (n == "linalg_qr") set_cuda_kernel(h, &qr);
    else if (n == "_linalg_eigh") set_cuda_kernel(h, &eigh);
    else if (n == "_linalg_svd") set_cuda_kernel(h, &svd);
  }
}

}  // namespace retorch::cuda_backend
