// bfloat16 GEMM through oneDNN's matmul where the CPU has AVX-512 BF16 (Note [bfloat16 GEMM]).
#pragma once
#include "retorch/core/Tensor.h"

#ifdef RETORCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace retorch::cpu {

/// Whether oneDNN is built in and not turned off (RETORCH_ONEDNN=0).
bool onednn_enabled();

/// Whether bfloat16 products run on oneDNN: built with it (Debian's libdnnl-dev), the CPU has a
/// native bfloat16 matmul for it (AVX-512 BF16 or AMX), and RETORCH_ONEDNN is not "0".
bool onednn_bf16_available();

#ifdef RETORCH_HAVE_ONEDNN
/// The cpu engine every oneDNN primitive of retorch runs on (GemmOneDnn.cpp, ConvOneDnn.cpp).
dnnl::engine& onednn_engine();
/// Gives oneDNN's OpenMP pool get_num_threads() threads (outside a parallel region). Every
/// entry point calls it first: OpenMP's count is whoever set it last (`import torch` sets
/// PyTorch's own, one thread on some machines).
void onednn_use_threads();
#endif

/// out[b] = a[b] @ b[b] for bfloat16 a [B,M,K], b [B,K,N] (any strides) and a contiguous
/// bfloat16 or float32 out [B,M,N]; accumulates in float32 and rounds once. Returns false,
/// touching nothing, when oneDNN is not available for it.
bool onednn_bf16_gemm(const Tensor& a, const Tensor& b, Tensor& out);

/// c = alpha * op(a) @ op(b) + beta * c for row-major float32 matrices on oneDNN's SGEMM, with
/// the OpenMP threads of parallel_for (Note [oneDNN SGEMM]). Returns false, touching nothing,
/// when oneDNN is not built in or RETORCH_ONEDNN=0.
bool onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

/// c = alpha * a @ b + beta * c as onednn_sgemm, with a and b rounded to bfloat16 once and
/// multiplied on oneDNN's bfloat16 matmul (float32 accumulation): float32_matmul_precision
/// "medium" (Note [float32 matmul precision]). Returns false, touching nothing, without
/// AVX-512 BF16.
bool onednn_bf16_rounded_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                               const float* a, int64_t lda, const float* b, int64_t ldb,
                               float beta, float* c, int64_t ldc);

/// out [M, N] = x [M, K] @ w.T for float32 x and bfloat16 w [N, K] (contiguous rows), on
/// oneDNN's bfloat16 matmul with x split into two bfloat16 terms (Note [Split bfloat16
/// activations]): within ~2^-17 of x's magnitude per product; with float32_matmul_precision
/// "medium", x rounded once. Returns false, touching nothing,
/// when oneDNN's native bfloat16 matmul is not available.
bool onednn_bf16_linear(const float* x, int64_t M, int64_t K, const uint16_t* w, int64_t N,
                        float* out);

}  // namespace retorch::cpu
