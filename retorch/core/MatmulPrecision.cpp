// The float32 matrix-product precision setting, read by the cpu and CUDA products.
#include "retorch/core/MatmulPrecision.h"

#include <atomic>

namespace retorch {

// Note [float32 matmul precision]
// PyTorch's setting, with its three names and default "highest". On CUDA, "high" and "medium"
// allow cuBLAS's TF32 mode, so torch.backends.cuda.matmul.allow_tf32 is this setting seen from
// the other side (setting it True gives "high", False "highest"), as in torch. On the cpu,
// "medium" lets float32 products (mm, addmm, bmm, matmul, linear) and a bfloat16 model's linear
// layers at prefill size round their float32 operands to bfloat16 once and multiply with
// oneDNN's bfloat16 matmul, accumulating in float32 (LinearAlgebra.cpp, QuantOps.cpp): twice
// SGEMM's multiply rate on CPUs with AVX-512 BF16, and the numbers of PyTorch's bfloat16 model,
// which rounds its activations. Without AVX-512 BF16 nothing changes. "high" and "highest" keep
// the cpu's float32 products exact to float32 accumulation.
namespace {
std::atomic<Float32MatmulPrecision> g_precision{Float32MatmulPrecision::kHighest};
}

Float32MatmulPrecision float32_matmul_precision() {
  return g_precision.load(std::memory_order_relaxed);
}

void set_float32_matmul_precision(Float32MatmulPrecision p) {
  g_precision.store(p, std::memory_order_relaxed);
}

bool set_float32_matmul_precision(const std::string& name) {
  if (name == "highest") set_float32_matmul_precision(Float32MatmulPrecision::kHighest);
  else if (name == "high") set_float32_matmul_precision(Float32MatmulPrecision::kHigh);
  else if (name == "medium") set_float32_matmul_precision(Float32MatmulPrecision::kMedium);
  else return false;
  return true;
}

std::string float32_matmul_precision_name() {
  switch (float32_matmul_precision()) {
    case Float32MatmulPrecision::kHigh: return "high";
    case Float32MatmulPrecision::kMedium: return "medium";
    default: return "highest";
  }
}

}  // namespace retorch
