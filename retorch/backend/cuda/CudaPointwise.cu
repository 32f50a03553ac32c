// The CUDA backend's pointwise kernels: unary, binary and ternary floating-point ops, dtype
// conversions and strided copies, a thread per element over the offset calculator (CudaGeometry.h).
#include <cstdint>
#include <type_traits>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaPointwise.h"
#include "retorch/core/SpecialMath.h"

namespace retorch::cuda_backend {

// Note [CUDA pointwise kernels]
// One kernel per element type and index width, the op a launch argument: every thread of a
// launch takes the same branch of the op's switch, so a kernel per op would buy nothing but
// compile time (the loads and stores are what these kernels wait on). 16-bit floats compute in
// float and round to nearest even on store, float64 in double, as PyTorch's opmath types do.
// Threads stride over the elements in a grid of at most 65535 blocks with a 64-bit counter; the
// offsets come from an OffsetCalc of 32-bit indices where they fit (Note [CUDA offset
// calculator]). A second operand that is a cpu scalar (a 0-dim tensor or a Python number) is
// passed by value. The formulas follow PyTorch's CUDA kernels: sigmoid 1 / (1 + e^-x), silu
// x / (1 + e^-x), GELU through erf or tanh, maximum and minimum propagating NaN.

namespace {

// x limited to [lo, hi], NaN staying NaN.
template <typename A>
__device__ inline A clip(A x, A lo, A hi) {
  const A l = x < lo ? lo : x;
  return l > hi ? hi : l;
}

template <typename A>
__device__ inline A apply_unary(UnaryOp op, A x, A p0, A p1, A p2) {
  const A one = A(1);
  switch (op) {
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return fabs(x);
    case UnaryOp::kExp: return exp(x);
    case UnaryOp::kLog: return log(x);
    case UnaryOp::kSqrt: return sqrt(x);
    case UnaryOp::kRsqrt: return rsqrt(x);
    case UnaryOp::kSin: return sin(x);
    case UnaryOp::kCos: return cos(x);
    case UnaryOp::kTanh: return tanh(x);
    case UnaryOp::kSigmoid: return one / (one + exp(-x));
    case UnaryOp::kRelu: return x > A(0) || x != x ? x : A(0);
    case UnaryOp::kSilu: return x / (one + exp(-x));
    case UnaryOp::kGelu: return A(0.5) * x * (one + erf(x * A(0.70710678118654752440)));
    case UnaryOp::kGeluTanh: {
      const A inner = A(0.79788456080286535588) * (x + A(0.044715) * x * x * x);
      return A(0.5) * x * (one + tanh(inner));
    }
    case UnaryOp::kReciprocal: return one / x;
    case UnaryOp::kLog1p: return log1p(x);
    case UnaryOp::kExpm1: return expm1(x);
    case UnaryOp::kErf: return erf(x);
    case UnaryOp::kExp2: return exp2(x);
    case UnaryOp::kLog2: return log2(x);
    case UnaryOp::kLog10: return log10(x);
    case UnaryOp::kTan: return tan(x);
    case UnaryOp::kAsin: return asin(x);
    case UnaryOp::kAcos: return acos(x);
    case UnaryOp::kAtan: return atan(x);
    case UnaryOp::kSinh: return sinh(x);
    case UnaryOp::kCosh: return cosh(x);
    case UnaryOp::kFloor: return floor(x);
    case UnaryOp::kCeil: return ceil(x);
    case UnaryOp::kRound: return rint(x);  // half to even, as torch.round
    case UnaryOp::kTrunc: return trunc(x);
    case UnaryOp::kFrac: return x - trunc(x);
    case UnaryOp::kSign: return A((A(0) < x) - (x < A(0)));  // NaN gives 0, as PyTorch's
    case UnaryOp::kErfc: return erfc(x);
    case UnaryOp::kErfinv: return erfinv(x);
    case UnaryOp::kLgamma: return lgamma(x);
    case UnaryOp::kI0:
      if constexpr (std::is_same_v<A, float>) return cyl_bessel_i0f(x);
      else return cyl_bessel_i0(x);
    case UnaryOp::kSinc: {
      if (x == A(0)) return one;
      const A px = A(3.14159265358979323846) * x;
      return sin(px) / px;
    }
    case UnaryOp::kHardsigmoid: return clip(x + A(3), A(0), A(6)) / A(6);
    case UnaryOp::kHardswish: return x * clip(x + A(3), A(0), A(6)) / A(6);
    case UnaryOp::kPow: return pow(x, p0);
    case UnaryOp::kClamp: return clip(x, p0, p1);
    case UnaryOp::kLeakyRelu: return x > A(0) ? x : x * p0;
    case UnaryOp::kSoftplus: return x * p0 > p1 ? x : log1p(exp(x * p0)) / p0;
    case UnaryOp::kLogit: {
      const A z = p0 < A(0) ? x : clip(x, p0, one - p0);
      return log(z / (one - z));
    }
    case UnaryOp::kElu: return x > A(0) ? x * p1 : expm1(x * p2) * p0;
    case UnaryOp::kNanToNum:
      if (x != x) return p0;
      return isinf(x) ? (x > A(0) ? p1 : p2) : x;
    case UnaryOp::kI1:
      if constexpr (std::is_same_v<A, float>) return cyl_bessel_i1f(x);
      else return cyl_bessel_i1(x);
    // In double, as the cpu's (Note [Shared special functions]).
    case UnaryOp::kDigamma: return A(special::digamma(double(x)));
    case UnaryOp::kPolygamma: return A(special::polygamma(int64_t(p0), double(x)));
  }
  return x;
}

// PyTorch's lerp: from whichever end is nearer, so that w = 1 gives b exactly.
template <typename A>
__device__ inline A lerp(A a, A b, A w) {
  return fabs(w) < A(0.5) ? a + w * (b - a) : b - (b - a) * (A(1) - w);
}

// The binary ops of floating operands only (the integer kernels never take them).
template <typename A>
__device__ inline A apply_float_binary(BinaryOp op, A a, A b) {
  switch (op) {
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kPow: return pow(a, b);
    case BinaryOp::kAtan2: return atan2(a, b);
    case BinaryOp::kCopysign: return copysign(a, b);
    case BinaryOp::kHypot: return hypot(a, b);
    case BinaryOp::kFmax: return fmax(a, b);  // NaN only where both are
    case BinaryOp::kFmin: return fmin(a, b);
    case BinaryOp::kLogaddexp:
    case BinaryOp::kLogaddexp2: {
      if (isinf(a) && a == b) return a;  // e^-inf + e^-inf, e^inf + e^inf
      const A m = a > b ? a : b, d = -fabs(a - b);
      return op == BinaryOp::kLogaddexp ? m + log1p(exp(d))
                                        : m + log1p(exp2(d)) * A(1.44269504088896340736);
    }
    case BinaryOp::kRemainder: {  // the sign of b, as Python's %
      A r = fmod(a, b);
      if (r != A(0) && ((b < A(0)) != (r < A(0)))) r += b;
      return r;
    }
    case BinaryOp::kFmod: return fmod(a, b);
    case BinaryOp::kHeaviside: return a == A(0) ? b : A(a > A(0));
    case BinaryOp::kXlogy:
      if (b != b) return b;
      return a == A(0) ? A(0) : a * log(b);
    case BinaryOp::kDivTrunc: return trunc(a / b);
    case BinaryOp::kDivFloor: {  // PyTorch's div_floor_floating: exact where floor(a / b) is not
      if (b == A(0)) return a / b;
      const A mod = fmod(a, b);
      A div = (a - mod) / b;
      if (mod != A(0) && (b < A(0)) != (mod < A(0))) div -= A(1);
      if (div == A(0)) return copysign(A(0), a / b);
      A q = floor(div);
      if (div - q > A(0.5)) q += A(1);
      return q;
    }
    default: return a;
  }
}

template <typename A>
__device__ inline A apply_ternary(TernaryOp op, A a, A b, A c, A value) {
  switch (op) {
    case TernaryOp::kAddcmul: return a + value * b * c;
    case TernaryOp::kAddcdiv: return a + value * b / c;
    case TernaryOp::kLerp: return lerp(a, b, c);
    case TernaryOp::kClamp:  // as the cpu's clamp_tensor_out: a NaN bound gives NaN
      if (b != b || c != c) return b + c;
      a = a < b ? b : a;
      return c < a ? c : a;
  }
  return a;
}

template <typename A>
__device__ inline A apply_binary(BinaryOp op, A a, A b, A alpha) {
  switch (op) {
    case BinaryOp::kAdd: return a + alpha * b;
    case BinaryOp::kSub: return a - alpha * b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kMaximum: return a != a ? a : (b != b ? b : (a > b ? a : b));
    case BinaryOp::kMinimum: return a != a ? a : (b != b ? b : (a < b ? a : b));
    case BinaryOp::kThresholdBackward: return b <= alpha ? A(0) : a;
    case BinaryOp::kEq: return A(a == b);
    case BinaryOp::kNe: return A(a != b);
    case BinaryOp::kLt: return A(a < b);
    case BinaryOp::kLe: return A(a <= b);
    case BinaryOp::kGt: return A(a > b);
    case BinaryOp::kGe: return A(a >= b);
    case BinaryOp::kLerp:
      if constexpr (std::is_integral_v<A>) return a;
      else return lerp(a, b, alpha);
    case BinaryOp::kBitAnd:
    case BinaryOp::kBitOr:
    case BinaryOp::kBitXor:
      if constexpr (std::is_integral_v<A>)
        return op == BinaryOp::kBitAnd ? A(a & b) : op == BinaryOp::kBitOr ? A(a | b) : A(a ^ b);
      else return a;  // never launched for floating types (the host's check)
    case BinaryOp::kSmoothL1:  // as the cpu's: 0.5 z^2 / beta below beta, z - beta / 2 after
      if constexpr (std::is_integral_v<A>) {
        return a;
      } else {
        const A z = fabs(a - b);
        return z < alpha ? A(0.5) * z * z / alpha : z - A(0.5) * alpha;
      }
    case BinaryOp::kDivTrunc:
    case BinaryOp::kDivFloor:
    case BinaryOp::kRemainder:
    case BinaryOp::kFmod:
      // Integers (the host checked the divisor for zeros; floats take apply_float_binary): C++'s
      // truncating / and %, floored or given b's sign as the cpu's floor_divide and python_mod.
      if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
        if (b == A(0)) return A(0);
        const A q = a / b, r = a % b;
        const bool adjust = r != A(0) && ((r < A(0)) != (b < A(0)));
        if (op == BinaryOp::kDivTrunc) return q;
        if (op == BinaryOp::kDivFloor) return adjust ? A(q - 1) : q;
        if (op == BinaryOp::kRemainder) return adjust ? A(r + b) : r;
        return r;
      } else if constexpr (std::is_integral_v<A>) {
        return a;  // bool: never launched (the host's check)
      } else {
        return apply_float_binary(op, a, b);
      }
    case BinaryOp::kPow:
      if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
        // The cpu's powi: a negative exponent gives 1 or -1 for bases 1 and -1, else 0; the
        // squarings wrap (done unsigned, where wrapping is defined).
        if (b < A(0)) return a == A(1) ? A(1) : (a == A(-1) ? A((b & 1) ? -1 : 1) : A(0));
        using U = std::make_unsigned_t<A>;
        U r = 1, x = U(a);
        for (A e = b; e > A(0); e >>= 1) {
          if (e & 1) r = U(r * x);
          x = U(x * x);
        }
        return A(r);
      } else if constexpr (std::is_integral_v<A>) {
        return a;  // bool: never launched (the host's check)
      } else {
        return apply_float_binary(op, a, b);
      }
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRight:
      if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
        constexpr A kBits = A(sizeof(A) * 8);  // as the cpu's shift_left / shift_right
        using U = std::make_unsigned_t<A>;
        if (op == BinaryOp::kShiftLeft) return b < 0 || b >= kBits ? A(0) : A(U(U(a) << U(b)));
        return b < 0 || b >= kBits ? (a < 0 ? A(-1) : A(0)) : A(a >> b);
      } else {
        return a;  // never launched for bool or floating types (the host's check)
      }
    default:  // not integral ops (the host's check)
      if constexpr (std::is_integral_v<A>) return a;
      else return apply_float_binary(op, a, b);
  }
}

template <typename T, typename Index>
__global__ void unary_kernel(UnaryOp op, OffsetCalc<2, Index> c, T* out, const T* in, int64_t n,
                             acc_t<T> p0, acc_t<T> p1, acc_t<T> p2) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[2];
    c.offsets(Index(i), o);
    store(out + o[0], apply_unary<acc_t<T>>(op, load(in + o[1]), p0, p1, p2));
  }
}

// Four elements as one aligned vector: a 128-bit load or store for float (64 for 16-bit types).
template <typename T>
struct alignas(4 * sizeof(T)) Vec4 {
  T v[4];
};

template <typename T>
bool aligned_vec4(const void* p) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % sizeof(Vec4<T>) == 0;
}

// Note [Contiguous pointwise kernels]
// Where every operand is contiguous (one coalesced dim of stride 1; a scalar second operand
// has none) and 4-element aligned, a thread moves four elements with one vector load per
// operand and one vector store, the offset calculator left out: the strided kernels reached 71%
// of the device's copy bandwidth on an add of 256M floats, the loads and stores one element
// wide. The n % 4 elements past the last vector are the first threads' of the grid.
template <typename T>
__global__ void unary_contig_kernel(UnaryOp op, T* out, const T* in, int64_t n, acc_t<T> p0,
                                    acc_t<T> p1, acc_t<T> p2) {
  const int64_t n4 = n / 4, first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += int64_t(gridDim.x) * blockDim.x) {
    const Vec4<T> x = reinterpret_cast<const Vec4<T>*>(in)[i];
    Vec4<T> y;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      store(&y.v[k], apply_unary<acc_t<T>>(op, load(&x.v[k]), p0, p1, p2));
    reinterpret_cast<Vec4<T>*>(out)[i] = y;
  }
  if (n4 * 4 + first < n) {
    const int64_t e = n4 * 4 + first;
    store(out + e, apply_unary<acc_t<T>>(op, load(in + e), p0, p1, p2));
  }
}

template <typename T, typename O>
__global__ void binary_contig_kernel(BinaryOp op, O* out, const T* a, const T* b,
                                     bool b_is_scalar, acc_t<T> b_value, acc_t<T> alpha,
                                     int64_t n) {
  using A = acc_t<T>;
  const int64_t n4 = n / 4, first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += int64_t(gridDim.x) * blockDim.x) {
    const Vec4<T> x = reinterpret_cast<const Vec4<T>*>(a)[i];
    Vec4<T> y;
    if (!b_is_scalar) y = reinterpret_cast<const Vec4<T>*>(b)[i];
    Vec4<O> z;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const A yk = b_is_scalar ? b_value : A(load(&y.v[k]));
      store(&z.v[k], apply_binary<A>(op, A(load(&x.v[k])), yk, alpha));
    }
    reinterpret_cast<Vec4<O>*>(out)[i] = z;
  }
  if (n4 * 4 + first < n) {
    const int64_t e = n4 * 4 + first;
    const A y = b_is_scalar ? b_value : A(load(b + e));
    store(out + e, apply_binary<A>(op, A(load(a + e)), y, alpha));
  }
}

// Whether operands 0..N-1 of g (those not skipped) are one contiguous run (Note [Contiguous
// pointwise kernels]).
template <int N>
bool contiguous_run(const Geometry<N>& g, int skip = -1) {
  if (g.dims != 1) return false;
  for (int k = 0; k < N; ++k)
    if (k != skip && g.strides[0][k] != 1) return false;
  return true;
}

template <typename T, typename O, typename Index>
__global__ void binary_kernel(BinaryOp op, OffsetCalc<3, Index> c, O* out, const T* a,
                              const T* b, bool b_is_scalar, acc_t<T> b_value, acc_t<T> alpha,
                              int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[3];
    c.offsets(Index(i), o);
    const acc_t<T> y = b_is_scalar ? b_value : acc_t<T>(load(b + o[2]));
    store(out + o[0], apply_binary<acc_t<T>>(op, acc_t<T>(load(a + o[1])), y, alpha));
  }
}

template <typename T, typename Index>
__global__ void predicate_kernel(PredicateOp op, OffsetCalc<2, Index> c, bool* out, const T* in,
                                 int64_t n) {
  using A = acc_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[2];
    c.offsets(Index(i), o);
    const A x = A(load(in + o[1]));
    bool r = false;
    switch (op) {
      case PredicateOp::kIsnan: r = x != x; break;
      case PredicateOp::kIsinf: r = isinf(x); break;
      case PredicateOp::kIsfinite: r = isfinite(x); break;
      case PredicateOp::kIsposinf: r = x == A(INFINITY); break;
      case PredicateOp::kIsneginf: r = x == -A(INFINITY); break;
      case PredicateOp::kSignbit: r = signbit(x); break;
      case PredicateOp::kNonzero: r = x != A(0); break;  // NaN is true
      case PredicateOp::kIsZero: r = x == A(0); break;
    }
    out[o[0]] = r;
  }
}

template <typename T, typename Index>
__global__ void ternary_kernel(TernaryOp op, OffsetCalc<4, Index> c, T* out, const T* a,
                               const T* b, const T* w, acc_t<T> value, int64_t n) {
  using A = acc_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[4];
    c.offsets(Index(i), o);
    const A lo = b ? A(load(b + o[2])) : -A(INFINITY), hi = w ? A(load(w + o[3])) : A(INFINITY);
    store(out + o[0], apply_ternary<A>(op, A(load(a + o[1])), lo, hi, value));
  }
}

template <typename T, typename Index>
__global__ void select_kernel(OffsetCalc<4, Index> c, T* out, const bool* cond, const T* a,
                              bool a_is_scalar, acc_t<T> a_value, const T* b, bool b_is_scalar,
                              acc_t<T> b_value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[4];
    c.offsets(Index(i), o);
    const acc_t<T> v = cond[o[1]] ? (a_is_scalar ? a_value : acc_t<T>(load(a + o[2])))
                                  : (b_is_scalar ? b_value : acc_t<T>(load(b + o[3])));
    store(out + o[0], v);
  }
}

template <typename E, typename Index>
__global__ void fill_kernel(OffsetCalc<1, Index> c, E* out, E value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[1];
    c.offsets(Index(i), o);
    out[o[0]] = value;
  }
}

template <typename E, typename Index>
__global__ void copy_kernel(OffsetCalc<2, Index> c, E* out, const E* in, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[2];
    c.offsets(Index(i), o);
    out[o[0]] = in[o[1]];
  }
}

template <typename E>
__global__ void ramp_kernel(E* out, int64_t n, bool integral, int64_t istart, int64_t istep,
                            double start, double step, double end, int64_t half) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double v = i < half ? start + step * double(i) : end - step * double(n - 1 - i);
    if constexpr (std::is_integral_v<E>) out[i] = E(integral ? istart + i * istep : int64_t(v));
    else store(out + i, acc_t<E>(v));  // through float for the 16-bit types, as the cpu's
  }
}

// Note [CUDA casts]
// Every conversion between dtypes on the device (copy_, .to(), the promotions of the op
// kernels) is this kernel.
// A cast reads its element as the widest type of its kind (double for the floats, the 16-bit ones
// through float; int64 for the integers; bool as 0 or 1) and converts that once to the target:
// floats to integers truncate toward zero (NaN and values out of range give what the device's
// conversion gives, which C++ leaves undefined), integers to 16-bit floats round through float,
// anything nonzero (NaN too) is true, as the cpu's static_casts do.
template <typename T>
__device__ inline auto widened(T x) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
    return double(load(&x));
  else if constexpr (std::is_floating_point_v<T>)
    return double(x);
  else
    return int64_t(x);
}

template <typename To, typename From, typename Index>
__global__ void cast_kernel(OffsetCalc<2, Index> c, To* out, const From* in, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    Index o[2];
    c.offsets(Index(i), o);
    const auto v = widened(in[o[1]]);
    if constexpr (std::is_same_v<To, bool>)
      out[o[0]] = v != decltype(v)(0) || v != v;
    else if constexpr (std::is_same_v<To, __half> || std::is_same_v<To, __nv_bfloat16>)
      store(out + o[0], float(v));
    else
      out[o[0]] = To(v);
  }
}

template <typename F>
void with_cast_type(CastType t, F&& f) {
  switch (t) {
    case CastType::kFloat: return f(Tag<float>{});
    case CastType::kDouble: return f(Tag<double>{});
    case CastType::kHalf: return f(Tag<__half>{});
    case CastType::kBFloat16: return f(Tag<__nv_bfloat16>{});
    case CastType::kInt8: return f(Tag<int8_t>{});
    case CastType::kUInt8: return f(Tag<uint8_t>{});
    case CastType::kInt16: return f(Tag<int16_t>{});
    case CastType::kInt32: return f(Tag<int32_t>{});
    case CastType::kInt64: return f(Tag<int64_t>{});
    case CastType::kBool: return f(Tag<bool>{});
  }
  RT_ERROR("cuda cast: unknown element type ", int(t));
}

// Calls f(Tag<Index>{}) with int32_t where g's offsets fit, else int64_t.
template <int N, typename F>
void with_index(const Geometry<N>& g, F&& f) {
  if (g.fits_32bit()) f(Tag<int32_t>{});
  else f(Tag<int64_t>{});
}

}  // namespace

void launch_unary(UnaryOp op, FloatType t, const Geometry<2>& g, void* out, const void* in,
                  StreamHandle s, double p0, double p1, double p2) {
  if (g.numel == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    if (contiguous_run(g) && aligned_vec4<T>(out) && aligned_vec4<T>(in)) {
      unary_contig_kernel<T><<<blocks_for((g.numel + 3) / 4), kThreads, 0, as_stream(s)>>>(
          op, static_cast<T*>(out), static_cast<const T*>(in), g.numel, acc_t<T>(p0),
          acc_t<T>(p1), acc_t<T>(p2));
      return;
    }
    with_index(g, [&](auto index) {
      using I = typename decltype(index)::type;
      unary_kernel<T, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
          op, g.template calc<I>(), static_cast<T*>(out), static_cast<const T*>(in), g.numel,
          acc_t<T>(p0), acc_t<T>(p1), acc_t<T>(p2));
    });
  });
  check_launch("unary");
}

namespace {
// binary_kernel over g's offset calculator, with a bool result for a comparison.
template <typename T>
void binary_strided(BinaryOp op, const Geometry<3>& g, void* out, const void* a, const void* b,
                    bool b_is_scalar, acc_t<T> b_value, acc_t<T> alpha, StreamHandle s) {
  with_index(g, [&](auto index) {
    using I = typename decltype(index)::type;
    auto go = [&](auto out_type) {
      using O = typename decltype(out_type)::type;
      binary_kernel<T, O, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
          op, g.template calc<I>(), static_cast<O*>(out), static_cast<const T*>(a),
          static_cast<const T*>(b), b_is_scalar, b_value, alpha, g.numel);
    };
    if (is_comparison(op)) go(Tag<bool>{});
    else go(Tag<T>{});
  });
}
}  // namespace

void launch_binary(BinaryOp op, FloatType t, const Geometry<3>& g, void* out, const void* a,
                   const void* b, bool b_is_scalar, double b_value, double alpha, StreamHandle s) {
  if (g.numel == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    if (contiguous_run(g, b_is_scalar ? 2 : -1) && aligned_vec4<T>(a) &&
        (b_is_scalar || aligned_vec4<T>(b))) {
      auto go = [&](auto out_type) {
        using O = typename decltype(out_type)::type;
        if (!aligned_vec4<O>(out)) return false;
        binary_contig_kernel<T, O><<<blocks_for((g.numel + 3) / 4), kThreads, 0, as_stream(s)>>>(
            op, static_cast<O*>(out), static_cast<const T*>(a), static_cast<const T*>(b),
            b_is_scalar, A(b_value), A(alpha), g.numel);
        return true;
      };
      if (is_comparison(op) ? go(Tag<bool>{}) : go(Tag<T>{})) return;
    }
    binary_strided<T>(op, g, out, a, b, b_is_scalar, A(b_value), A(alpha), s);
  });
  check_launch("binary");
}

void launch_binary_int(BinaryOp op, IntType t, const Geometry<3>& g, void* out, const void* a,
                       const void* b, bool b_is_scalar, int64_t b_value, int64_t alpha,
                       StreamHandle s) {
  if (g.numel == 0) return;
  RT_CHECK(integral_op(op), "cuda binary: op ", int(op), " is not integral");
  if (t == IntType::kInt)
    binary_strided<int32_t>(op, g, out, a, b, b_is_scalar, int32_t(b_value), int32_t(alpha), s);
  else if (t == IntType::kLong)
    binary_strided<int64_t>(op, g, out, a, b, b_is_scalar, b_value, alpha, s);
  else binary_strided<bool>(op, g, out, a, b, b_is_scalar, b_value != 0, alpha != 0, s);
  check_launch("binary (integers)");
}

void launch_select(FloatType t, const Geometry<4>& g, void* out, const bool* cond, const void* a,
                   bool a_is_scalar, double a_value, const void* b, bool b_is_scalar,
                   double b_value, StreamHandle s) {
  if (g.numel == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    with_index(g, [&](auto index) {
      using I = typename decltype(index)::type;
      select_kernel<T, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
          g.template calc<I>(), static_cast<T*>(out), cond, static_cast<const T*>(a),
          a_is_scalar, acc_t<T>(a_value), static_cast<const T*>(b), b_is_scalar,
          acc_t<T>(b_value), g.numel);
    });
  });
  check_launch("select");
}

void launch_predicate(PredicateOp op, FloatType t, const Geometry<2>& g, bool* out,
                      const void* in, StreamHandle s) {
  if (g.numel == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    with_index(g, [&](auto index) {
      using I = typename decltype(index)::type;
      predicate_kernel<T, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
          op, g.template calc<I>(), out, static_cast<const T*>(in), g.numel);
    });
  });
  check_launch("predicate");
}

void launch_ternary(TernaryOp op, FloatType t, const Geometry<4>& g, void* out, const void* a,
                    const void* b, const void* c, double value, StreamHandle s) {
  if (g.numel == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    with_index(g, [&](auto index) {
      using I = typename decltype(index)::type;
      ternary_kernel<T, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
          op, g.template calc<I>(), static_cast<T*>(out), static_cast<const T*>(a),
          static_cast<const T*>(b), static_cast<const T*>(c), acc_t<T>(value), g.numel);
    });
  });
  check_launch("ternary");
}

void launch_cast(CastType to, CastType from, const Geometry<2>& g, void* out, const void* in,
                 StreamHandle s) {
  if (g.numel == 0) return;
  with_cast_type(to, [&](auto to_type) {
    using To = typename decltype(to_type)::type;
    with_cast_type(from, [&](auto from_type) {
      using From = typename decltype(from_type)::type;
      with_index(g, [&](auto index) {
        using I = typename decltype(index)::type;
        cast_kernel<To, From, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
            g.template calc<I>(), static_cast<To*>(out), static_cast<const From*>(in), g.numel);
      });
    });
  });
  check_launch("cast");
}

void launch_fill_bytes(int element_size, const Geometry<1>& g, void* out, uint64_t bits,
                       StreamHandle s) {
  if (g.numel == 0) return;
  with_element_size(element_size, "fill", [&](auto type) {
    using E = typename decltype(type)::type;
    with_index(g, [&](auto index) {
      using I = typename decltype(index)::type;
      fill_kernel<E, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
          g.template calc<I>(), static_cast<E*>(out), E(bits), g.numel);
    });
  });
  check_launch("fill");
}

void launch_ramp(NumericType t, void* out, int64_t n, bool integral, int64_t istart,
                 int64_t istep, double start, double step, double end, int64_t half,
                 StreamHandle s) {
  if (n == 0) return;
  auto go = [&](auto type) {
    using E = typename decltype(type)::type;
    ramp_kernel<E><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<E*>(out), n, integral, istart, istep, start, step, end, half);
  };
  with_numeric_type(t, go);
  check_launch("ramp");
}

void launch_copy_bytes(int element_size, const Geometry<2>& g, void* out, const void* in,
                       StreamHandle s) {
  if (g.numel == 0) return;
  with_element_size(element_size, "copy", [&](auto type) {
    using E = typename decltype(type)::type;
    with_index(g, [&](auto index) {
      using I = typename decltype(index)::type;
      copy_kernel<E, I><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
          g.template calc<I>(), static_cast<E*>(out), static_cast<const E*>(in), g.numel);
    });
  });
  check_launch("copy");
}

}  // namespace retorch::cuda_backend
