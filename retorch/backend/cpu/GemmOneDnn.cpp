// bfloat16 GEMM through oneDNN's matmul primitive, used only where the CPU runs it natively.
#include "retorch/backend/cpu/GemmOneDnn.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "retorch/backend/cpu/Convert16.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/MatmulPrecision.h"
#include "retorch/core/Half.h"

#ifdef RETORCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace retorch::cpu {

// Note [bfloat16 GEMM]
// Without AVX-512 BF16, bfloat16 products widen to float32 and run SGEMM (Note [16-bit GEMM]);
// that is exact and at SGEMM speed. With it (vdpbf16ps: two bf16 products accumulated into a
// float32 lane per instruction, twice SGEMM's multiply rate), oneDNN's matmul reads the bf16
// operands directly. oneDNN 2.6 (Debian) refuses a bf16 matmul on CPUs without AVX-512, so the
// choice is made once from its effective ISA; the strides of a and b pass through as memory
// descriptors, so transposed operands are not copied. Its primitive cache keeps repeated shapes
// from re-creating primitives.

#ifdef RETORCH_HAVE_ONEDNN
dnnl::engine& onednn_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

void onednn_use_threads() {
#ifdef _OPENMP
  const int n = get_num_threads();
  if (!omp_in_parallel() && omp_get_max_threads() != n) omp_set_num_threads(n);
#endif
}

namespace {

// t's layout for oneDNN, as bfloat16, or float32 for a float32 tensor (a product's dst).
dnnl::memory::desc bf16_desc(const Tensor& t) {
  dnnl::memory::dims dims(t.sizes().begin(), t.sizes().end());
  dnnl::memory::dims strides(t.strides().begin(), t.strides().end());
  // A size-1 dimension's stride is arbitrary in retorch (it may be 0 or anything); give it the
  // extent of the others so oneDNN sees a layout without overlap.
  dnnl::memory::dim extent = 1;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] > 1) extent = std::max(extent, dims[i] * strides[i]);
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 1) strides[i] = extent;
  auto type = t.dtype() == kFloat ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
  return dnnl::memory::desc(dims, type, strides);
}

}  // namespace
#endif

bool onednn_enabled() {
#ifdef RETORCH_HAVE_ONEDNN
  static const bool on = [] {
    const char* env = std::getenv("RETORCH_ONEDNN");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  return on;
#else
  return false;
#endif
}

// Note [oneDNN SGEMM]
// Float32 products of at least kOneDnnWork (4M) multiply-adds with both sides 32+ wide run
// oneDNN's SGEMM (LinearAlgebra.cpp). Its threads are libgomp's, the pool parallel_for uses, so
// it does not bring back Note [GEMM threading]'s second spinning pool, and its threads share
// packed panels the way OpenBLAS's own threads do and the split into single-threaded halves
// cannot: 1024^2 at 322-334 GFLOP/s against the split's 294-298 and threaded OpenBLAS's
// 301-305, the MLP's 100x256x784 in 140 us against 181 (a small C++ driver, 2026-11-24). Its thread count
// follows get_num_threads(). Skinny products (a side under 32, like a 10-class head) stay on
// the split, which oneDNN does not beat there (100x10x1568: 29 us against 14), and so do products
// under 4M multiply-adds, where a linear layer's fused bias and relu (Note [GEMM epilogue]) beat
// oneDNN plus separate passes (_addmm_activation 64x128x128: 12.8 us against 29.6). A large
// linear layer's transposed weight (B^T with 4M+ elements) stays on the split too: the 1b
// Llama's 512x2560x2048 NT in 17.7 ms split against 20.2 on oneDNN, its prefill 130 tok/s
// against 126 (the 110m's smaller layers gain: 512x2304x768 NT 6.1 -> 5.6 ms).
bool onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#ifdef RETORCH_HAVE_ONEDNN
  if (!onednn_enabled()) return false;
  onednn_use_threads();
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, a, lda, b, ldb, beta, c,
                    ldc) == dnnl_success;
#else
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)b;
  (void)ldb, (void)beta, (void)c, (void)ldc;
  return false;
#endif
}

// Note [float32 matmul precision] on the cpu: c = alpha * bf16(a) @ bf16(b) + beta * c, the
// operands rounded once into packed copies (each side's rows or columns as stored, so a
// transposed operand is not transposed), oneDNN's bfloat16 matmul accumulating in float32 with
// alpha as its output scale and beta as a sum post-op. BLAS's row-major arguments, as
// onednn_sgemm's.
bool onednn_bf16_rounded_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                               const float* a, int64_t lda, const float* b, int64_t ldb,
                               float beta, float* c, int64_t ldc) {
#ifdef RETORCH_HAVE_ONEDNN
  if (!onednn_bf16_available()) return false;
  onednn_use_threads();
  using dt = dnnl::memory::data_type;
  // A stored matrix of `rows` rows of `cols` elements, `ld` apart, rounded into rows x cols.
  auto rounded = [](const float* p, int64_t rows, int64_t cols, int64_t ld) {
    std::vector<uint16_t> r(size_t(rows * cols));
    parallel_for(0, rows, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(cols, 1)),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i)
                     from_float(p + i * ld, reinterpret_cast<BFloat16*>(r.data() + i * cols),
                                cols);
                 });
    return r;
  };
  try {
    dnnl::engine& eng = onednn_engine();
    std::vector<uint16_t> ar = ta ? rounded(a, K, M, lda) : rounded(a, M, K, lda);
    std::vector<uint16_t> br = tb ? rounded(b, N, K, ldb) : rounded(b, K, N, ldb);
    using dims = dnnl::memory::dims;
    dnnl::memory::desc ad({M, K}, dt::bf16, ta ? dims{1, M} : dims{K, 1});
    dnnl::memory::desc bd({K, N}, dt::bf16, tb ? dims{1, K} : dims{N, 1});
    dnnl::memory::desc cd({M, N}, dt::f32, {ldc, 1});
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), attr, eng);
    dnnl::stream s(eng);
    dnnl::memory am(ad, eng, ar.data()), bm(bd, eng, br.data()), cm(cd, eng, c);
    dnnl::matmul(pd).execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    s.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // c untouched: the float32 path runs instead
  }
#else
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)b;
  (void)ldb, (void)beta, (void)c, (void)ldc;
  return false;
#endif
}

bool onednn_bf16_available() {
#ifdef RETORCH_HAVE_ONEDNN
  static const bool ok = [] {
    if (!onednn_enabled()) return false;
    try {
      return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_bf16;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return ok;
#else
  return false;
#endif
}

bool onednn_bf16_gemm(const Tensor& a, const Tensor& b, Tensor& out) {
#ifdef RETORCH_HAVE_ONEDNN
  if (!onednn_bf16_available()) return false;
  onednn_use_threads();
  try {
    dnnl::engine& eng = onednn_engine();
    dnnl::memory::desc ad = bf16_desc(a), bd = bf16_desc(b), od = bf16_desc(out);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, od), eng);
    dnnl::stream s(eng);
    dnnl::memory am(ad, eng, const_cast<void*>(a.impl()->data()));
    dnnl::memory bm(bd, eng, const_cast<void*>(b.impl()->data()));
    dnnl::memory om(od, eng, out.impl()->data());
    dnnl::matmul(pd).execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, om}});
    s.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // a layout this oneDNN does not take: the widening path runs instead
  }
#else
  (void)a;
  (void)b;
  (void)out;
  return false;
#endif
}

// Note [Split bfloat16 activations]
// A bfloat16 model's linear layers keep float32 activations (Note [16-bit GEMM]: the products
// are those of the rounded weights, exactly). Prefill runs them as SGEMM on widened weight tiles;
// PyTorch's bfloat16 model instead rounds its activations to bfloat16 and runs oneDNN's AMX
// matmul, ~5x SGEMM's rate here. Both can be had: x = hi + lo + r with hi = bf16(x) and
// lo = bf16(x - hi) (x - hi is exact in float32), |r| <= 2^-18 |x|, so x @ w.T is hi @ w.T +
// lo @ w.T to within 2^-18 of sum |x w|: inside float32 accumulation's own bound, k * 2^-24 of
// it, from k = 64 on (QuantOps.cpp takes this path from there; a language model's k is 256+).
// Two bfloat16 matmuls (the second adds into the first's float32 output, a sum post-op) at AMX
// speed. A non-finite x gets lo = 0 (x - hi would be NaN), as its product is hi's alone.
bool onednn_bf16_linear(const float* x, int64_t M, int64_t K, const uint16_t* w, int64_t N,
                        float* out) {
#ifdef RETORCH_HAVE_ONEDNN
  if (!onednn_bf16_available()) return false;
  onednn_use_threads();
  using dt = dnnl::memory::data_type;
  try {
    dnnl::engine& eng = onednn_engine();
    dnnl::memory::desc src({M, K}, dt::bf16, {K, 1});
    dnnl::memory::desc wei({K, N}, dt::bf16, {1, K});
    dnnl::memory::desc dst({M, N}, dt::f32, {N, 1});
    // Note [float32 matmul precision]: "medium" rounds the activations once (hi alone).
    const bool once = float32_matmul_precision() == Float32MatmulPrecision::kMedium;
    dnnl::matmul::primitive_desc first(dnnl::matmul::desc(src, wei, dst), eng);
    std::vector<uint16_t> hi(size_t(M * K)), lo(once ? 0 : size_t(M * K));
    parallel_for(0, M * K, 1 << 16, [&](int64_t i0, int64_t i1) {
      if (once) {
        from_float(x + i0, reinterpret_cast<BFloat16*>(hi.data() + i0), i1 - i0);
        return;
      }
      for (int64_t i = i0; i < i1; ++i) {
        const float v = x[i];
        const uint16_t h = detail::float_to_bf16(v);
        hi[size_t(i)] = h;
        const float rest = v - detail::bf16_to_float(h);
        lo[size_t(i)] = std::isfinite(v) ? detail::float_to_bf16(rest) : uint16_t(0);
      }
    });
    dnnl::stream s(eng);
    dnnl::memory wm(wei, eng, const_cast<uint16_t*>(w));
    dnnl::memory om(dst, eng, out);
    dnnl::memory hm(src, eng, hi.data());
    dnnl::matmul(first).execute(s,
                                {{DNNL_ARG_SRC, hm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, om}});
    if (!once) {  // lo's product added into hi's (a sum post-op)
      dnnl::primitive_attr add;
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      add.set_post_ops(ops);
      dnnl::matmul::primitive_desc second(dnnl::matmul::desc(src, wei, dst), add, eng);
      dnnl::memory lm(src, eng, lo.data());
      dnnl::matmul(second).execute(
          s, {{DNNL_ARG_SRC, lm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, om}});
    }
    s.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // the SGEMM path runs instead and writes all of out
  }
#else
  (void)x;
  (void)M;
  (void)K;
  (void)w;
  (void)N;
  (void)out;
  return false;
#endif
}

}  // namespace retorch::cpu
