// bfloat16 GEMM through oneDNN's matmul primitive, used only where the CPU runs it natively.
#include "retorch/backend/cpu/GemmOneDnn.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#ifdef RETORCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
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
namespace {

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

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
  return dnnl::memory::desc(dims, dnnl::memory::data_type::bf16, strides);
}

}  // namespace
#endif

bool onednn_bf16_available() {
#ifdef RETORCH_HAVE_ONEDNN
  static const bool ok = [] {
    const char* env = std::getenv("RETORCH_ONEDNN");
    if (env && std::strcmp(env, "0") == 0) return false;
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
  try {
    dnnl::engine& eng = cpu_engine();
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

}  // namespace retorch::cpu
