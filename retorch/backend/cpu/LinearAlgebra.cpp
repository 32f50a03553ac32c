// Matrix products: mm, bmm, addmm, _addmm_activation, dot through OpenBLAS for float32/float64
// (and, widened, float16/bfloat16), plain loops (accumulating in opmath) for the integer dtypes.
#include <cmath>
#include <cstring>

#include "retorch/backend/cpu/Blas.h"
#include "retorch/backend/cpu/Convert16.h"
#include "retorch/backend/cpu/GemmOneDnn.h"
#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/core/MatmulPrecision.h"
#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {

// A batch of matrix operands as BLAS sees it: row-major with leading dim, possibly transposed,
// matrix i at data + i * batch_stride (elements).
struct BlasMat {
  Tensor t;
  bool trans = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

BlasMat as_blas(const Tensor& m) {
  // m is [B, r, c]. Row-major contiguous rows: stride(2) == 1; transposed: stride(1) == 1.
  int64_t r = m.size(1), c = m.size(2);
  if (m.stride(2) == 1 && (m.stride(1) >= std::max<int64_t>(c, 1) || r == 1))
    return {m, false, std::max<int64_t>(m.stride(1), std::max<int64_t>(c, 1)), m.stride(0)};
  if (m.stride(1) == 1 && (m.stride(2) >= std::max<int64_t>(r, 1) || c == 1))
    return {m, true, std::max<int64_t>(m.stride(2), std::max<int64_t>(r, 1)), m.stride(0)};
  Tensor cm = m.contiguous();
  return {cm, false, std::max<int64_t>(c, 1), r * c};
}

template <typename T>
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, T alpha, const T* a,
               int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Note [GEMM threading]
// OpenBLAS's pthread build keeps its own worker pool, whose threads spin for a long while after
// each threaded call; retorch's other kernels run on libgomp's pool (parallel_for), whose
// threads also spin after each region. Alternating the two, as any model does (a linear layer,
// then elementwise ops), put three or four busy threads on two cores: a 100x1568x10 GEMM
// followed by a relu ran 3-10x slower than with OpenBLAS single-threaded. So matrix products
// call OpenBLAS single-threaded, always, and split large products themselves on parallel_for's
// threads: whole matrices of a batch per thread when the batch is large enough, else column
// (or row) blocks of each product, each block one single-threaded SGEMM. The split happens from
// kSplitWork multiply-adds (~10 us on one core), below which a second thread costs more than
// it saves.
constexpr double kSplitWork = 1 << 20;
// Whether a float32 product runs oneDNN's SGEMM (Note [oneDNN SGEMM]): from kOneDnnWork
// multiply-adds, both sides 32+ wide, and not a transposed B of 4M+ elements (a large linear
// layer's weight), where the split stays ahead.
constexpr double kOneDnnWork = 4 * kSplitWork;
bool onednn_preferred(int64_t M, int64_t N, int64_t K, bool b_transposed) {
  // On AMD (Zen 4, 2026-12-03) oneDNN's transposed-B SGEMM trails the split below 1024 rows:
  // /tmp/mm2.py's NT 256x1024x1024 137-139 GFLOP/s against 164, 512x1024x1024 163-172 against
  // 179-182, 100x784x256 157-164 against 168-183, 32x512x512 300 us against 131 (1024^3: 209
  // against 186).
  static const bool amd = __builtin_cpu_is("amd");
  if (b_transposed && amd && M < 1024) return false;
  return M >= 32 && N >= 32 && double(M) * double(N) * double(K) >= kOneDnnWork &&
         !(b_transposed && N * K >= (int64_t(1) << 22));
}

// Whether a float32 product rounds its operands to bfloat16 (Note [float32 matmul precision]:
// "medium", AVX-512 BF16): from kOneDnnWork multiply-adds and 2 rows. Smaller products gain
// nothing (Zen 4, median of 20 `mm`: 64^3 5.8 us float32 against 10.7 rounded, 128^3 27.6
// against 26.9, 256x784x256 524 against 327); one row stays a GEMV, which streams B once where
// rounding would read it twice.
bool rounds_to_bf16(int64_t M, int64_t N, int64_t K) {
  return M > 1 && double(M) * double(N) * double(K) >= kOneDnnWork &&
         float32_matmul_precision() == Float32MatmulPrecision::kMedium &&
         onednn_bf16_available();
}

// Note [GEMV for one row]
// A product with one row (M == 1, the decode step of a language model) reads each element of B
// once and does one multiply-add with it: it is bound by memory bandwidth, and OpenBLAS's SGEMM
// (0.3.21) still packs B into its panel format first, reading and writing B again. cblas_?gemv
// streams B directly; the threads split B's columns (rows of a linear layer's weight).

// Calls f(i0, i1) for blocks of [0, n) (multiples of `align` but for the last), one per thread.
template <typename F>
void split_blocks(int64_t n, int64_t parts, int64_t align, const F& f) {
  int64_t block = (n + parts - 1) / parts;
  block = (block + align - 1) / align * align;
  parallel_for(0, (n + block - 1) / block, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) f(p * block, std::min(n, (p + 1) * block));
  });
}

// out[i] = alpha * A[i] @ B[i] + beta * out[i] for the batch on raw pointers; out contiguous.
template <typename T>
void blas_batched(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  BlasMat A = as_blas(a), Bm = as_blas(b);
  auto ta = A.trans ? CblasTrans : CblasNoTrans, tb = Bm.trans ? CblasTrans : CblasNoTrans;
  const T* ap = static_cast<const T*>(A.t.impl()->data());
  const T* bp = static_cast<const T*>(Bm.t.impl()->data());
  T* op = out.data_ptr<T>();
  // Rows [i0, i1) and columns [j0, j1) of product i.
  auto block = [&](int64_t i, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const T* a0 = ap + i * A.batch_stride + (A.trans ? i0 : i0 * A.ld);
    const T* b0 = bp + i * Bm.batch_stride + (Bm.trans ? j0 * Bm.ld : j0);
    blas_gemm<T>(ta, tb, int(i1 - i0), int(j1 - j0), int(K), T(alpha), a0, int(A.ld), b0,
                 int(Bm.ld), T(beta), op + i * M * N + i0 * N + j0, int(N));
  };
  BlasSingleThreaded single;  // Note [GEMM threading]
  if constexpr (std::is_same_v<T, float>) {
    if (rounds_to_bf16(M, N, K)) {  // Note [float32 matmul precision]
      int64_t i = 0;
      while (i < B && onednn_bf16_rounded_sgemm(A.trans, Bm.trans, M, N, K, float(alpha),
                                                ap + i * A.batch_stride, A.ld,
                                                bp + i * Bm.batch_stride, Bm.ld, float(beta),
                                                op + i * M * N, N))
        ++i;
      if (i > 0) {  // (a refusal comes at the first product, as all have one shape)
        for (; i < B; ++i) block(i, 0, M, 0, N);
        return;
      }
    }
  }
  const int64_t threads = get_num_threads();
  const double work = double(B) * double(M) * double(N) * double(K);
  if (M == 1 && B == 1) {
    // One row (an LLM decode step): GEMV streams B once; SGEMM would first pack all of it.
    // bench-llm 110m f32 decode: see Note [GEMV for one row].
    int64_t inc = A.trans ? A.ld : 1;
    auto gemv = [&](int64_t j0, int64_t j1) {
      const T* b0 = bp + (Bm.trans ? j0 * Bm.ld : j0);
      int rows = int(Bm.trans ? j1 - j0 : K), cols = int(Bm.trans ? K : j1 - j0);
      auto t = Bm.trans ? CblasNoTrans : CblasTrans;
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemv(CblasRowMajor, t, rows, cols, float(alpha), b0, int(Bm.ld), ap, int(inc),
                    float(beta), op + j0, 1);
      else
        cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, b0, int(Bm.ld), ap, int(inc), beta,
                    op + j0, 1);
    };
    if (threads == 1 || work < kSplitWork) gemv(0, N);
    else split_blocks(N, threads, 16, gemv);
    return;
  }
  if (threads == 1 || work < kSplitWork) {
    for (int64_t i = 0; i < B; ++i) block(i, 0, M, 0, N);
  } else if (B >= 2 * threads || B * std::max<int64_t>(M, N) < 32 * threads) {
    // Whole products per thread: a batch, or products too small to cut. (This tested the
    // shorter side, so a single product with fewer than 64 rows or columns, 100x1568x10 or
    // 32x512x512, ran on one thread: 82 -> 20 us and 210 -> 81-84 us now that they are split
    // along their longer side.)
    parallel_for(0, B, 1, [&](int64_t b0, int64_t e0) {
      for (int64_t i = b0; i < e0; ++i) block(i, 0, M, 0, N);
    });
  } else {
    for (int64_t i = 0; i < B; ++i) {
      if constexpr (std::is_same_v<T, float>) {  // Note [oneDNN SGEMM]
        if (onednn_preferred(M, N, K, Bm.trans) &&
            onednn_sgemm(A.trans, Bm.trans, M, N, K, float(alpha), ap + i * A.batch_stride,
                         A.ld, bp + i * Bm.batch_stride, Bm.ld, float(beta), op + i * M * N, N))
          continue;
      }
      if (N >= M) split_blocks(N, threads, 16, [&](int64_t j0, int64_t j1) { block(i, 0, M, j0, j1); });
      else split_blocks(M, threads, 8, [&](int64_t i0, int64_t i1) { block(i, i0, i1, 0, N); });
    }
  }
}

// Note [16-bit GEMM]
// float16 and bfloat16 products widen both operands to float32 once (exact), run OpenBLAS
// SGEMM, and round the float32 result once: the numbers of a GEMM that accumulates in float32,
// at SGEMM speed. bench_ops: bfloat16 1024^2 at 150-153 GFLOP/s, PyTorch 1.13 4.6-4.7 (its CPU
// bfloat16 GEMM without AVX-512 BF16 is a scalar loop). The widened copies cost 4 bytes per
// operand element, small next to the O(MNK) work.

// A contiguous float32 copy of a float16/bfloat16 tensor, converted on the calling thread: a
// parallel_for here would leave libgomp's worker spinning through the SGEMM that follows, on a
// core OpenBLAS's own threads need.
Tensor widen_serial(const Tensor& t) {
  Tensor c = t.contiguous();
  Tensor f = make_empty(c.sizes(), kFloat, c.device());
  float* fp = f.data_ptr<float>();
  if (c.dtype() == kHalf) to_float(static_cast<const Half*>(c.impl()->data()), fp, c.numel());
  else to_float(static_cast<const BFloat16*>(c.impl()->data()), fp, c.numel());
  return f;
}

// out[b] = alpha * a[b] @ b[b] + beta * out[b] for a [B,M,K], b [B,K,N], out [B,M,N] contiguous.
void gemm(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  int64_t M = out.size(1), K = a.size(2), N = out.size(2);
  if (out.numel() == 0) return;
  ScalarType dt = out.dtype();
  if (K == 0) {
    if (beta == 0) out.zero_();
    else out.mul_(beta);
    return;
  }
  if (dt == kFloat) return blas_batched<float>(a, b, out, alpha, beta);
  if (dt == kDouble) return blas_batched<double>(a, b, out, alpha, beta);
  // Note [bfloat16 GEMM]: native on CPUs with AVX-512 BF16. With alpha or beta (addmm, a
  // linear layer's bias: what autocast's bfloat16 training runs), the product stays float32 and
  // alpha * product + beta * out rounds once, as the widening path's SGEMM does.
  // Under 64^3 multiply-adds oneDNN's primitive set-up outweighs the product (8^3: 4.5 us
  // against the widening path's 1.4; 32^3: 4.9 against 2.2; even at 64^3, ahead from 96^3).
  const bool native = dt == kBFloat16 && out.size(0) * M * N * K >= (int64_t(1) << 18);
  if (native && alpha == 1 && beta == 0 && onednn_bf16_gemm(a, b, out)) return;
  if (native && onednn_bf16_available()) {
    Tensor acc = make_empty(out.sizes(), kFloat, out.device());
    if (onednn_bf16_gemm(a, b, acc)) {
      const float* ap = acc.data_ptr<float>();
      BFloat16* op = out.data_ptr<BFloat16>();
      const float fa = float(alpha), fb = float(beta);
      parallel_for(0, acc.numel(), 16384, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          op[i] = BFloat16(fa * ap[i] + (fb == 0 ? 0.f : fb * float(op[i])));
      });
      return;
    }
  }
  if (dt == kHalf || dt == kBFloat16) {  // Note [16-bit GEMM]
    Tensor acc = beta == 0 ? make_empty(out.sizes(), kFloat, out.device()) : widen_serial(out);
    blas_batched<float>(widen_serial(a), widen_serial(b), acc, alpha, beta);
    if (dt == kHalf) from_float(acc.data_ptr<float>(), out.data_ptr<Half>(), acc.numel());
    else from_float(acc.data_ptr<float>(), out.data_ptr<BFloat16>(), acc.numel());
    return;
  }
  Tensor ac = a.contiguous(), bc = b.contiguous();
  const int64_t B = out.size(0);
  RT_DISPATCH_NUMERIC(dt, "mm", [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* a0 = static_cast<const scalar_t*>(ac.impl()->data());
    const scalar_t* b0 = static_cast<const scalar_t*>(bc.impl()->data());
    scalar_t* o0 = out.data_ptr<scalar_t>();
    parallel_for(0, B * M, 16, [&](int64_t rb, int64_t re) {
      std::vector<op_t> acc(static_cast<size_t>(N));
      for (int64_t row = rb; row < re; ++row) {
        const int64_t bi = row / M, i = row % M;
        const scalar_t* ap = a0 + bi * M * K;
        const scalar_t* bp = b0 + bi * K * N;
        scalar_t* op = o0 + bi * M * N;
        std::fill(acc.begin(), acc.end(), op_t(0));
        for (int64_t k = 0; k < K; ++k) {
          op_t av = op_t(ap[i * K + k]);
          for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += av * op_t(bp[k * N + j]);
        }
        for (int64_t j = 0; j < N; ++j) {
          op_t prev = beta == 0 ? op_t(0) : op_t(op_t(op[i * N + j]) * op_t(beta));
          op[i * N + j] = scalar_t(op_t(op_t(alpha) * acc[size_t(j)] + prev));
        }
      }
    });
  });
}

// A matrix as a batch of one ([1, r, c], sharing its storage): a view made here, not through a
// dispatched unsqueeze (three of those per mm showed up in the profiler, each a full dispatch).
Tensor batch_of_one(const Tensor& m) {
  return alias_with_geometry(m, {1, m.size(0), m.size(1)},
                             {m.size(0) * m.stride(0), m.stride(0), m.stride(1)},
                             m.storage_offset());
}

// The 2-D products as a batch of one.
void gemm2d(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  Tensor o3 = batch_of_one(out);
  gemm(batch_of_one(a), batch_of_one(b), o3, alpha, beta);
}

void check_mm(const char* op, const Tensor& a, const Tensor& b, const char* a_name = "self") {
  RT_CHECK(a.dim() == 2, op, ": ", a_name, " must be a matrix (got a ", a.dim(),
           "-D tensor of shape ", a.sizes(), ")");
  RT_CHECK(b.dim() == 2, op, ": mat2 must be a matrix (got a ", b.dim(), "-D tensor of shape ",
           b.sizes(), ")");
  RT_CHECK(a.size(1) == b.size(0), op, ": mat1 and mat2 shapes cannot be multiplied (",
           a.size(0), "x", a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  RT_CHECK(a.dtype() == b.dtype(), op, ": expected mat1 and mat2 to have the same dtype, but "
           "got: ", a.dtype(), " != ", b.dtype());
  // Like PyTorch, empty products return before the dtype dispatch.
  RT_CHECK(a.dtype() != kBool || a.numel() == 0 || b.numel() == 0, op,
           ": \"addmm_impl_cpu_\" not implemented for 'Bool'");
}

void finish_out(const Tensor& result, Tensor& out, const char* op) {
  if (!out.defined()) {
    out = result;
    return;
  }
  RT_CHECK(out.dtype() == result.dtype(), op, ": expected out to have dtype ", result.dtype(),
           " but got ", out.dtype());
  detail::resize_output(out, result.sizes(), op);
  out.copy_(result);
}

// Note [GEMM epilogue]
// _addmm_activation (a linear layer and its relu/GELU) makes no separate passes over the
// output: each thread takes a block of output rows or columns (the split of Note [GEMM
// threading]), writes beta * self into it, runs the block's single-threaded GEMM with that
// beta, and applies the activation to the block at once, while the GEMM's last writes are
// still in cache. Blocks are not cut further into cache-sized row chunks: each chunk's GEMM
// repacks its whole B panel, and on this machine (2 cores, 1 MB L2 each) chunks of 256 KB ran
// 5-10% slower than one block per thread at 1024^3 and 2048x256x1024, 64 KB chunks up to 2x
// slower, while the activation pass they would keep in L2 costs ~1-2% of the GEMM.

// The activation over n contiguous outputs: relu keeps NaN (like relu), GELU is the erf form.
template <typename T>
void activation_span(T* c, int64_t n, bool gelu) {
  if (!gelu) {
    for (int64_t i = 0; i < n; ++i) c[i] = c[i] < T(0) ? T(0) : c[i];
    return;
  }
  if (vec_unary(VecFn::kGelu, c, c, n)) return;
  for (int64_t i = 0; i < n; ++i) c[i] = c[i] * T(0.5) * (T(1) + std::erf(c[i] * T(M_SQRT1_2)));
}

// out = act(beta * bias + alpha * a @ b) for 2-D a [M,K], b [K,N], out [M,N] contiguous and
// nonempty; bias is self expanded to [M,N] (unread when beta == 0). See Note [GEMM epilogue].
template <typename T>
void gemm_activation(const Tensor& bias, const Tensor& a, const Tensor& b, Tensor& out,
                     double alpha, double beta, bool gelu) {
  const int64_t M = out.size(0), N = out.size(1), K = a.size(1);
  BlasMat A = as_blas(batch_of_one(a)), Bm = as_blas(batch_of_one(b));
  auto ta = A.trans ? CblasTrans : CblasNoTrans, tb = Bm.trans ? CblasTrans : CblasNoTrans;
  const T* ap = static_cast<const T*>(A.t.impl()->data());
  const T* bp = static_cast<const T*>(Bm.t.impl()->data());
  const T* sp = beta != 0 ? static_cast<const T*>(bias.impl()->data()) : nullptr;
  const int64_t s0 = beta != 0 ? bias.stride(0) : 0, s1 = beta != 0 ? bias.stride(1) : 0;
  T* cp = out.data_ptr<T>();
  // The bias into rows [i0, i1), columns [j0, j1) of out (nothing when beta == 0).
  auto fill_bias = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t w = j1 - j0;
    for (int64_t i = i0; beta != 0 && i < i1; ++i) {
      const T* src = sp + i * s0 + j0 * s1;
      T* dst = cp + i * N + j0;
      if (s1 == 1)
        std::memcpy(dst, src, size_t(w) * sizeof(T));
      else
        for (int64_t j = 0; j < w; ++j) dst[j] = src[j * s1];
    }
  };
  // Rows [i0, i1), columns [j0, j1): bias, GEMM, activation.
  auto block = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t w = j1 - j0;
    T* c = cp + i0 * N + j0;
    fill_bias(i0, i1, j0, j1);
    if (K > 0) {
      const T* a0 = ap + (A.trans ? i0 : i0 * A.ld);
      const T* b0 = bp + (Bm.trans ? j0 * Bm.ld : j0);
      blas_gemm<T>(ta, tb, int(i1 - i0), int(w), int(K), T(alpha), a0, int(A.ld), b0, int(Bm.ld),
                   T(beta), c, int(N));
    }
    for (int64_t i = i0; i < i1; ++i) {
      T* row = cp + i * N + j0;
      if (K == 0)  // an empty product: beta * self alone
        for (int64_t j = 0; j < w; ++j) row[j] = beta == 0 ? T(0) : T(row[j] * T(beta));
      activation_span(row, w, gelu);
    }
  };
  BlasSingleThreaded single;  // Note [GEMM threading]
  const int64_t threads = get_num_threads();
  const bool large = threads > 1 && double(M) * double(N) * double(K) >= kSplitWork;
  if constexpr (std::is_same_v<T, float>) {
    const bool rounded = K > 0 && rounds_to_bf16(M, N, K);
    if (rounded || (large && onednn_preferred(M, N, K, Bm.trans))) {
      // Note [oneDNN SGEMM] (or Note [float32 matmul precision]), then the epilogue
      parallel_for(0, M, 64, [&](int64_t i0, int64_t i1) { fill_bias(i0, i1, 0, N); });
      auto product = rounded ? onednn_bf16_rounded_sgemm : onednn_sgemm;
      if (product(A.trans, Bm.trans, M, N, K, float(alpha), ap, A.ld, bp, Bm.ld, float(beta),
                  cp, N)) {
        parallel_for(0, M, std::max<int64_t>(1, 16384 / N), [&](int64_t i0, int64_t i1) {
          activation_span(cp + i0 * N, (i1 - i0) * N, gelu);
        });
        return;
      }
    }
  }
  if (!large)
    block(0, M, 0, N);
  else if (N >= M)
    split_blocks(N, threads, 16, [&](int64_t j0, int64_t j1) { block(0, M, j0, j1); });
  else
    split_blocks(M, threads, 8, [&](int64_t i0, int64_t i1) { block(i0, i1, 0, N); });
}

}  // namespace

void mm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  check_mm("mm", self, mat2);
  Tensor result = make_empty({self.size(0), mat2.size(1)}, self.dtype(), self.device());
  if (!result.device().is_meta()) gemm2d(self, mat2, result, 1.0, 0.0);  // Note [Meta through CPU kernels]
  finish_out(result, out, "mm");
}

void addmm_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha, Tensor& out) {
  check_mm("addmm", mat1, mat2, "mat1");
  RT_CHECK(self.dtype() == mat1.dtype(), "addmm: expected self and mat1 to have the same "
           "dtype, but got: ", self.dtype(), " != ", mat1.dtype());
  std::vector<int64_t> shape{mat1.size(0), mat2.size(1)};
  RT_CHECK(is_expandable_to(self.sizes(), shape), "addmm: self of shape ", self.sizes(),
           " cannot be broadcast to the product shape ", IntArrayRef(shape));
  Tensor result = make_empty(shape, mat1.dtype(), mat1.device());
  if (!result.device().is_meta()) {  // See Note [Meta through CPU kernels]
    double b = beta.to_double();
    if (b != 0) result.copy_(self.expand(shape));
    gemm2d(mat1, mat2, result, alpha.to_double(), b);
  }
  finish_out(result, out, "addmm");
}

void addmm_activation_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                          const Scalar& beta, const Scalar& alpha, bool use_gelu, Tensor& out) {
  const char* op = "_addmm_activation";
  check_mm(op, mat1, mat2, "mat1");
  RT_CHECK(self.dtype() == mat1.dtype(), op,
           ": expected self and mat1 to have the same dtype, but got: ", self.dtype(),
           " != ", mat1.dtype());
  std::vector<int64_t> shape{mat1.size(0), mat2.size(1)};
  RT_CHECK(is_expandable_to(self.sizes(), shape), op, ": self of shape ", self.sizes(),
           " cannot be broadcast to the product shape ", IntArrayRef(shape));
  const ScalarType dt = mat1.dtype();
  RT_CHECK(!use_gelu || is_floating_type(dt), op, ": \"GeluKernelImpl\" not implemented for '",
           dtype_name(dt), "'");
  Tensor result;
  if (dt == kFloat || dt == kDouble) {  // Note [GEMM epilogue]
    result = make_empty(shape, dt, mat1.device());
    if (result.numel() > 0 && !result.device().is_meta()) {  // Note [Meta through CPU kernels]
      const double b = beta.to_double(), a = alpha.to_double();
      Tensor bias = self.expand(shape);
      if (dt == kFloat)
        gemm_activation<float>(bias, mat1, mat2, result, a, b, use_gelu);
      else
        gemm_activation<double>(bias, mat1, mat2, result, a, b, use_gelu);
    }
  } else {
    // 16-bit floats round the product once before the activation, as PyTorch does; integers
    // take addmm's loops.
    result = addmm(self, mat1, mat2, beta, alpha);
    if (use_gelu)
      result = gelu(result);
    else if (result.numel() > 0)
      result.relu_();
  }
  finish_out(result, out, op);
}

void bmm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  RT_CHECK(self.dim() == 3 && mat2.dim() == 3, "bmm: expected 3-D tensors, but got ", self.dim(),
           "-D and ", mat2.dim(), "-D (shapes ", self.sizes(), " and ", mat2.sizes(), ")");
  RT_CHECK(self.size(0) == mat2.size(0), "bmm: batch1 and batch2 must have same number of batches, "
           "got ", self.size(0), " and ", mat2.size(0));
  RT_CHECK(self.size(2) == mat2.size(1), "bmm: Expected size for first two dimensions of batch2 "
           "tensor to be: [", self.size(0), ", ", self.size(2), "] but got: [", mat2.size(0), ", ",
           mat2.size(1), "].");
  RT_CHECK(self.dtype() == mat2.dtype(), "bmm: expected self and mat2 to have the same "
           "dtype, but got: ", self.dtype(), " != ", mat2.dtype());
  RT_CHECK(self.dtype() != kBool || self.numel() == 0 || mat2.numel() == 0,
           "\"bmm\" not implemented for 'Bool'");
  int64_t B = self.size(0);
  Tensor result = make_empty({B, self.size(1), mat2.size(2)}, self.dtype(), self.device());
  if (!result.device().is_meta()) gemm(self, mat2, result, 1.0, 0.0);  // Note [Meta through CPU kernels]
  finish_out(result, out, "bmm");
}

Tensor dot(const Tensor& self, const Tensor& tensor) {
  RT_CHECK(self.dim() == 1 && tensor.dim() == 1, "1D tensors expected, but got ", self.dim(),
           "D and ", tensor.dim(), "D tensors");
  RT_CHECK(self.numel() == tensor.numel(), "inconsistent tensor size, expected tensor [",
           self.numel(), "] and src [", tensor.numel(), "] to have the same number of elements, "
           "but got ", self.numel(), " and ", tensor.numel(), " elements respectively");
  RT_CHECK(self.dtype() == tensor.dtype(), "dot : expected both vectors to have same dtype, "
           "but found ", self.dtype(), " and ", tensor.dtype());
  Tensor out = make_empty({}, self.dtype(), self.device());
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  int64_t n = self.numel();
  if (self.dtype() == kFloat) {
    *out.data_ptr<float>() = cblas_sdot(int(n), self.data_ptr<float>(), int(self.stride(0)),
                                        tensor.data_ptr<float>(), int(tensor.stride(0)));
    return out;
  }
  if (self.dtype() == kDouble) {
    *out.data_ptr<double>() = cblas_ddot(int(n), self.data_ptr<double>(), int(self.stride(0)),
                                         tensor.data_ptr<double>(), int(tensor.stride(0)));
    return out;
  }
  RT_DISPATCH_NUMERIC(self.dtype(), "dot", [&] {
    using op_t = opmath_t<scalar_t>;
    op_t acc = 0;
    const scalar_t* a = self.data_ptr<scalar_t>();
    const scalar_t* b = tensor.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i)
      acc += op_t(a[i * self.stride(0)]) * op_t(b[i * tensor.stride(0)]);
    *out.data_ptr<scalar_t>() = scalar_t(acc);
  });
  return out;
}

}  // namespace retorch::cpu
