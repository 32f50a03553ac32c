// Matrix products on CUDA through cuBLAS and cuBLASLt (opened at run time): mm, bmm, addmm, dot
// and _addmm_activation in float32 (TF32 by policy), float64, float16 and bfloat16, transposed
// operands read in place, bias and activation epilogues fused.
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "retorch/backend/cuda/CudaLlm.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/backend/cuda/CudaQuant.h"
#include "retorch/core/Error.h"
#include "retorch/core/SharedLibrary.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cuda_backend {

// Note [cuBLAS products]
// cuBLAS is dlopen'd when the first product runs (RETORCH_CUBLAS names the library, else
// libcublas.so.13/.12 from the loader path or /usr/local/cuda/lib64), like NVRTC and NCCL, so
// libretorch neither links nor needs it; without it products take the device fallback. cuBLAS
// is column-major: a row-major C = A·B is the column-major Cᵀ = Bᵀ·Aᵀ, so the call passes B
// then A. An operand whose rows are contiguous (row stride ≥ its columns) is read as stored
// (CUBLAS_OP_N); one whose columns are contiguous — a transposed view such as w.t() — is read
// with CUBLAS_OP_T and its column stride as the leading dimension; any other layout is copied
// contiguous on the device first. bmm passes the batch stride (0 for a broadcast batch) to
// cublasGemmStridedBatchedEx, one call for all matrices. Every dtype accumulates in float32
// (float64 in float64); float32 inputs are rounded to TF32 only when
// retorch::cuda::matmul::set_allow_tf32(true) says so (PyTorch's default since 1.12 is off).
// addmm copies its broadcast `self` into the result and passes beta, or beta = 0 when beta is
// 0, so that NaNs in self are ignored as PyTorch ignores them. Results are contiguous; out=
// writes a target whose rows are contiguous, others take the fallback.

namespace {

using GemmFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const void*, const void*, cudaDataType, int, long long,
                                  const void*, cudaDataType, int, long long, const void*, void*,
                                  cudaDataType, int, long long, int, cublasComputeType_t,
                                  cublasGemmAlgo_t);

struct Cublas {
  void* lib = nullptr;
  std::string why;
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  const char* (*status_string)(cublasStatus_t) = nullptr;
  GemmFn gemm = nullptr;
  // made by the loader, given to the first thread that asks
  std::atomic<cublasHandle_t> first{nullptr};
};

// The library, or nullptr when it cannot be loaded or cannot make a handle.
Cublas* cublas() {
  static Cublas* c = [] {
    auto* r = new Cublas();
    r->lib = open_library("RETORCH_CUBLAS",
                          {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                           "/usr/local/cuda/lib64/libcublas.so"},
                          &r->why);
    if (r->lib && !(bind_symbol(r->lib, "cublasCreate_v2", &r->create) &&
                    bind_symbol(r->lib, "cublasSetStream_v2", &r->set_stream) &&
                    bind_symbol(r->lib, "cublasGetStatusString", &r->status_string) &&
                    bind_symbol(r->lib, "cublasGemmStridedBatchedEx", &r->gemm))) {
      r->why = "libcublas lacks the functions used here";
      r->lib = nullptr;
    }
    cublasHandle_t probe = nullptr;  // the first handle, made here so a failure means no cuBLAS
    if (r->lib && r->create(&probe) != CUBLAS_STATUS_SUCCESS) {
      r->why = "cublasCreate failed";
      r->lib = nullptr;
    }
    if (r->lib) r->first = probe;
    return r;
  }();
  return c->lib ? c : nullptr;
}

// This thread's handle (one device: Note [CUDA tensors]), set to queue its kernels on the
// current stream like every kernel of this backend (Note [CUDA streams]).
cublasHandle_t handle(Cublas& lib) {
  cublasHandle_t handle = thread_handle<cublasHandle_t>([&] {
    cublasHandle_t h = lib.first.exchange(nullptr);
    if (h == nullptr) {
      const cublasStatus_t st = lib.create(&h);
      RT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda matmul: cublasCreate failed: ",
               lib.status_string(st));
    }
    return h;
  });
  const cublasStatus_t st = lib.set_stream(handle, static_cast<cudaStream_t>(current_stream()));
  RT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda matmul: cublasSetStream failed: ",
           lib.status_string(st));
  return handle;
}

// How cuBLAS reads one row-major [rows, cols] operand with strides (rs, cs): as stored (rows
// contiguous) or transposed (columns contiguous), with its leading dimension.
struct Layout {
  bool ok = false, columns_contiguous = false;
  int64_t ld = 0;
};

Layout layout_of(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  // The leading dimension is raised to cuBLAS's minimum where it addresses nothing (one row,
  // one column, or no elements).
  Layout l;
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cols)) {
    l = {true, false, std::max<int64_t>(rows == 1 ? 0 : rs, std::max<int64_t>(cols, 1))};
  } else if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rows)) {
    l = {true, true, std::max<int64_t>(cols == 1 ? 0 : cs, std::max<int64_t>(rows, 1))};
  }
  l.ok = l.ok && l.ld <= INT32_MAX;
  return l;
}

struct GemmTypes {
  cudaDataType data;
  cublasComputeType_t compute;
  bool double_scalars;
};

std::optional<GemmTypes> gemm_types(ScalarType t) {
  switch (t) {
    case kFloat:
      return GemmTypes{CUDA_R_32F,
                       cuda::matmul::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F,
                       false};
    case kDouble: return GemmTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case kHalf: return GemmTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    case kBFloat16: return GemmTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    default: return std::nullopt;
  }
}

// One operand of a product: the matrices [rows, cols] in the last two dims of a 2-d or 3-d
// tensor, with their row and column strides, and the stride between matrices (0 for one
// matrix, which a batch then shares).
struct Operand {
  Tensor t;
  int64_t rows, cols, rs, cs, batch_stride;
};

Operand operand(const Tensor& t) {
  const int64_t d = t.dim();
  return {t, t.size(d - 2), t.size(d - 1), t.stride(d - 2), t.stride(d - 1),
          d == 3 && t.size(0) != 1 ? t.stride(0) : 0};
}

// The operand as cuBLAS reads it: its layout, with a contiguous copy when neither its rows nor
// its columns are contiguous.
Layout readable(Operand* o) {
  Layout l = layout_of(o->rows, o->cols, o->rs, o->cs);
  if (l.ok) return l;
  *o = operand(contiguous_on_device(o->t));
  return layout_of(o->rows, o->cols, o->rs, o->cs);
}

// C[i] = alpha * A[i] @ B[i] + beta * C[i] for i < batch, with C's rows contiguous; false when
// something does not fit cuBLAS. A and B share a dtype, which sets the compute type; C has it
// too, or is float32 for 16-bit A and B (cuBLAS's mixed GemmEx: float32 accumulation, no
// rounding of the result to 16 bits).
bool gemm(Operand a, Operand b, const Operand& c, int64_t batch, double alpha, double beta) {
  Cublas* lib = cublas();
  const auto types = gemm_types(a.t.dtype()), c_types = gemm_types(c.t.dtype());
  if (!lib || !types || !c_types || b.t.dtype() != a.t.dtype()) return false;
  const bool widened = c.t.dtype() == kFloat && (a.t.dtype() == kHalf || a.t.dtype() == kBFloat16);
  if (c.t.dtype() != a.t.dtype() && !widened) return false;
  const int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX) return false;
  const Layout lc = layout_of(m, n, c.rs, c.cs);
  if (!lc.ok || lc.columns_contiguous) return false;
  const Layout la = readable(&a), lb = readable(&b);
  const double ad = alpha, bd = beta;
  const float af = float(alpha), bf = float(beta);
  const void* pa = types->double_scalars ? static_cast<const void*>(&ad) : &af;
  const void* pb = types->double_scalars ? static_cast<const void*>(&bd) : &bf;
  // Column-major Cᵀ[n, m] = Bᵀ[n, k] · Aᵀ[k, m]: B's stored rows are Bᵀ's columns.
  const cublasStatus_t st = lib->gemm(
      handle(*lib), lb.columns_contiguous ? CUBLAS_OP_T : CUBLAS_OP_N,
      la.columns_contiguous ? CUBLAS_OP_T : CUBLAS_OP_N, int(n), int(m), int(k), pa,
      device_ptr(b.t), types->data, int(lb.ld), b.batch_stride, device_ptr(a.t), types->data,
      int(la.ld), a.batch_stride, pb, device_ptr(c.t), c_types->data, int(lc.ld), c.batch_stride,
      int(batch), types->compute, CUBLAS_GEMM_DEFAULT);
  RT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda matmul (", m, "x", k, " @ ", k, "x", n, ", ",
           batch, " matrices): cuBLAS failed: ", lib->status_string(st));
  return true;
}

// Note [cuBLASLt epilogues]
// A product whose bias is one row broadcast down the result (addmm's self of shape [N] with beta
// 1, as nn.Linear's; _addmm_activation's, then relu or GELU) runs as one cublasLtMatmul whose
// epilogue adds the bias (and applies the activation) as the tiles are written: without it the
// bias was first copied into every row of the result, which the GEMM then read back (beta 1),
// and an activation was a third pass. cuBLASLt (libcublasLt, opened at run time like cuBLAS) sees
// the column-major transpose, as cublasGemmEx does (Note [cuBLAS products]): D = Cᵀ [N, M], its
// rows the result's columns, so a bias per column of the result is cuBLASLt's bias per row of D.
// Its GELU epilogue is the tanh approximation, as PyTorch's CUDA _addmm_activation (which applies
// gelu(approximate="tanh") where it cannot use the epilogue); the cpu's is erf's. The
// algorithm is cuBLASLt's own heuristic choice (algo nullptr) with a 4 MiB workspace from the
// caching allocator. Anything cuBLASLt refuses (a status other than success: a dtype or layout
// without such a kernel) runs unfused: the bias copy, the GEMM, and the activation kernel.

struct CublasLt {
  void* lib = nullptr;
  std::string why;
  cublasStatus_t (*create)(cublasLtHandle_t*) = nullptr;
  cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t) =
      nullptr;
  cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t) = nullptr;
  cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void*,
                             size_t) = nullptr;
  cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t*, cudaDataType, uint64_t, uint64_t,
                                  int64_t) = nullptr;
  cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t) = nullptr;
  cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                           cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t,
                           const void*, const void*, cublasLtMatrixLayout_t, void*,
                           cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t,
                           cudaStream_t) = nullptr;
};

// The library, or nullptr when it cannot be loaded.
CublasLt* cublas_lt() {
  static CublasLt* c = [] {
    auto* r = new CublasLt();
    r->lib = open_library("RETORCH_CUBLASLT",
                          {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                           "/usr/local/cuda/lib64/libcublasLt.so"},
                          &r->why);
    if (r->lib && !(bind_symbol(r->lib, "cublasLtCreate", &r->create) &&
                    bind_symbol(r->lib, "cublasLtMatmulDescCreate", &r->desc_create) &&
                    bind_symbol(r->lib, "cublasLtMatmulDescDestroy", &r->desc_destroy) &&
                    bind_symbol(r->lib, "cublasLtMatmulDescSetAttribute", &r->desc_set) &&
                    bind_symbol(r->lib, "cublasLtMatrixLayoutCreate", &r->layout_create) &&
                    bind_symbol(r->lib, "cublasLtMatrixLayoutDestroy", &r->layout_destroy) &&
                    bind_symbol(r->lib, "cublasLtMatmul", &r->matmul))) {
      r->why = "libcublasLt lacks the functions used here";
      r->lib = nullptr;
    }
    return r;
  }();
  return c->lib ? c : nullptr;
}

enum class Epilogue { kBias, kReluBias, kGeluBias };

// Descriptors destroyed when the call ends, whichever way it ends.
struct LtCall {
  CublasLt& lt;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layouts[3] = {nullptr, nullptr, nullptr};
  ~LtCall() {
    for (cublasLtMatrixLayout_t l : layouts)
      if (l) lt.layout_destroy(l);
    if (desc) lt.desc_destroy(desc);
  }
};

// c = epilogue(alpha * a @ b + bias) for one product, bias a contiguous [N] vector of c's dtype
// (Note [cuBLASLt epilogues]); false, with nothing written, where cuBLASLt is missing or refuses.
bool gemm_epilogue(Operand a, Operand b, const Operand& c, const Tensor& bias, double alpha,
                   Epilogue epilogue) {
  CublasLt* lt = cublas_lt();
  const auto types = gemm_types(a.t.dtype());
  if (!lt || !types || b.t.dtype() != a.t.dtype() || c.t.dtype() != a.t.dtype() ||
      bias.dtype() != a.t.dtype())
    return false;
  const int64_t m = c.rows, n = c.cols, k = a.cols;
  const Layout lc = layout_of(m, n, c.rs, c.cs);
  if (!lc.ok || lc.columns_contiguous || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return false;
  const Layout la = readable(&a), lb = readable(&b);
  const cudaDataType scale_type = types->double_scalars ? CUDA_R_64F : CUDA_R_32F;
  LtCall call{*lt};
  if (lt->desc_create(&call.desc, types->compute, scale_type) != CUBLAS_STATUS_SUCCESS)
    return false;
  // Column-major D[n, m] = op(B-side)[n, k] · op(A-side)[k, m] (Note [cuBLAS products]).
  const int32_t op_b = lb.columns_contiguous ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t op_a = la.columns_contiguous ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t ep = epilogue == Epilogue::kBias       ? CUBLASLT_EPILOGUE_BIAS
                      : epilogue == Epilogue::kReluBias ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                        : CUBLASLT_EPILOGUE_GELU_BIAS;
  const void* bias_ptr = device_ptr(bias);
  bool ok = lt->desc_set(call.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)) ==
                CUBLAS_STATUS_SUCCESS &&
            lt->desc_set(call.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)) ==
                CUBLAS_STATUS_SUCCESS &&
            lt->desc_set(call.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof(ep)) ==
                CUBLAS_STATUS_SUCCESS &&
            lt->desc_set(call.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                         sizeof(bias_ptr)) == CUBLAS_STATUS_SUCCESS;
  // Stored shapes: the B side is [n, k] as read (N) or [k, n] (T), the A side [k, m] or [m, k].
  ok = ok &&
       lt->layout_create(&call.layouts[0], types->data, uint64_t(op_b == CUBLAS_OP_N ? n : k),
                         uint64_t(op_b == CUBLAS_OP_N ? k : n), lb.ld) == CUBLAS_STATUS_SUCCESS &&
       lt->layout_create(&call.layouts[1], types->data, uint64_t(op_a == CUBLAS_OP_N ? k : m),
                         uint64_t(op_a == CUBLAS_OP_N ? m : k), la.ld) == CUBLAS_STATUS_SUCCESS &&
       lt->layout_create(&call.layouts[2], types->data, uint64_t(n), uint64_t(m), lc.ld) ==
           CUBLAS_STATUS_SUCCESS;
  if (!ok) return false;
  cublasLtHandle_t handle = thread_handle<cublasLtHandle_t>([&] {
    cublasLtHandle_t h = nullptr;
    const cublasStatus_t st = lt->create(&h);
    RT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda matmul: cublasLtCreate failed (status ", int(st),
             ")");
    return h;
  });
  constexpr int64_t kWorkspace = int64_t(4) << 20;
  const Tensor workspace = make_empty({kWorkspace}, kByte, c.t.device());
  const double ad = alpha, bd = 0.0;
  const float af = float(alpha), bf = 0.0f;
  const void* pa = types->double_scalars ? static_cast<const void*>(&ad) : &af;
  const void* pb = types->double_scalars ? static_cast<const void*>(&bd) : &bf;
  return lt->matmul(handle, call.desc, pa, device_ptr(b.t), call.layouts[0], device_ptr(a.t),
                    call.layouts[1], pb, device_ptr(c.t), call.layouts[2], device_ptr(c.t),
                    call.layouts[2], nullptr, device_ptr(workspace), size_t(kWorkspace),
                    static_cast<cudaStream_t>(current_stream())) == CUBLAS_STATUS_SUCCESS;
}

// Whether addmm's self is a bias the epilogue can add: a contiguous row of N of the product's
// dtype, with beta 1.
bool epilogue_bias(const Tensor& self, const Tensor& a, int64_t n, double beta) {
  return beta == 1.0 && self.dim() == 1 && self.size(0) == n && self.is_contiguous() &&
         self.dtype() == a.dtype() && n > 0;
}

bool on_device_with(const Tensor& t, ScalarType dtype) {
  return in_device_memory(t) && t.dtype() == dtype;
}

// mm, bmm, addmm and _addmm_activation in their variants; `batched` for bmm, `scaled` for addmm's
// self, beta and alpha, `activation` for _addmm_activation's use_gelu after them.
void product(bool batched, bool scaled, bool activation, const OperatorHandle& h,
             DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[base].to_tensor();
  const Tensor a = (*stack)[base + (scaled ? 1 : 0)].to_tensor();
  const Tensor b = (*stack)[base + (scaled ? 2 : 1)].to_tensor();
  const double beta = scaled ? (*stack)[base + 3].to_scalar().to_double() : 0.0;
  const double alpha = scaled ? (*stack)[base + 4].to_scalar().to_double() : 1.0;
  const bool use_gelu = activation && (*stack)[base + 5].to_bool();
  const int dims = batched ? 3 : 2;
  const ScalarType dt = a.dtype();
  bool ok = a.dim() == dims && b.dim() == dims && on_device_with(a, dt) && on_device_with(b, dt) &&
            a.size(dims - 1) == b.size(dims - 2) && (!batched || a.size(0) == b.size(0)) &&
            gemm_types(dt).has_value() && cublas() != nullptr;
  if (ok && scaled) ok = on_device_with(self, dt) && self.dim() <= 2;
  if (!ok) return run_device_fallback(h, ks, stack);  // its errors name shapes and dtypes
  DimVector shape;
  if (batched) shape.push_back(a.size(0));
  shape.push_back(a.size(dims - 2));
  shape.push_back(b.size(dims - 1));
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  if (out.defined() && !(on_device_with(out, dt) && out.sizes().equals(IntArrayRef(shape))))
    return run_device_fallback(h, ks, stack);
  if (!out.defined()) out = make_empty(shape, dt, a.device());
  const Epilogue ep = !activation ? Epilogue::kBias
                      : use_gelu  ? Epilogue::kGeluBias
                                  : Epilogue::kReluBias;
  if (scaled && out.numel() > 0 && a.size(1) > 0 && !out.is_same(self) &&
      epilogue_bias(self, a, out.size(1), beta) &&
      gemm_epilogue(operand(a), operand(b), operand(out), self, alpha, ep))
    return finish_call(s, v, out, stack);
  if (scaled && beta != 0.0 && !out.is_same(self) && !copy_on_device(out, self))
    return run_device_fallback(h, ks, stack);
  if (out.numel() > 0) {
    if (a.size(dims - 1) == 0 && !(scaled && beta != 0.0)) {
      if (!out.is_contiguous()) return run_device_fallback(h, ks, stack);
      check_status(cudaMemsetAsync(device_ptr(out), 0, size_t(out.numel()) * out.element_size(),
                                   static_cast<cudaStream_t>(current_stream())),
                   "cudaMemsetAsync");
    } else if (!gemm(operand(a), operand(b), operand(out), batched ? out.size(0) : 1, alpha,
                     scaled ? beta : 0.0)) {
      return run_device_fallback(h, ks, stack);
    }
  }
  if (activation && out.numel() > 0) {  // as PyTorch's CUDA kernel: relu, or GELU's tanh form
    Geometry<2> g;
    RT_CHECK(geometry_of<2>(out.sizes(), {strides_of(out), strides_of(out)}, &g),
             "cuda _addmm_activation: a ", out.sizes(), " geometry");
    launch_unary(use_gelu ? UnaryOp::kGeluTanh : UnaryOp::kRelu, *float_type(dt), g,
                 device_ptr(out), device_ptr(out), current_stream());
  }
  finish_call(s, v, out, stack);
}

// dot(self, tensor): two 1-D device tensors of one floating dtype as a [1, K] @ [K, 1] GEMM.
void dot(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor a = (*stack)[base].to_tensor(), b = (*stack)[base + 1].to_tensor();
  const ScalarType dt = a.dtype();
  const bool ok = a.dim() == 1 && b.dim() == 1 && a.size(0) == b.size(0) && a.size(0) > 0 &&
                  on_device_with(a, dt) && on_device_with(b, dt) && float_type(dt) &&
                  cublas() != nullptr && variant_of(s) == Variant::kFunctional;
  if (!ok) return run_device_fallback(h, ks, stack);  // its errors; an empty dot is 0
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t k = a.size(0);
  const Tensor x = contiguous_on_device(a).view({1, k}), y = contiguous_on_device(b).view({k, 1});
  Tensor out = make_empty({1, 1}, dt, a.device());
  if (!gemm(operand(x), operand(y), operand(out), 1, 1.0, 0.0))
    return run_device_fallback(h, ks, stack);
  finish_call(s, Variant::kFunctional, out.view({}), stack);
}

// dequantize_blocks(input, qtype, cols) of uint8 blocks in device memory: the cpu kernel checks
// the arguments (on meta tensors, raising its own errors) and sizes the result; the device
// decodes every value (Note [CUDA dequantization]).
void dequantize_blocks(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor input = (*stack)[base].to_tensor();
  const int64_t qtype = (*stack)[base + 1].to_int(), cols = (*stack)[base + 2].to_int();
  if (!on_device_with(input, kByte)) return run_device_fallback(h, ks, stack);
  const Tensor shape = cpu::dequantize_blocks(meta_like(input), qtype, cols);
  Tensor out = make_empty(shape.sizes(), kFloat, input.device());
  const int64_t rows = input.dim() == 2 ? input.size(0) : 1;
  const Tensor x = contiguous_on_device(input);
  launch_dequantize(qtype, static_cast<const uint8_t*>(device_ptr(x)), input.size(-1), rows,
                    cols, static_cast<float*>(device_ptr(out)), current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// quantize_blocks(input, qtype) of a floating device tensor: checked and sized by the cpu kernel
// on meta tensors, quantized on the device from its float32 values (Note [CUDA dequantization]).
void quantize_blocks(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor input = (*stack)[base].to_tensor();
  const int64_t qtype = (*stack)[base + 1].to_int();
  if (!in_device_memory(input) || !float_type(input.dtype()))
    return run_device_fallback(h, ks, stack);
  const Tensor shape = cpu::quantize_blocks(meta_like(input), qtype);
  Tensor out = make_empty(shape.sizes(), kByte, input.device());
  if (out.numel() > 0) {
    Tensor x = make_empty(input.sizes(), kFloat, input.device());
    RT_CHECK(copy_on_device(x, input), "cuda quantize_blocks: a ", input.sizes(), " copy");
    launch_quantize(qtype, static_cast<const float*>(device_ptr(x)),
                    input.dim() == 2 ? input.size(0) : 1, input.size(-1),
                    static_cast<uint8_t*>(device_ptr(out)), out.size(-1), current_stream());
  }
  finish_call(s, Variant::kFunctional, out, stack);
}

// quantized_linear of the block-quantized qtypes (and F32): the weight dequantized to float32
// on the device, one float32 GEMM (TF32 by the same policy as mm), the bias added. Its numbers
// are the exact dequantized weight's products, as the cpu's many-row path gives (the cpu's
// few-row path quantizes the activations to 8 bits first: Note [Activation quantization]). Up
// to kQuantGemvMaxRows rows of Q8_0, Q4_0, Q4_K or Q6_K (a decode step's) run the GEMV of Note
// [Quantized decode projections] instead, which reads the quantized weight once.
void quantized_linear_dequantized(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor input = (*stack)[base].to_tensor(), weight = (*stack)[base + 1].to_tensor();
  const int64_t qtype = (*stack)[base + 2].to_int(), k = (*stack)[base + 3].to_int();
  const IValue& bias_arg = (*stack)[base + 4];
  const Tensor bias = bias_arg.is_none() ? Tensor() : bias_arg.to_tensor();
  bool ok = on_device_with(input, kFloat) && on_device_with(weight, kByte) && cublas() != nullptr;
  if (ok && bias.defined()) ok = in_device_memory(bias);
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor shape = cpu::quantized_linear(meta_like(input), meta_like(weight), qtype, k,
                                             bias.defined() ? std::optional<Tensor>(meta_like(bias))
                                                            : std::nullopt);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  Tensor result = make_empty(shape.sizes(), kFloat, input.device());
  const int64_t n = weight.size(0);
  const int64_t m = k == 0 ? 0 : input.numel() / k;
  if (k == 0 || result.numel() == 0) {
    result.fill_(Scalar(0.0));
  } else if (quantized_gemv_fits(qtype, m, n)) {  // Note [Quantized decode projections]
    const Tensor wc = contiguous_on_device(weight), xc = contiguous_on_device(input);
    const bool fused_bias = bias.defined() && bias.dtype() == kFloat && bias.is_contiguous();
    launch_quantized_gemv(qtype, static_cast<const uint8_t*>(device_ptr(wc)), weight.size(1),
                          static_cast<const float*>(device_ptr(xc)),
                          fused_bias ? static_cast<const float*>(device_ptr(bias)) : nullptr,
                          static_cast<float*>(device_ptr(result)), m, n, k, current_stream());
    if (fused_bias) return finish_call(s, Variant::kFunctional, result, stack);
  } else {
    Tensor w = make_empty({n, k}, kFloat, input.device());
    const Tensor wc = contiguous_on_device(weight);
    launch_dequantize(qtype, static_cast<const uint8_t*>(device_ptr(wc)), weight.size(1), n, k,
                      static_cast<float*>(device_ptr(w)), current_stream());
    if (!gemm(operand(contiguous_on_device(input).reshape({m, k})), operand(w.t()),
              operand(result.view({m, n})), 1, 1.0, 0.0))
      return run_device_fallback(h, ks, stack);
  }
  if (bias.defined()) result.add_(bias);
  finish_call(s, Variant::kFunctional, result, stack);
}

// quantized_linear(input, weight, qtype, in_features, bias?) for 16-bit rows (GGUF's BF16, type
// 30, and F16, type 1) in device memory: the weight's bytes read as an [N, K] matrix of that
// type, the float32 activations rounded to it on the device, one GEMM into a float32 result
// (float32 accumulation) and the float32 bias added: one op where the LLM's projections ran a
// conversion, a product and a conversion back; up to kGemvMaxRows rows (a decode step's) run the
// GEMV of Note [Few-row projections] instead. Other types and arguments take the fallback,
// whose cpu kernel raises for bad ones.
void quantized_linear_16bit(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor input = (*stack)[base].to_tensor(), weight = (*stack)[base + 1].to_tensor();
  const int64_t qtype = (*stack)[base + 2].to_int(), k = (*stack)[base + 3].to_int();
  if (qtype != 30 && qtype != 1) return quantized_linear_dequantized(h, ks, stack);
  const IValue& bias_arg = (*stack)[base + 4];
  const Tensor bias = bias_arg.is_none() ? Tensor() : bias_arg.to_tensor();
  bool ok = (qtype == 30 || qtype == 1) && on_device_with(input, kFloat) && input.dim() >= 1 &&
            input.size(-1) == k && k > 0 && on_device_with(weight, kByte) && weight.dim() == 2 &&
            weight.is_contiguous() && weight.size(1) == 2 * k &&
            weight.storage_offset() % 2 == 0 && cublas() != nullptr;
  if (ok && bias.defined())
    ok = on_device_with(bias, kFloat) && bias.dim() == 1 && bias.size(0) == weight.size(0);
  if (!ok) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const ScalarType rows = qtype == 30 ? kBFloat16 : kHalf;
  const int64_t n = weight.size(0), m = input.numel() / k;
  auto impl = make_intrusive<TensorImpl>(weight.impl()->storage(), rows, weight.device());
  impl->set_sizes_and_strides({n, k}, {k, 1}, weight.storage_offset() / 2);
  const Tensor w(std::move(impl));
  Tensor out = make_empty({m, n}, kFloat, input.device());
  DimVector shape(input.sizes().begin(), input.sizes().end());
  shape.back() = n;
  if (m >= 1 && m <= kGemvMaxRows) {  // decode steps: Note [Few-row projections]
    const Tensor xc = contiguous_on_device(input);
    const bool fused_bias = !bias.defined() || bias.is_contiguous();
    if (gemv_fits(device_ptr(w), static_cast<const float*>(device_ptr(xc)), m, n, k)) {
      launch_gemv_16bit(qtype == 30, device_ptr(w), static_cast<const float*>(device_ptr(xc)),
                        bias.defined() && fused_bias
                            ? static_cast<const float*>(device_ptr(bias)) : nullptr,
                        static_cast<float*>(device_ptr(out)), m, n, k, current_stream());
      if (!fused_bias) out.add_(bias);
      return finish_call(s, Variant::kFunctional, out.view(shape), stack);
    }
  }
  Tensor x = make_empty({m, k}, rows, input.device());
  if (m > 0 && !(copy_on_device(x, input.reshape({m, k})) &&
                 gemm(operand(x), operand(w.t()), operand(out), 1, 1.0, 0.0)))
    return run_device_fallback(h, ks, stack);
  if (bias.defined()) out.add_(bias);
  finish_call(s, Variant::kFunctional, out.view(shape), stack);
}

}  // namespace

void register_blas_ops(Dispatcher& d) {
  d.find("quantized_linear")
      ->set_kernel(DispatchKey::CUDA, make_boxed_kernel(&quantized_linear_16bit));
  d.find("dequantize_blocks")->set_kernel(DispatchKey::CUDA, make_boxed_kernel(&dequantize_blocks));
  d.find("quantize_blocks")->set_kernel(DispatchKey::CUDA, make_boxed_kernel(&quantize_blocks));
  // _euclidean_dist's cpu kernel is device-generic (norms, a cat and one matmul, all dispatched):
  // on cuda tensors its ops run here.
  OperatorHandle* dist = d.find("_euclidean_dist");
  dist->set_kernel(DispatchKey::CUDA, dist->kernel(DispatchKey::CPU));
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const bool functional_or_out = s.overload.empty() || s.overload == "out";
    const std::string_view name = s.name;
    bool batched = false, scaled = false, activation = false;
    if (name == "dot" && s.overload.empty()) {
      set_cuda_kernel(h, &dot);
      continue;
    }
    if (name == "mm" && functional_or_out) {
    } else if (name == "bmm" && functional_or_out) {
      batched = true;
    } else if (name == "addmm" && functional_or_out) {
      scaled = true;
    } else if (name == "_addmm_activation" && functional_or_out) {
      scaled = activation = true;
    } else {
      continue;
    }
    h->set_kernel(DispatchKey::CUDA,
                  make_boxed_kernel([batched, scaled, activation](const OperatorHandle& oh,
                                                                  DispatchKeySet ks, Stack* st) {
                    product(batched, scaled, activation, oh, ks, st);
                  }));
  }
}

}  // namespace retorch::cuda_backend
