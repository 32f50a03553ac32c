// GGUF block-quantized weights (Q8_0, Q4_0, Q4_K, Q6_K; raw F32/F16/BF16 rows): quantize,
// dequantize, and the quantized linear layer of LLM inference (see Note [Quantized linear]).
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <vector>

#include "retorch/backend/cpu/Blas.h"
#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/GemmOneDnn.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/backend/cpu/QuantBlocks.h"
#include "retorch/core/Error.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

using namespace quant;

// Note [Quantized linear]
// out = input @ dequant(weight).T, the weight kept in its GGUF blocks (row n = output feature n,
// a GGUF matrix with ne = [in_features, out_features]). Two regimes:
//  - a few input rows (decode: one token per sequence) read each weight byte once and do little
//    arithmetic per byte, so the time is the weight's trip from memory. The input rows are
//    quantized to 8 bits (Note [Activation quantization]) and every weight row is dotted with
//    them in integer SIMD while it is in L1; output features are split across threads.
//  - from kGemmRows input rows (prefill) the work is O(M N K) and compute-bound: tiles of weight
//    rows are dequantized to float32 into a per-thread buffer and multiplied by the whole input
//    with one single-threaded SGEMM each (Note [GEMM threading]), so the layer runs at SGEMM
//    speed and its numbers are float32 products of the exact dequantized weight. Each SGEMM
//    call packs the whole input again, so tiles are large (kTileBytes): 64-row tiles ran
//    512x4096x4096 in 144 ms, 256-row tiles in 100 ms, as fast as float32 mm.
// The crossover was measured on 4096x4096 Q4_0/Q8_0/Q4_K weights (2-core dev VM): the integer
// path costs ~0.35 ms per input row, the GEMM path ~4 ms at 1-8 rows (the dequantization, and
// SGEMM being slow at so few rows) growing slowly; they meet at 16-24 rows.
constexpr int64_t kGemmRows = 16;
constexpr int64_t kBF16Type = 30;  // ggml's BF16: raw bfloat16 rows
constexpr int64_t kTileBytes = int64_t(4) << 20;
// Output features per parallel_for grain of the few-rows paths: ~64 KB of weight (several us of
// work), so that a second thread's start-up stays small next to what it takes over.
int64_t row_grain(int64_t bytes_per_row) {
  return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(bytes_per_row, 1));
}

const char* supported_list() {
  return "F32 (0), F16 (1), Q4_0 (2), Q8_0 (8), Q4_K (12), Q6_K (14), BF16 (30), Q4_0x16 (1002)";
}

const QTypeInfo& checked_info(const char* op, int64_t qtype) {
  const QTypeInfo* info = qtype_info(qtype);
  RT_CHECK_VALUE(info, op, ": unsupported qtype ", qtype, " (", qtype_name(qtype),
                 "); supported: ", supported_list());
  return *info;
}

// A Q4_0x16 matrix is whole groups of 16 rows (Note [Q4_0 in groups of 16 rows]).
void check_groups(const char* op, int64_t qtype, int64_t rows, IntArrayRef sizes) {
  RT_CHECK_VALUE(qtype != kQ4_0x16 || rows % kQ4_0x16Rows == 0, op,
                 ": Q4_0x16 blocks come in groups of 16 rows, but the weight has ", rows,
                 " rows (shape ", sizes, ")");
}

std::vector<int64_t> with_last(IntArrayRef sizes, int64_t last) {
  std::vector<int64_t> s(sizes.begin(), sizes.end());
  s.back() = last;
  return s;
}

// Rows n0..n1 of the weight w (row_bytes rb) as float32 rows of K values at out; for Q4_0x16
// n0 and n1 are multiples of 16 (whole groups).
void dequantize_rows(int64_t qtype, const uint8_t* w, int64_t rb, int64_t n0, int64_t n1,
                     int64_t K, float* out) {
  if (qtype != kQ4_0x16) {
    for (int64_t n = n0; n < n1; ++n) dequantize_row(qtype, w + n * rb, out + (n - n0) * K, K);
    return;
  }
  std::vector<uint8_t> rows(static_cast<size_t>(kQ4_0x16Rows * rb));
  for (int64_t g = n0; g < n1; g += kQ4_0x16Rows) {
    deinterleave_q4_0(w + g * rb, rb, rows.data());
    for (int64_t l = 0; l < kQ4_0x16Rows; ++l)
      dequantize_row(kQ4_0, &rows[size_t(l * rb)], out + (g - n0 + l) * K, K);
  }
}

// out [M, N] = x [M, K] @ dequant(w).T, a tile of weight rows at a time (Note [Quantized linear]).
void gemm_path(int64_t qtype, const float* x, int64_t M, int64_t K, const uint8_t* w, int64_t rb,
               int64_t N, float* out) {
  RT_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX, "quantized_linear: [", M, ", ", K, "] @ [",
           K, ", ", N, "] is too large for BLAS (dims must fit in int)");
  BlasSingleThreaded single;  // Note [GEMM threading]
  // Weight rows per tile: up to kTileBytes of float32, at most an even share per thread.
  const int64_t threads = get_num_threads();
  int64_t tile_rows = std::max<int64_t>(16, kTileBytes / (4 * K) / 16 * 16);
  tile_rows = std::min(tile_rows, ((N + threads - 1) / threads + 15) / 16 * 16);
  const int64_t tiles = (N + tile_rows - 1) / tile_rows;
  parallel_for(0, tiles, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> buf(static_cast<size_t>(std::min(N, tile_rows) * K));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = t * tile_rows, n1 = std::min(N, n0 + tile_rows);
      dequantize_rows(qtype, w, rb, n0, n1, K, buf.data());
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(n1 - n0), int(K), 1.0f, x,
                  int(K), buf.data(), int(K), 0.0f, out + n0, int(N));
    }
  });
}

float dot_float(const float* x, const float* y, int64_t n) {
  float s;
  if (dot_f32_avx2(x, y, n, &s)) return s;
  s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

// Few input rows, float weights (F32/F16/BF16): each weight row widened once into a buffer
// (in L1) and dotted with every input row.
void float_rows_path(int64_t qtype, const float* x, int64_t M, int64_t K, const uint8_t* w,
                     int64_t rb, int64_t N, float* out) {
  if (M == 1 && qtype == kBF16Type && K % 32 == 0 && cpu_isa() >= CpuIsa::kAvx512) {
    // Note [bfloat16 rows in pairs]: x's even and odd columns once, then 4 rows per step.
    std::vector<float> xeo(static_cast<size_t>(K));
    for (int64_t j = 0; j < K / 2; ++j) {
      xeo[size_t(j)] = x[2 * j];
      xeo[size_t(K / 2 + j)] = x[2 * j + 1];
    }
    std::atomic<bool> ok{true};
    parallel_for(0, (N + 3) / 4, row_grain(4 * rb), [&](int64_t b0, int64_t b1) {
      const int64_t n0 = 4 * b0, n1 = std::min(N, 4 * b1);
      if (!dot_bf16_rows_avx512(xeo.data(), xeo.data() + K / 2, w + n0 * rb, rb, n1 - n0, K,
                                out + n0))
        ok = false;
    });
    if (ok) return;
  }
  parallel_for(0, N, row_grain(rb * M), [&](int64_t n0, int64_t n1) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = n0; n < n1; ++n) {
      // One row (decode) of 16-bit weights: widened inside the dot product, never stored.
      if (M == 1 && dot_half_avx2(qtype, x, w + n * rb, K, out + n)) continue;
      dequantize_row(qtype, w + n * rb, row.data(), K);
      for (int64_t m = 0; m < M; ++m) out[m * N + n] = dot_float(x + m * K, row.data(), K);
    }
  });
}

// Few input rows, block-quantized weights: the integer path of Note [Quantized linear].
void int_rows_path(int64_t qtype, const float* x, int64_t M, int64_t K, const uint8_t* w,
                   int64_t rb, int64_t N, float* out) {
  const int64_t block = act_block(qtype);
  const int64_t nblocks = K / block, nsums = block == kQK ? nblocks : K / 16;
  std::vector<int8_t> q(static_cast<size_t>(M * K));
  std::vector<float> d(static_cast<size_t>(M * nblocks));
  std::vector<int16_t> sums(static_cast<size_t>(M * nsums));
  std::vector<float> dsums(static_cast<size_t>(M * nblocks));
  std::vector<ActRow> act(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    const size_t qo = size_t(m * K), bo = size_t(m * nblocks), so = size_t(m * nsums);
    quantize_act(x + m * K, K, block, &q[qo], &d[bo], &sums[so], &dsums[bo]);
    act[size_t(m)] = {&q[qo], &d[bo], &sums[so], &dsums[bo]};
  }
  const DotFn dot = dot_fn(qtype == kQ4_0x16 ? kQ4_0 : qtype);
  if (qtype == kQ4_0x16) {  // Note [Q4_0 in groups of 16 rows]
    GroupDotFn group = group_dot_fn_avx512(qtype);
    if (!group) group = group_dot_fn_avx2(qtype);
    parallel_for(0, N / kQ4_0x16Rows, row_grain(kQ4_0x16Rows * rb), [&](int64_t g0, int64_t g1) {
      std::vector<uint8_t> rows;
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t n0 = kQ4_0x16Rows * g;
        if (group) {
          group(K, w + n0 * rb, act.data(), M, out + n0, N);
          continue;
        }
        rows.resize(static_cast<size_t>(kQ4_0x16Rows * rb));
        deinterleave_q4_0(w + n0 * rb, rb, rows.data());
        for (int64_t l = 0; l < kQ4_0x16Rows; ++l)
          for (int64_t m = 0; m < M; ++m)
            out[m * N + n0 + l] = dot(K, &rows[size_t(l * rb)], act[size_t(m)]);
      }
    });
    return;
  }
  if (M == 1) {
    if (const DotRowsFn rows = dot_rows_fn_avx512(qtype)) {  // Note [Q4_0 rows in fours]
      parallel_for(0, (N + 3) / 4, row_grain(4 * rb), [&](int64_t b0, int64_t b1) {
        const int64_t n0 = 4 * b0, n1 = std::min(N, 4 * b1);
        rows(K, w + n0 * rb, rb, n1 - n0, act[0], out + n0);
      });
      return;
    }
  }
  parallel_for(0, N, row_grain(rb * M), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t m = 0; m < M; ++m) out[m * N + n] = dot(K, w + n * rb, act[size_t(m)]);
  });
}

}  // namespace

Tensor quantize_blocks(const Tensor& input, int64_t qtype) {
  const QTypeInfo& info = checked_info("quantize_blocks", qtype);
  RT_CHECK_VALUE(
      qtype == kQ8_0 || qtype == kQ4_0 || qtype == kF32 || qtype == kF16 || qtype == kBF16,
      "quantize_blocks: no quantizer for ", info.name, " (qtype ", qtype,
      "); supported: Q8_0 (8), Q4_0 (2), F32 (0), F16 (1), BF16 (30)");
  RT_CHECK_TYPE(input.is_floating_point(), "quantize_blocks: expected a floating-point input, got ",
                input.dtype());
  RT_CHECK_VALUE(input.dim() == 1 || input.dim() == 2,
                 "quantize_blocks: expected a 1-D [K] or 2-D [N, K] input, got shape ",
                 input.sizes());
  const int64_t K = input.size(-1), N = input.dim() == 2 ? input.size(0) : 1;
  RT_CHECK_VALUE(K % info.block == 0, "quantize_blocks: row length ", K,
                 " is not a multiple of the ", info.name, " block size ", info.block,
                 " (input shape ", input.sizes(), ")");
  const int64_t rb = row_bytes(info, K);
  Tensor out = make_empty(with_last(input.sizes(), rb), kByte, input.device());
  if (out.numel() == 0 || out.device().is_meta()) return out;  // Note [Meta through CPU kernels]
  Tensor x = input.dtype() == kFloat ? input.contiguous() : input.to(kFloat).contiguous();
  const float* xp = x.data_ptr<float>();
  uint8_t* op = out.data_ptr<uint8_t>();
  parallel_for(0, N, std::max<int64_t>(1, 65536 / std::max<int64_t>(K, 1)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) quantize_row(qtype, xp + r * K, op + r * rb, K);
               });
  return out;
}

Tensor dequantize_blocks(const Tensor& input, int64_t qtype, int64_t cols) {
  const QTypeInfo& info = checked_info("dequantize_blocks", qtype);
  RT_CHECK_TYPE(input.dtype() == kByte, "dequantize_blocks: expected uint8 blocks, got ",
                input.dtype());
  RT_CHECK_VALUE(input.dim() == 1 || input.dim() == 2,
                 "dequantize_blocks: expected 1-D [row_bytes] or 2-D [N, row_bytes] blocks, got "
                 "shape ",
                 input.sizes());
  RT_CHECK_VALUE(cols >= 0 && cols % info.block == 0, "dequantize_blocks: cols ", cols,
                 " is not a non-negative multiple of the ", info.name, " block size ", info.block);
  const int64_t rb = row_bytes(info, cols);
  RT_CHECK_VALUE(input.size(-1) == rb, "dequantize_blocks: ", cols, " ", info.name, " values take ",
                 rb, " bytes per row, but the input has shape ", input.sizes());
  const int64_t N = input.dim() == 2 ? input.size(0) : 1;
  check_groups("dequantize_blocks", qtype, N, input.sizes());
  Tensor out = make_empty(with_last(input.sizes(), cols), kFloat, input.device());
  if (out.numel() == 0 || out.device().is_meta()) return out;  // Note [Meta through CPU kernels]
  Tensor x = input.contiguous();
  const uint8_t* xp = x.data_ptr<uint8_t>();
  float* op = out.data_ptr<float>();
  // Whole groups of 16 rows for Q4_0x16, single rows otherwise.
  const int64_t unit = qtype == kQ4_0x16 ? kQ4_0x16Rows : 1;
  parallel_for(0, N / unit, std::max<int64_t>(1, 65536 / std::max<int64_t>(unit * cols, 1)),
               [&](int64_t u0, int64_t u1) {
                 dequantize_rows(qtype, xp, rb, u0 * unit, u1 * unit, cols, op + u0 * unit * cols);
               });
  return out;
}

Tensor quantized_linear(const Tensor& input, const Tensor& weight, int64_t qtype,
                        int64_t in_features, const std::optional<Tensor>& bias) {
  const QTypeInfo& info = checked_info("quantized_linear", qtype);
  RT_CHECK_TYPE(weight.dtype() == kByte, "quantized_linear: weight must be uint8 (packed ",
                info.name, " rows), got ", weight.dtype());
  RT_CHECK_VALUE(weight.dim() == 2,
                 "quantized_linear: weight must be 2-D [out_features, row_bytes], got shape ",
                 weight.sizes());
  const int64_t K = in_features, N = weight.size(0);
  RT_CHECK_VALUE(K >= 0 && K % info.block == 0, "quantized_linear: in_features ", K,
                 " is not a non-negative multiple of the ", info.name, " block size ", info.block);
  const int64_t rb = row_bytes(info, K);
  RT_CHECK_VALUE(weight.size(1) == rb, "quantized_linear: ", K, " ", info.name, " values take ", rb,
                 " bytes per row, but the weight has shape ", weight.sizes());
  check_groups("quantized_linear", qtype, N, weight.sizes());
  RT_CHECK_TYPE(input.dtype() == kFloat, "quantized_linear: input must be float32, got ",
                input.dtype());
  RT_CHECK_VALUE(input.dim() >= 1 && input.size(-1) == K, "quantized_linear: input shape ",
                 input.sizes(), " does not end in in_features ", K);
  const Tensor* b = bias && bias->defined() ? &*bias : nullptr;
  if (b) {
    RT_CHECK_TYPE(b->dtype() == kFloat, "quantized_linear: bias must be float32, got ", b->dtype());
    RT_CHECK_VALUE(b->dim() == 1 && b->size(0) == N, "quantized_linear: bias shape ", b->sizes(),
                   " does not match out_features ", N);
  }
  Tensor out = make_empty(with_last(input.sizes(), N), kFloat, input.device());
  const int64_t M = K == 0 ? out.numel() / std::max<int64_t>(N, 1) : input.numel() / K;
  if (out.numel() == 0 || out.device().is_meta()) return out;  // Note [Meta through CPU kernels]
  float* op = out.data_ptr<float>();
  if (K == 0) {
    std::fill(op, op + out.numel(), 0.0f);
  } else {
    Tensor x = input.contiguous(), w = weight.contiguous();
    const float* xp = x.data_ptr<float>();
    const uint8_t* wp = w.data_ptr<uint8_t>();
    if (M >= kGemmRows) {
      // Note [Split bfloat16 activations]: bfloat16 weights on oneDNN's native matmul.
      const bool amx = qtype == kBF16Type && K >= 64 &&
                       onednn_bf16_linear(xp, M, K, reinterpret_cast<const uint16_t*>(wp), N, op);
      if (!amx) gemm_path(qtype, xp, M, K, wp, rb, N, op);
    } else if (act_block(qtype) == 0) {
      float_rows_path(qtype, xp, M, K, wp, rb, N, op);
    } else {
      int_rows_path(qtype, xp, M, K, wp, rb, N, op);
    }
  }
  if (b) {
    Tensor bc = b->contiguous();
    const float* bp = bc.data_ptr<float>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) op[m * N + n] += bp[n];
  }
  return out;
}

}  // namespace retorch::cpu
