// CUDA kernels of the LLM path's ops: paged_attention, rotary_embedding, rotary_and_cache,
// rms_norm_linear (also with the rotations and the cache write) and embedding's row gather, at
// the CUDA key (index_select and index_put_: CudaIndexOps.cpp).
#include <optional>

#include "retorch/backend/cpu/QuantBlocks.h"
#include "retorch/backend/cuda/CudaLlm.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/backend/cuda/CudaQuant.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"

namespace retorch::cuda_backend {

// Note [CUDA LLM ops]
// With these, a decode or prefill step of the Llama engine on cuda (EngineOptions::device) runs
// on the GPU from the embedding lookup to the logits: embedding rows by index_select, the
// fused norms and SiLU-and-mul (CudaRowOps.cpp), projections through cuBLAS or the GEMV, rotary
// embedding with the cache write (rotary_and_cache), and paged attention (Note
// [CUDA paged attention]); only the logits travel back, for sampling on the cpu. Each kernel
// checks shapes, dtypes and devices on the host and takes the device fallback (the cpu kernel
// and its error messages) for anything else; index values are checked on the device.

namespace {

bool is_device(const Tensor& t, ScalarType dtype) {
  return in_device_memory(t) && t.dtype() == dtype;
}

void paged_attention(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  auto arg = [&](size_t i) { return (*stack)[base + i].to_tensor(); };
  const Tensor q = arg(0), kc = arg(1), vc = arg(2), tables = arg(3), seq = arg(4), pos = arg(5);
  const bool bf16 = kc.dtype() == kBFloat16;
  bool ok = is_device(q, kFloat) && q.dim() == 3 && (kc.dtype() == kFloat || bf16) &&
            is_device(kc, kc.dtype()) && is_device(vc, kc.dtype()) && kc.dim() == 4 &&
            vc.sizes().equals(kc.sizes()) && kc.is_contiguous() && vc.is_contiguous() &&
            kc.size(3) == q.size(2) && q.size(2) <= kMaxAttentionHeadDim &&
            is_device(tables, kLong) && tables.dim() == 2 && tables.is_contiguous() &&
            is_device(seq, kLong) && is_device(pos, kLong) && seq.dim() == 1 && pos.dim() == 1 &&
            seq.size(0) == q.size(0) && pos.size(0) == q.size(0) && seq.is_contiguous() &&
            pos.is_contiguous() && kc.size(2) > 0 && q.size(1) % kc.size(2) == 0;
  if (!ok) return run_device_fallback(h, ks, stack);  // its checks name shapes and dtypes
  AttentionShape g;
  g.hq = int(q.size(1));
  g.hkv = int(kc.size(2));
  g.d = int(q.size(2));
  g.block_size = kc.size(1);
  g.num_blocks = kc.size(0);
  g.seqs = tables.size(0);
  g.max_blocks = tables.size(1);
  g.scale = float((*stack)[base + 6].to_double());
  g.window = (*stack)[base + 7].to_int();
  const Tensor qc = contiguous_on_device(q);
  Tensor out = make_empty({q.size(0), q.size(1), q.size(2)}, kFloat, q.device());
  launch_paged_attention(static_cast<const float*>(device_ptr(qc)), device_ptr(kc),
                         device_ptr(vc), bf16, static_cast<const int64_t*>(device_ptr(tables)),
                         static_cast<const int64_t*>(device_ptr(seq)),
                         static_cast<const int64_t*>(device_ptr(pos)),
                         static_cast<float*>(device_ptr(out)), q.size(0), g, current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

void rotary_embedding(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor x = (*stack)[base].to_tensor(), pos = (*stack)[base + 1].to_tensor();
  const Tensor cs = (*stack)[base + 2].to_tensor();
  const bool interleaved = (*stack)[base + 3].to_bool();
  bool ok = is_device(x, kFloat) && x.dim() >= 2 && is_device(pos, kLong) &&
            pos.is_contiguous() && is_device(cs, kFloat) && cs.is_contiguous() && cs.dim() == 2 &&
            cs.size(1) % 2 == 0 && cs.size(1) <= x.size(-1) && pos.dim() == x.dim() - 2;
  for (int64_t d = 0; ok && d < pos.dim(); ++d) ok = pos.size(d) == x.size(d);
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor in = contiguous_on_device(x);
  Tensor out = make_empty(x.sizes(), kFloat, x.device());
  const int64_t d = x.size(-1);
  launch_rotary(static_cast<const float*>(device_ptr(in)),
                static_cast<const int64_t*>(device_ptr(pos)),
                static_cast<const float*>(device_ptr(cs)), static_cast<float*>(device_ptr(out)),
                d == 0 ? 0 : x.numel() / d, x.size(-2), d, cs.size(1) / 2, cs.size(0),
                interleaved, current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// rotary_and_cache(qkv, positions, cos_sin_cache, key_cache!, value_cache!, slots, interleaved):
// the caches are written in place (their versions bumped), the rotated queries returned.
void rotary_and_cache(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  auto arg = [&](size_t i) { return (*stack)[base + i].to_tensor(); };
  const Tensor qkv = arg(0), pos = arg(1), cs = arg(2), kc = arg(3), vc = arg(4), slots = arg(5);
  const bool bf16 = kc.dtype() == kBFloat16;
  const int64_t D = kc.dim() == 4 ? kc.size(3) : 0, Hkv = kc.dim() == 4 ? kc.size(2) : 0;
  bool ok = is_device(qkv, kFloat) && qkv.dim() == 2 && D > 0 && qkv.size(1) % D == 0 &&
            qkv.size(1) / D > 2 * Hkv && (kc.dtype() == kFloat || bf16) &&
            is_device(kc, kc.dtype()) && is_device(vc, kc.dtype()) &&
            vc.sizes().equals(kc.sizes()) && kc.is_contiguous() && vc.is_contiguous() &&
            is_device(cs, kFloat) && cs.is_contiguous() && cs.dim() == 2 &&
            cs.size(1) % 2 == 0 && cs.size(1) <= D && is_device(pos, kLong) &&
            is_device(slots, kLong) && pos.dim() == 1 && slots.dim() == 1 &&
            pos.is_contiguous() && slots.is_contiguous() && pos.size(0) == qkv.size(0) &&
            slots.size(0) == qkv.size(0);
  if (!ok) return run_device_fallback(h, ks, stack);  // its checks name shapes and dtypes
  RotaryCacheShape g;
  g.tokens = qkv.size(0);
  g.hkv = Hkv;
  g.d = D;
  g.hq = qkv.size(1) / D - 2 * Hkv;
  g.half = cs.size(1) / 2;
  g.positions = cs.size(0);
  g.cache_rows = kc.size(0) * kc.size(1);
  g.interleaved = (*stack)[base + 6].to_bool();
  const Tensor x = contiguous_on_device(qkv);
  Tensor q = make_empty({g.tokens, g.hq, D}, kFloat, qkv.device());
  launch_rotary_and_cache(static_cast<const float*>(device_ptr(x)),
                          static_cast<const int64_t*>(device_ptr(pos)),
                          static_cast<const int64_t*>(device_ptr(slots)),
                          static_cast<const float*>(device_ptr(cs)),
                          static_cast<float*>(device_ptr(q)), device_ptr(kc), device_ptr(vc), bf16,
                          g, current_stream());
  kc.impl()->bump_version();
  vc.impl()->bump_version();
  finish_call(s, Variant::kFunctional, q, stack);
}

// embedding(weight, indices, ...): whole rows gathered.
void embedding(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor table = (*stack)[base].to_tensor(), index = (*stack)[base + 1].to_tensor();
  const bool ok = in_device_memory(table) && table.is_contiguous() && table.dim() == 2 &&
                  is_device(index, kLong) && index.is_contiguous() &&
                  variant_of(s) == Variant::kFunctional;
  if (!ok) return run_device_fallback(h, ks, stack);
  std::vector<int64_t> shape(index.sizes().begin(), index.sizes().end());
  shape.push_back(table.size(1));
  Tensor out = make_empty(shape, table.dtype(), table.device());
  launch_gather_rows(table.element_size(), device_ptr(table),
                     static_cast<const int64_t*>(device_ptr(index)), device_ptr(out),
                     index.numel(), table.size(1), table.size(0), current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// The arguments (input, residual?, norm_weight, eps, weight, qtype, in_features, bias?) that
// rms_norm_linear and rms_norm_linear_rotary_and_cache start with, when the fused kernel of Note
// [Normed decode projections] takes them: one float32 row on the device, weight rows of BF16 or
// F16, or of Q8_0, Q4_0, Q4_K or Q6_K blocks.
struct NormedArgs {
  Tensor input, residual, norm_w, weight, bias;
  float eps = 0;
  int64_t qtype = 0;
  int64_t k = 0;
};

std::optional<NormedArgs> normed_args(const Stack& stack, size_t base) {
  const auto optional = [&](size_t i) {
    return stack[base + i].is_none() ? Tensor() : stack[base + i].to_tensor();
  };
  NormedArgs a;
  a.input = stack[base].to_tensor();
  a.residual = optional(1);
  a.norm_w = stack[base + 2].to_tensor();
  a.eps = float(stack[base + 3].to_double());
  a.weight = stack[base + 4].to_tensor();
  const int64_t qtype = stack[base + 5].to_int();
  a.k = stack[base + 6].to_int();
  a.bias = optional(7);
  a.qtype = qtype;
  const Tensor& x = a.input;
  const auto dense = [&](const Tensor& t) {
    return is_device(t, kFloat) && t.is_contiguous() && t.device() == x.device();
  };
  namespace q = cpu::quant;
  const bool half = qtype == q::kBF16 || qtype == q::kF16;
  const q::QTypeInfo* info = q::qtype_info(qtype);
  bool ok = dense(x) && x.dim() >= 1 && x.size(-1) == a.k && x.numel() == a.k && a.k > 0 &&
            dense(a.norm_w) && a.norm_w.dim() == 1 && a.norm_w.size(0) == a.k &&
            is_device(a.weight, kByte) && a.weight.dim() == 2 && a.weight.is_contiguous() &&
            a.weight.device() == x.device() && info != nullptr && a.k % info->block == 0 &&
            a.weight.size(1) == q::row_bytes(*info, a.k);
  if (ok && a.residual.defined()) ok = dense(a.residual) && a.residual.sizes().equals(x.sizes());
  if (ok && a.bias.defined())
    ok = dense(a.bias) && a.bias.dim() == 1 && a.bias.size(0) == a.weight.size(0);
  if (ok && half)
    ok = a.weight.storage_offset() % 2 == 0 &&
         normed_gemv_fits(device_ptr(a.weight), a.weight.size(0), a.k);
  else if (ok)
    ok = normed_quantized_gemv_fits(qtype, a.weight.size(0), a.k);
  if (!ok) return std::nullopt;
  return a;
}

// Runs the launch for `a` with `out` and `rw`, into y; the residual sum is returned (the input
// itself without a residual, as the cpu kernel returns it).
Tensor run_normed(const NormedArgs& a, NormedOut out, const RotaryWrite& rw, const Tensor& y) {
  Tensor sum = a.residual.defined() ? make_empty(a.input.sizes(), kFloat, a.input.device())
                                    : a.input;
  const auto f32 = [](const Tensor& t) {
    return t.defined() ? static_cast<const float*>(device_ptr(t)) : nullptr;
  };
  float* sum_out = a.residual.defined() ? static_cast<float*>(device_ptr(sum)) : nullptr;
  float* yp = static_cast<float*>(device_ptr(y));
  const int64_t n = a.weight.size(0);
  if (a.qtype == cpu::quant::kBF16 || a.qtype == cpu::quant::kF16)
    launch_normed_gemv_16bit(a.qtype == cpu::quant::kBF16, device_ptr(a.weight), f32(a.input),
                             f32(a.residual), f32(a.norm_w), a.eps, sum_out, f32(a.bias), yp, n,
                             a.k, out, rw, current_stream());
  else
    launch_normed_quantized_gemv(a.qtype, static_cast<const uint8_t*>(device_ptr(a.weight)),
                                 a.weight.size(1), f32(a.input), f32(a.residual), f32(a.norm_w),
                                 a.eps, sum_out, f32(a.bias), yp, n, a.k, out, rw,
                                 current_stream());
  return sum;
}

// The op's cpu kernel, which dispatches its parts (fused_rms_norm, quantized_linear, ...) to
// their own CUDA kernels, checks and errors: the calls the fused kernel does not take.
void run_parts(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const KernelFunction& cpu = h.kernel(DispatchKey::CPU);
  if (cpu.unboxed != nullptr) cpu.adapter(cpu.unboxed, ks, stack);
  else cpu.boxed(h, ks, stack);
}

// rms_norm_linear(input, residual?, norm_weight, eps, weight, qtype, in_features, bias?,
// silu_and_mul): one row over 16-bit or block-quantized weight rows runs the fused kernel of Note
// [Normed decode projections]; anything else runs its parts.
void rms_norm_linear(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto a = normed_args(*stack, base);
  const bool swiglu = (*stack)[base + 8].to_bool();
  if (!a || (swiglu && a->weight.size(0) % 2 != 0)) return run_parts(h, ks, stack);
  DimVector shape(a->input.sizes().begin(), a->input.sizes().end());
  shape.back() = swiglu ? a->weight.size(0) / 2 : a->weight.size(0);
  Tensor out = make_empty(shape, kFloat, a->input.device());
  const Tensor sum =
      run_normed(*a, swiglu ? NormedOut::kSwiGlu : NormedOut::kPlain, RotaryWrite(), out);
  push_results(s, {out, sum}, stack);
}

// rms_norm_linear_rotary_and_cache(input, residual?, norm_weight, eps, weight, qtype,
// in_features, bias?, positions, cos_sin_cache, key_cache!, value_cache!, slots, interleaved):
// one token's norm, q/k/v projection, rotations and cache write in one kernel (Note [Normed
// decode projections]) where rms_norm_linear's fused kernel and rotary_and_cache's kernel would
// both take the call; anything else runs its parts.
void rms_norm_linear_rotary_and_cache(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto a = normed_args(*stack, base);
  auto arg = [&](size_t i) { return (*stack)[base + i].to_tensor(); };
  const Tensor pos = arg(8), cs = arg(9), kc = arg(10), vc = arg(11), slots = arg(12);
  const bool bf16 = kc.dtype() == kBFloat16;
  const int64_t D = kc.dim() == 4 ? kc.size(3) : 0, Hkv = kc.dim() == 4 ? kc.size(2) : 0;
  const int64_t rows = a ? a->weight.size(0) : 0;
  const bool ok = a && D > 0 && D % 2 == 0 && rows % D == 0 && rows / D > 2 * Hkv &&
                  a->input.dim() == 2 && (kc.dtype() == kFloat || bf16) &&
                  is_device(kc, kc.dtype()) && is_device(vc, kc.dtype()) &&
                  vc.sizes().equals(kc.sizes()) && kc.is_contiguous() && vc.is_contiguous() &&
                  is_device(cs, kFloat) && cs.is_contiguous() && cs.dim() == 2 &&
                  cs.size(1) % 2 == 0 && cs.size(1) <= D && is_device(pos, kLong) &&
                  is_device(slots, kLong) && pos.dim() == 1 && slots.dim() == 1 &&
                  pos.numel() == 1 && slots.numel() == 1;
  if (!ok) return run_parts(h, ks, stack);
  RotaryWrite rw;
  rw.pos = static_cast<const int64_t*>(device_ptr(pos));
  rw.slots = static_cast<const int64_t*>(device_ptr(slots));
  rw.cos_sin = static_cast<const float*>(device_ptr(cs));
  rw.kc = device_ptr(kc);
  rw.vc = device_ptr(vc);
  rw.bfloat16_cache = bf16;
  rw.interleaved = (*stack)[base + 13].to_bool();
  rw.hkv = Hkv;
  rw.d = D;
  rw.hq = rows / D - 2 * Hkv;
  rw.half = cs.size(1) / 2;
  rw.positions = cs.size(0);
  rw.cache_rows = kc.size(0) * kc.size(1);
  Tensor q = make_empty({1, rw.hq, D}, kFloat, a->input.device());
  const Tensor sum = run_normed(*a, NormedOut::kRotary, rw, q);
  kc.impl()->bump_version();
  vc.impl()->bump_version();
  push_results(s, {q, sum}, stack);
}

}  // namespace

void register_llm_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view n = s.name, o = s.overload;
    if (n == "paged_attention" && o.empty()) set_cuda_kernel(h, &paged_attention);
    else if (n == "rotary_embedding" && o.empty()) set_cuda_kernel(h, &rotary_embedding);
    else if (n == "rotary_and_cache" && o.empty()) set_cuda_kernel(h, &rotary_and_cache);
    else if (n == "embedding" && o.empty()) set_cuda_kernel(h, &embedding);
    else if (n == "rms_norm_linear" && o.empty()) set_cuda_kernel(h, &rms_norm_linear);
    else if (n == "rms_norm_linear_rotary_and_cache" && o.empty())
      set_cuda_kernel(h, &rms_norm_linear_rotary_and_cache);
  }
}

}  // namespace retorch::cuda_backend
