// The float32 matrix-product precision setting (PyTorch's torch.set_float32_matmul_precision).
#pragma once
#include <string>

namespace retorch {

/// How much a float32 matrix product may round its operands (Note [float32 matmul precision]):
/// kHighest computes in float32; kHigh lets CUDA products round to TF32; kMedium also lets the
/// cpu's round to bfloat16 where the CPU multiplies bfloat16 natively.
enum class Float32MatmulPrecision { kHighest, kHigh, kMedium };

Float32MatmulPrecision float32_matmul_precision();
void set_float32_matmul_precision(Float32MatmulPrecision p);
/// PyTorch's names: "highest", "high" or "medium"; returns false (and changes nothing) for
/// any other string, on which torch warns and ignores the call.
bool set_float32_matmul_precision(const std::string& name);
std::string float32_matmul_precision_name();

}  // namespace retorch
