// bfloat16 GEMM through oneDNN's matmul where the CPU has AVX-512 BF16 (Note [bfloat16 GEMM]).
#pragma once
#include "retorch/core/Tensor.h"

namespace retorch::cpu {

/// Whether bfloat16 products run on oneDNN: built with it (Debian's libdnnl-dev), the CPU has a
/// native bfloat16 matmul for it (AVX-512 BF16 or AMX), and RETORCH_ONEDNN is not "0".
bool onednn_bf16_available();

/// out[b] = a[b] @ b[b] for bfloat16 a [B,M,K], b [B,K,N] (any strides) and a contiguous
/// bfloat16 out [B,M,N]; accumulates in float32 and rounds once. Returns false, touching
/// nothing, when oneDNN is not available for it.
bool onednn_bf16_gemm(const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace retorch::cpu
