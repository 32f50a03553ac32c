// The GGUF block formats in portable C++: reference quantizers/dequantizers (bit-exact with
// gguf-py) and scalar integer dot products (see Note [Block formats]).
#include "retorch/backend/cpu/QuantBlocks.h"

#include <cmath>
#include <cstring>

#include "retorch/backend/cpu/Convert16.h"
#include "retorch/core/Error.h"
#include "retorch/core/Half.h"

namespace retorch::cpu::quant {

namespace {

const QTypeInfo kF32Info{"F32", 1, 4}, kF16Info{"F16", 1, 2}, kBF16Info{"BF16", 1, 2},
    kQ4_0Info{"Q4_0", kQK, 18}, kQ4_0x16Info{"Q4_0x16", kQK, 18}, kQ8_0Info{"Q8_0", kQK, 34},
    kQ4_KInfo{"Q4_K", kQKK, 144}, kQ6_KInfo{"Q6_K", kQKK, 210};

float fp16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return detail::half_to_float(h);
}

void put_fp16(uint8_t* p, float f) {
  uint16_t h = detail::float_to_half(f);
  std::memcpy(p, &h, 2);
}

// float -> int8 as numpy's astype(int8) does on x86 for the finite values a quantizer produces;
// NaN/inf (from a subnormal scale whose inverse overflows) become 0 instead of undefined behavior.
int8_t to_i8(float v) {
  return std::isfinite(v) ? int8_t(int32_t(v)) : int8_t(0);
}

void quantize_q8_0(const float* x, uint8_t* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, y += 34) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_fp16(y, d);
    for (int j = 0; j < kQK; ++j) y[2 + j] = uint8_t(to_i8(std::round(x[j] * id)));
  }
}

void quantize_q4_0(const float* x, uint8_t* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, y += 18) {
    // The value of largest magnitude, keeping its sign (the first one on ties).
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_fp16(y, d);
    // ggml computes x*id + 8.5f, which rounds differently with and without FMA; gguf-py (our
    // oracle) takes the exact product in double, adds 8.5 in double, then rounds to float.
    auto level = [&](float v) {
      float t = float(double(v) * double(id) + 8.5);
      if (!(t >= 0.0f && t < 256.0f)) return uint8_t(0);
      return uint8_t(std::min(15, int(t)));
    };
    for (int j = 0; j < kQK / 2; ++j)
      y[2 + j] = uint8_t(level(x[j]) | (level(x[j + kQK / 2]) << 4));
  }
}

// gguf-py's float32 -> bfloat16: NaN made quiet (top payload bits kept), else round to nearest
// even.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t(((u & 0xffff0000u) | (64u << 16)) >> 16);
  return uint16_t((uint64_t(u) + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

void dequantize_q8_0(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += 34, y += kQK) {
    const float d = fp16_at(x);
    for (int j = 0; j < kQK; ++j) y[j] = float(int8_t(x[2 + j])) * d;
  }
}

void dequantize_q4_0(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += 18, y += kQK) {
    const float d = fp16_at(x);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * float((x[2 + j] & 0x0f) - 8);
      y[j + kQK / 2] = d * float((x[2 + j] >> 4) - 8);
    }
  }
}

void dequantize_q4_k(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += 144) {
    const float d = fp16_at(x), dmin = fp16_at(x + 2);
    const uint8_t* qs = x + 16;
    for (int c = 0; c < 4; ++c, qs += 32) {
      int sc0, m0, sc1, m1;
      q4_k_scale_min(x + 4, 2 * c, sc0, m0);
      q4_k_scale_min(x + 4, 2 * c + 1, sc1, m1);
      const float d0 = d * float(sc0), dm0 = dmin * float(m0);
      const float d1 = d * float(sc1), dm1 = dmin * float(m1);
      for (int j = 0; j < 32; ++j) *y++ = d0 * float(qs[j] & 0x0f) - dm0;
      for (int j = 0; j < 32; ++j) *y++ = d1 * float(qs[j] >> 4) - dm1;
    }
  }
}

void dequantize_q6_k(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += 210, y += kQKK) {
    const uint8_t *ql = x, *qh = x + 128;
    const float d = fp16_at(x + 208);
    for (int g = 0; g < 16; ++g) {
      const float dg = d * float(int8_t(x[192 + g]));
      for (int v = 16 * g; v < 16 * g + 16; ++v) y[v] = dg * float(q6_k_value(ql, qh, v) - 32);
    }
  }
}

// ---- scalar dot products with a quantized input row (Note [Activation quantization])

// GCC 12.2 vectorizes this signed-by-signed byte dot product into AVX-512 VNNI's vpdpbusd, which
// multiplies unsigned by signed bytes: wrong sums on CPUs with VNNI under -march=native. The
// scalar reference stays scalar there (the AVX2 kernel is the fast path).
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
float dot_q8_0(int64_t K, const uint8_t* w, const ActRow& a) {
  float sum = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b, w += 34) {
    int32_t s = 0;
    const int8_t* q = a.q + b * kQK;
    for (int j = 0; j < kQK; ++j) s += int32_t(int8_t(w[2 + j])) * q[j];
    sum += fp16_at(w) * a.d[b] * float(s);
  }
  return sum;
}

float dot_q4_0(int64_t K, const uint8_t* w, const ActRow& a) {
  float sum = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b, w += 18) {
    int32_t s = 0;
    const int8_t* q = a.q + b * kQK;
    for (int j = 0; j < kQK / 2; ++j)
      s += (w[2 + j] & 0x0f) * q[j] + (w[2 + j] >> 4) * q[j + kQK / 2];
    sum += fp16_at(w) * a.d[b] * float(s - 8 * a.sum[b]);
  }
  return sum;
}

float dot_q4_k(int64_t K, const uint8_t* w, const ActRow& a) {
  float sum = 0.0f;
  for (int64_t b = 0; b < K / kQKK; ++b, w += 144) {
    const int8_t* q = a.q + b * kQKK;
    const int16_t* bs = a.sum + b * 16;
    int32_t s = 0, smin = 0;
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      q4_k_scale_min(w + 4, 2 * c, sc0, m0);
      q4_k_scale_min(w + 4, 2 * c + 1, sc1, m1);
      int32_t s0 = 0, s1 = 0;
      for (int j = 0; j < 32; ++j) {
        s0 += (w[16 + 32 * c + j] & 0x0f) * q[64 * c + j];
        s1 += (w[16 + 32 * c + j] >> 4) * q[64 * c + 32 + j];
      }
      s += sc0 * s0 + sc1 * s1;
      smin += m0 * (bs[4 * c] + bs[4 * c + 1]) + m1 * (bs[4 * c + 2] + bs[4 * c + 3]);
    }
    sum += a.d[b] * (fp16_at(w) * float(s) - fp16_at(w + 2) * float(smin));
  }
  return sum;
}

float dot_q6_k(int64_t K, const uint8_t* w, const ActRow& a) {
  float sum = 0.0f;
  for (int64_t b = 0; b < K / kQKK; ++b, w += 210) {
    const int8_t* q = a.q + b * kQKK;
    int32_t s = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t sg = 0;
      for (int v = 16 * g; v < 16 * g + 16; ++v) sg += (q6_k_value(w, w + 128, v) - 32) * q[v];
      s += int32_t(int8_t(w[192 + g])) * sg;
    }
    sum += a.d[b] * fp16_at(w + 208) * float(s);
  }
  return sum;
}

}  // namespace

const QTypeInfo* qtype_info(int64_t qtype) {
  switch (qtype) {
    case kF32:
      return &kF32Info;
    case kF16:
      return &kF16Info;
    case kBF16:
      return &kBF16Info;
    case kQ4_0:
      return &kQ4_0Info;
    case kQ4_0x16:
      return &kQ4_0x16Info;
    case kQ8_0:
      return &kQ8_0Info;
    case kQ4_K:
      return &kQ4_KInfo;
    case kQ6_K:
      return &kQ6_KInfo;
    default:
      return nullptr;
  }
}

std::string qtype_name(int64_t qtype) {
  // ggml's other ids, so that an error names the type a file actually holds.
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",  "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16"};
  if (qtype >= 0 && qtype < int64_t(sizeof(kNames) / sizeof(kNames[0]))) return kNames[qtype];
  if (qtype == kQ4_0x16) return "Q4_0x16";
  return "type " + std::to_string(qtype);
}

void quantize_row(int64_t qtype, const float* x, uint8_t* y, int64_t n) {
  switch (qtype) {
    case kQ8_0:
      return quantize_q8_0(x, y, n);
    case kQ4_0:
      return quantize_q4_0(x, y, n);
    case kF32:
      std::memcpy(y, x, size_t(n) * 4);
      return;
    case kF16:
      for (int64_t i = 0; i < n; ++i) put_fp16(y + 2 * i, x[i]);
      return;
    case kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = to_bf16(x[i]);
        std::memcpy(y + 2 * i, &h, 2);
      }
      return;
    default:
      RT_ERROR("quantize_row: no quantizer for ", qtype_name(qtype));
  }
}

void dequantize_row(int64_t qtype, const uint8_t* x, float* y, int64_t n) {
  if (dequantize_row_avx2(qtype, x, y, n)) return;
  // 16-bit rows through the vectorized (F16C) widening when they are 2-byte aligned, as they are
  // in a GGUF file. Both conversions are exact, but F16C quiets a signaling NaN where numpy keeps
  // its bits, so NaNs are redone by the scalar conversion (a compare per value, vectorized).
  if ((qtype == kF16 || qtype == kBF16) && reinterpret_cast<uintptr_t>(x) % 2 == 0) {
    if (qtype == kBF16) return to_float(reinterpret_cast<const BFloat16*>(x), y, n);
    to_float(reinterpret_cast<const Half*>(x), y, n);
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) nan |= y[i] != y[i];
    if (nan)
      for (int64_t i = 0; i < n; ++i)
        if (y[i] != y[i]) y[i] = fp16_at(x + 2 * i);
    return;
  }
  dequantize_row_scalar(qtype, x, y, n);
}

void dequantize_row_scalar(int64_t qtype, const uint8_t* x, float* y, int64_t n) {
  switch (qtype) {
    case kQ8_0:
      return dequantize_q8_0(x, y, n);
    case kQ4_0:
      return dequantize_q4_0(x, y, n);
    case kQ4_K:
      return dequantize_q4_k(x, y, n);
    case kQ6_K:
      return dequantize_q6_k(x, y, n);
    case kF32:
      std::memcpy(y, x, size_t(n) * 4);
      return;
    case kF16:
      for (int64_t i = 0; i < n; ++i) y[i] = fp16_at(x + 2 * i);
      return;
    case kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, x + 2 * i, 2);
        y[i] = detail::bf16_to_float(h);
      }
      return;
    default:
      RT_ERROR("dequantize_row: no dequantizer for ", qtype_name(qtype));
  }
}

namespace {

// Copies one group of Note [Q4_0 in groups of 16 rows] between its 16 Q4_0 rows (rb bytes each)
// and the group's bytes: into the group when kInterleave, else back into the rows.
template <bool kInterleave, typename Rows, typename Group>
void q4_0_group_copy(Rows rows, int64_t rb, Group g) {
  auto move = [](auto row_part, auto group_part, size_t n) {
    if constexpr (kInterleave) std::memcpy(group_part, row_part, n);
    else std::memcpy(row_part, group_part, n);
  };
  for (int64_t b = 0; b < rb / 18; ++b, g += 18 * kQ4_0x16Rows) {
    for (int64_t l = 0; l < kQ4_0x16Rows; ++l) {
      const auto blk = rows + l * rb + 18 * b;
      move(blk, g + 2 * l, 2);
      for (int v = 0; v < 4; ++v) move(blk + 2 + 4 * v, g + 32 + 64 * v + 4 * l, 4);
    }
  }
}

}  // namespace

void deinterleave_q4_0(const uint8_t* g, int64_t rb, uint8_t* rows) {
  q4_0_group_copy<false>(rows, rb, g);
}

void interleave_q4_0(const uint8_t* rows, int64_t rb, uint8_t* g) {
  q4_0_group_copy<true>(rows, rb, g);
}

int64_t act_block(int64_t qtype) {
  if (qtype == kQ8_0 || qtype == kQ4_0 || qtype == kQ4_0x16) return kQK;
  if (qtype == kQ4_K || qtype == kQ6_K) return kQKK;
  return 0;
}

void quantize_act(const float* x, int64_t n, int64_t block, int8_t* q, float* d, int16_t* sum,
                  float* dsum) {
  // Sums per 32 for 32-blocks (Q4_0's -8 offset), per 16 for 256-blocks (K-quant mins/offsets).
  const int64_t sum_group = block == kQK ? kQK : 16;
  for (int64_t b = 0; b < n / block; ++b, x += block, q += block) {
    float amax = 0.0f;
    bool nan = false;
    for (int64_t j = 0; j < block; ++j) {
      const float v = std::fabs(x[j]);
      amax = std::max(amax, v);
      nan |= v != v;
    }
    if (nan) amax = NAN;  // the block's scale, hence its outputs, become NaN too
    // Zeros (or NaN/inf, or a subnormal amax whose inverse overflows) give q = 0, never an
    // undefined float -> int cast; the scale keeps the NaN/inf so the outputs show it.
    float id = 127.0f / amax;
    if (!(amax > 0.0f) || !std::isfinite(id) || !std::isfinite(amax)) id = 0.0f;
    d[b] = amax / 127.0f;
    for (int64_t j = 0; j < block; ++j) {
      float r = std::nearbyint(x[j] * id);
      q[j] = int8_t(std::isfinite(r) ? std::min(127.0f, std::max(-127.0f, r)) : 0.0f);
    }
    for (int64_t g = 0; g < block / sum_group; ++g) {
      int s = 0;
      for (int64_t j = 0; j < sum_group; ++j) s += q[g * sum_group + j];
      *sum++ = int16_t(s);
      if (block == kQK) dsum[b] = d[b] * float(s);
    }
  }
}

DotFn dot_fn_scalar(int64_t qtype) {
  switch (qtype) {
    case kQ8_0:
      return dot_q8_0;
    case kQ4_0:
      return dot_q4_0;
    case kQ4_K:
      return dot_q4_k;
    case kQ6_K:
      return dot_q6_k;
    default:
      return nullptr;
  }
}

DotFn dot_fn(int64_t qtype) {
  if (DotFn f = dot_fn_avx512(qtype)) return f;
  if (DotFn f = dot_fn_avx2(qtype)) return f;
  return dot_fn_scalar(qtype);
}

}  // namespace retorch::cpu::quant
