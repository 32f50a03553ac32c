// The prelude of every generated CUDA source: loads and stores of each dtype and the rt_* math the
// emitter table calls, as device functions for NVRTC, or for the host in an emulated build.
#include <string>

#include "retorch/compiler/CppCodegen.h"

namespace retorch::compiler {

// Note [CUDA prelude]
// The kernels call the same rt_* names as the C++ ones (the emitter table is shared); here they
// are CUDA's own math library functions (expf, tanhf, erff: within 2 ulp, no fast-math), and
// 16-bit floats are widened on load and rounded to nearest even on store, as in C++. NVRTC
// compiles without the toolkit's headers, so the device half declares the integer types and
// INFINITY/NAN itself, and converts float16 with PTX's cvt. The emulated half (Target
// kCudaEmulated) is plain C++ for the host compiler: `__global__`/`__device__` vanish, and
// threadIdx/blockIdx/blockDim/gridDim are per-thread variables the generated launcher sets
// before it calls a kernel for each (block, thread) of the grid.

namespace {

const char* device_part() {
  return R"PRELUDE(typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef long long int64_t;
#define RT_INLINE __device__ __forceinline__
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
RT_INLINE float rt_bits_float(uint32_t u) { return __uint_as_float(u); }
RT_INLINE uint32_t rt_float_bits(float f) { return __float_as_uint(f); }
struct rt_half { unsigned short bits; };
RT_INLINE float rt_load(rt_half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
RT_INLINE rt_half rt_to_half(float f) {
  rt_half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
)PRELUDE";
}

const char* emulated_part() {
  return R"PRELUDE(#include <cmath>
#include <cstdint>
#include <cstring>
#define RT_INLINE inline
#define __global__
#define __device__
#define __forceinline__
#define __launch_bounds__(n)
#define __restrict__ __restrict
struct rt_dim3 { unsigned x = 0, y = 1, z = 1; };
static thread_local rt_dim3 threadIdx, blockIdx, blockDim, gridDim;
RT_INLINE float rt_bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
RT_INLINE uint32_t rt_float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
struct alignas(16) float4 { float x, y, z, w; };
struct rt_half { _Float16 v; };
RT_INLINE float rt_load(rt_half h) { return float(h.v); }
RT_INLINE rt_half rt_to_half(float f) { return rt_half{_Float16(f)}; }
)PRELUDE";
}

const char* shared_part() {
  return R"PRELUDE(
// Loads widen to the compute type; stores round from it.
RT_INLINE float rt_load(uint16_t b) { return rt_bits_float(uint32_t(b) << 16); }  // bfloat16
RT_INLINE float rt_load(float x) { return x; }
RT_INLINE double rt_load(double x) { return x; }
RT_INLINE bool rt_load(bool x) { return x; }
RT_INLINE int64_t rt_load(int64_t x) { return x; }
RT_INLINE uint16_t rt_to_bf16(float f) {
  const uint32_t u = rt_float_bits(f);
  return f != f ? uint16_t(0x7fc0) : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// One name for the float and the double function.
#define RT_MATH1(name, f, d) \
  RT_INLINE float name(float x) { return f(x); } \
  RT_INLINE double name(double x) { return d(x); }
RT_MATH1(rt_sqrt, sqrtf, sqrt)
RT_MATH1(rt_floor, floorf, floor)
RT_MATH1(rt_ceil, ceilf, ceil)
RT_MATH1(rt_trunc, truncf, trunc)
RT_MATH1(rt_round, rintf, rint)
RT_MATH1(rt_exp, expf, exp)
RT_MATH1(rt_exp_shifted, expf, exp)
RT_MATH1(rt_tanh, tanhf, tanh)
RT_MATH1(rt_log, logf, log)
RT_MATH1(rt_sin, sinf, sin)
RT_MATH1(rt_cos, cosf, cos)
RT_MATH1(rt_erf, erff, erf)
RT_MATH1(rt_erfc, erfcf, erfc)
RT_MATH1(rt_log1p, log1pf, log1p)
RT_MATH1(rt_expm1, expm1f, expm1)
RT_MATH1(rt_exp2, exp2f, exp2)
RT_MATH1(rt_log2, log2f, log2)
RT_MATH1(rt_log10, log10f, log10)
RT_MATH1(rt_tan, tanf, tan)
RT_MATH1(rt_atan, atanf, atan)
RT_MATH1(rt_sinh, sinhf, sinh)
RT_MATH1(rt_cosh, coshf, cosh)
RT_MATH1(rt_asin, asinf, asin)
RT_MATH1(rt_acos, acosf, acos)
#undef RT_MATH1
RT_INLINE float rt_rsqrt(float x) { return 1.f / sqrtf(x); }
RT_INLINE double rt_rsqrt(double x) { return 1.0 / sqrt(x); }
RT_INLINE float rt_pow(float x, float y) { return powf(x, y); }
RT_INLINE double rt_pow(double x, double y) { return pow(x, y); }
RT_INLINE float rt_atan2(float x, float y) { return atan2f(x, y); }
RT_INLINE double rt_atan2(double x, double y) { return atan2(x, y); }
RT_INLINE float rt_gelu_erf(float x) { return erff(x); }  // (rt_gelu_grad's; CUDA's erff is fast)
RT_INLINE double rt_gelu_erf(double x) { return erf(x); }
RT_INLINE float rt_gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752440f)); }
RT_INLINE double rt_gelu(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }
)PRELUDE";
}

}  // namespace

const char* cuda_prelude(bool emulated) {
  static const std::string device = std::string(device_part()) + shared_part() + prelude_common();
  static const std::string host = std::string(emulated_part()) + shared_part() + prelude_common();
  return emulated ? host.c_str() : device.c_str();
}

}  // namespace retorch::compiler
