// GGUF block-quantized formats (Q8_0, Q4_0, Q4_K, Q6_K, raw F32/F16/BF16 rows): their sizes,
// the reference quantizers and dequantizers, and the integer dot products of quantized_linear.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "retorch/core/HostDevice.h"

namespace retorch::cpu::quant {

// ggml's type ids, as GGUF files store them.
constexpr int64_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kBF16 = 30;
// retorch's own layout (not a GGUF type): Q4_0 blocks of 16 rows interleaved (Note [Q4_0 in
// groups of 16 rows]).
constexpr int64_t kQ4_0x16 = 1002;
constexpr int64_t kQK = 32;    // values per Q8_0 / Q4_0 block
constexpr int64_t kQKK = 256;  // values per K-quant super-block

// Note [Block formats]
// A quantized row of K values is K / block blocks laid end to end; nothing is aligned (a Q8_0
// block is 34 bytes), so every multi-byte field is read with memcpy. Per block:
//   Q8_0 (34 B):  fp16 d, int8 q[32];                            x = d * q
//   Q4_0 (18 B):  fp16 d, uint8 qs[16];                          x = d * (nibble - 8),
//                 value j < 16 in the low nibble of qs[j], value j + 16 in its high nibble
//   Q4_K (144 B): fp16 d, fp16 dmin, uint8 scales[12], uint8 qs[128]; eight sub-blocks of 32
//                 with 6-bit scale sc and min m packed in `scales`;  x = (d*sc) * nibble - dmin*m.
//                 Byte j of chunk c (qs[32c + j]) holds value 64c + j (low nibble) and
//                 64c + 32 + j (high nibble).
//   Q6_K (210 B): uint8 ql[128], uint8 qh[64], int8 scales[16], fp16 d; sixteen groups of 16
//                 values; x = (d * scales[v / 16]) * (q6 - 32) with q6 = 4 low bits from ql and 2
//                 high bits from qh (see dequantize_q6_k for the bit positions).
// The dequantizers evaluate exactly these float32 expressions in this order (no FMA: the files
// are compiled with -ffp-contract=off), which is what gguf-py's numpy code does, so the results
// agree bit for bit. The quantizers reproduce gguf-py's quantize byte for byte: its numpy ports
// of ggml's reference quantize_row_q8_0_ref / q4_0_ref (Q4_0 rounds x * id + 8.5 as gguf-py
// does, in double; ggml's own result there depends on whether its build fuses the multiply-add).

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K block's 12 scale bytes (the cpu's
// dequantizer and the CUDA one, CudaQuant.cu).
RT_HOST_DEVICE inline void q4_k_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The 6-bit value (0..63) of value v (0..255) of a Q6_K block.
RT_HOST_DEVICE inline int q6_k_value(const uint8_t* ql, const uint8_t* qh, int v) {
  const int half = v / 128, r = v % 128, quarter = r / 32, l = r % 32;
  const uint8_t lo = ql[64 * half + 32 * (quarter & 1) + l];
  const int low4 = quarter < 2 ? (lo & 0x0f) : (lo >> 4);
  const int high2 = (qh[32 * half + l] >> (2 * quarter)) & 3;
  return low4 | (high2 << 4);
}

// Note [Q4_0 in groups of 16 rows]
// Q4_0x16 holds the blocks of a Q4_0 matrix whose rows come in groups of 16 (N % 16 == 0), laid
// out for a decode step's dot products on AVX-512: every 32-bit lane of a vector is one row, so
// one vpdpbusd advances 16 rows by 4 values each, against 4 input bytes broadcast, and the 16
// results come out in the lanes, with no horizontal sums. The bytes are the same as Q4_0's (18
// per block, N * row_bytes in all), only reordered. Group g (rows 16g..16g+15) takes the bytes
// of its 16 rows, from offset 16 g row_bytes; inside it block b takes 288 bytes at 288 b:
//   bytes 0-31:            the 16 rows' fp16 scales d, row l's at 2l;
//   byte 32 + 64v + 4l + j: row l's qs[4v + j] (v, j < 4), i.e. value 4v + j of the block in its
//                          low nibble and value 16 + 4v + j in its high nibble.
// So the 64 bytes at 32 + 64v hold values 4v..4v+3 of every row in their low nibbles and
// 16+4v..16+4v+3 in their high nibbles, each row's 4 in its own lane. The models reorder Q4_0
// weights this way when they load them (interleave_q4_0, below); the CPU kernels read
// either layout, and the interleaved one is the fast one: a 110m model's 49
// Q4_0 products of one token (61.6 MB, a /tmp script over distinct weights, best of 7 x 20)
// 2.61-2.73 -> 1.93-1.95 ms on Zen 4, 23 -> 32 GB/s; the rows-in-fours kernel spent about as
// long per value as Q8_0's, on permutes and horizontal sums. AVX2 has its own group kernel;
// the scalar path puts a group back into 16 Q4_0 rows in L1 and dots them row by row.
inline constexpr int64_t kQ4_0x16Rows = 16;

/// Block size and bytes per block of a qtype this file handles (F32/F16/BF16 are 1-value blocks).
struct QTypeInfo {
  const char* name;
  int64_t block;
  int64_t bytes;
};

/// The info of a supported qtype, or nullptr.
const QTypeInfo* qtype_info(int64_t qtype);
/// "Q4_0", "F16", ...; "type <id>" for unknown ids (for error messages).
std::string qtype_name(int64_t qtype);
/// Bytes of one row of `cols` values (cols must be a multiple of the block size).
inline int64_t row_bytes(const QTypeInfo& info, int64_t cols) {
  return cols / info.block * info.bytes;
}

/// Quantizes n values (n a multiple of the block) of x into y: Q8_0, Q4_0, F32, F16 or BF16.
void quantize_row(int64_t qtype, const float* x, uint8_t* y, int64_t n);
/// Dequantizes n values of any supported qtype from x into y.
void dequantize_row(int64_t qtype, const uint8_t* x, float* y, int64_t n);
/// dequantize_row in portable C++ only (the same bits; tests compare the two).
void dequantize_row_scalar(int64_t qtype, const uint8_t* x, float* y, int64_t n);

// Note [Activation quantization]
// quantized_linear at small batch reads each weight byte once, so it runs at memory speed only
// if the arithmetic per weight block is a handful of instructions. As llama.cpp does, the input
// row is quantized once per call to 8 bits with one float scale per block (32 values for
// Q8_0/Q4_0 weights, 256 for K-quants, whose block sums per 16 values are kept too), and each
// weight block is dotted with it in integers (AVX2 maddubs/madd), scaled once per block. The
// rounding of the input to 8 bits is the only error beyond float summation order: each input
// value moves by at most amax(its block) / 254, so an output moves by at most
// sum over blocks of amax / 254 * sum |w| in that block (tests check exactly this bound). The
// scales stay float32 (llama.cpp rounds Q8_0's to fp16), and a block holding NaN gets a NaN
// scale, so NaN inputs still poison their outputs.

/// One input row quantized for the integer dot products (see Note [Activation quantization]).
struct ActRow {
  const int8_t* q;     // K values, in [-127, 127]
  const float* d;      // one scale per block (32 or 256 values)
  const int16_t* sum;  // sum of q per 32 (32-blocks) or per 16 (256-blocks)
  const float* dsum;   // 32-blocks: d * sum per block (Q4_0's -8 offset in float); else unused
};

/// The activation block size a weight qtype's dot product wants (32 or 256), or 0 for the
/// float qtypes (F32/F16/BF16 weights are dotted in float).
int64_t act_block(int64_t qtype);
/// Quantizes n values of x into q/d/sum (and dsum for 32-blocks) with blocks of `block` (32 or
/// 256); sum takes n / 32 (32-blocks) or n / 16 (256-blocks) entries, dsum n / 32.
void quantize_act(const float* x, int64_t n, int64_t block, int8_t* q, float* d, int16_t* sum,
                  float* dsum);

/// Dot product of a quantized weight row of K values with a quantized input row.
using DotFn = float (*)(int64_t K, const uint8_t* w, const ActRow& a);
/// The dot product for qtype (AVX-512 VNNI, else AVX2 when the CPU has them, else scalar);
/// nullptr for float qtypes.
DotFn dot_fn(int64_t qtype);
/// The portable scalar dot product for qtype (tests compare the two).
DotFn dot_fn_scalar(int64_t qtype);

/// The AVX2 kernels (QuantAvx2.cpp): nullptr when the build or the CPU lacks AVX2/FMA/F16C.
DotFn dot_fn_avx2(int64_t qtype);
/// The AVX-512 VNNI kernels (QuantAvx512.cpp, Q8_0 and Q4_0): nullptr for other qtypes, or when
/// the build, the CPU or cpu_isa() rules them out.
DotFn dot_fn_avx512(int64_t qtype);
/// out[r] = the dot product of rows w + r * rb (r < rows) with one input row, several rows at a
/// time (Note [Q4_0 rows in fours]).
using DotRowsFn = void (*)(int64_t K, const uint8_t* w, int64_t rb, int64_t rows, const ActRow& a,
                           float* out);
/// The AVX-512 rows kernel for qtype (Q4_0), or nullptr.
DotRowsFn dot_rows_fn_avx512(int64_t qtype);
/// Q4_0x16: out[m * ldo + l] = the dot product of row l of the group of 16 rows at w with input
/// row m, for m < M (Note [Q4_0 in groups of 16 rows]).
using GroupDotFn = void (*)(int64_t K, const uint8_t* w, const ActRow* a, int64_t M, float* out,
                            int64_t ldo);
/// The AVX-512 VNNI kernel for Q4_0x16 groups, or nullptr without it (or under a lower
/// cpu_isa()).
GroupDotFn group_dot_fn_avx512(int64_t qtype);
/// The AVX2 kernel for Q4_0x16 groups (the same results), or nullptr without AVX2.
GroupDotFn group_dot_fn_avx2(int64_t qtype);
/// Calls f(std::integral_constant<int, k>(), m) for input rows m..m+k-1 of M: k = 4 while four
/// remain, then the rest once (the group kernels keep k rows' sums in registers).
template <typename F>
void in_fours(int64_t M, F&& f) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) f(std::integral_constant<int, 4>(), m);
  if (M - m == 3) f(std::integral_constant<int, 3>(), m);
  if (M - m == 2) f(std::integral_constant<int, 2>(), m);
  if (M - m == 1) f(std::integral_constant<int, 1>(), m);
}
/// The 16 Q4_0 rows (row_bytes rb each, written at rows + l * rb) of the Q4_0x16 group at g.
void deinterleave_q4_0(const uint8_t* g, int64_t rb, uint8_t* rows);
/// The Q4_0x16 group (16 rb bytes at g) of the 16 Q4_0 rows at rows, rows + rb, ...
void interleave_q4_0(const uint8_t* rows, int64_t rb, uint8_t* g);
/// dequantize_row with AVX2 (the same bits); false (nothing written) without AVX2 or for the
/// float qtypes.
bool dequantize_row_avx2(int64_t qtype, const uint8_t* x, float* y, int64_t n);
/// sum(x[i] * y[i]) over n floats with AVX2/FMA; false (nothing computed) without AVX2.
bool dot_f32_avx2(const float* x, const float* y, int64_t n, float* out);
/// sum(x[i] * w[i]) over n floats and n BF16/F16 weights widened in registers; false without
/// AVX2/F16C or for another qtype.
bool dot_half_avx2(int64_t qtype, const float* x, const uint8_t* w, int64_t n, float* out);
/// out[r] = sum(x[i] * w_r[i]) for `rows` BF16 rows w_r = w + r * rb of n weights (n % 32 == 0),
/// given x split into its even (xe) and odd (xo) columns (Note [bfloat16 rows in pairs]); false
/// (nothing written) without AVX-512 or for n not a multiple of 32.
bool dot_bf16_rows_avx512(const float* xe, const float* xo, const uint8_t* w, int64_t rb,
                          int64_t rows, int64_t n, float* out);

}  // namespace retorch::cpu::quant
