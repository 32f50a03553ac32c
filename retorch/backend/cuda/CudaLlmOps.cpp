// CUDA kernels of the LLM path's ops: paged_attention, rotary_embedding, and the row gathers
// and scatters of index_select, embedding and the KV cache's index_put_, at the CUDA key.
#include "retorch/backend/cuda/CudaLlm.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"

namespace retorch::cuda_backend {

// Note [CUDA LLM ops]
// With these, a decode or prefill step of the Llama engine on cuda (EngineOptions::device) runs
// on the GPU from the embedding lookup to the logits: embedding rows by index_select, the
// fused norms and SiLU-and-mul (CudaRowOps.cpp), projections through cuBLAS, rotary embedding,
// the cache write (index_put_ of whole rows at one index tensor), and paged attention (Note
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

// index_select(self, dim 0, index) and embedding(weight, indices, ...): whole rows gathered.
void gather(bool embedding, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor table = (*stack)[base].to_tensor();
  const Tensor index = (*stack)[base + (embedding ? 1 : 2)].to_tensor();
  bool ok = in_device_memory(table) && table.is_contiguous() && table.dim() >= 1 &&
            is_device(index, kLong) && index.is_contiguous() &&
            variant_of(s) == Variant::kFunctional;
  if (ok && embedding) ok = table.dim() == 2;
  if (ok && !embedding)
    ok = index.dim() <= 1 && maybe_wrap_dim((*stack)[base + 1].to_int(), table.dim()) == 0;
  if (!ok) return run_device_fallback(h, ks, stack);
  std::vector<int64_t> shape;
  if (embedding) shape.assign(index.sizes().begin(), index.sizes().end());
  else shape.push_back(index.numel());
  for (int64_t d = 1; d < table.dim(); ++d) shape.push_back(table.size(d));
  Tensor out = make_empty(shape, table.dtype(), table.device());
  const int64_t row = table.size(0) == 0 ? 0 : table.numel() / table.size(0);
  launch_gather_rows(table.element_size(), device_ptr(table),
                     static_cast<const int64_t*>(device_ptr(index)), device_ptr(out),
                     index.numel(), row, table.size(0), current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// index_put_(self, [rows], values) without accumulate: whole rows of self written at once.
void index_put(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  const IValue& list = (*stack)[base + 1];
  Tensor values = (*stack)[base + 2].to_tensor();
  const bool accumulate = (*stack)[base + 3].to_bool();
  bool ok = variant_of(s) == Variant::kInplace && !accumulate;
  Tensor index;
  if (ok && list.is_tensor_list()) {
    const auto& indices = list.to_tensor_list();
    ok = indices.size() == 1;
    if (ok) index = indices[0];
  } else if (ok) {
    const auto& indices = list.to_optional_tensor_list();
    ok = indices.size() == 1 && indices[0].has_value();
    if (ok) index = *indices[0];
  }
  ok = ok && in_device_memory(self) && self.is_contiguous() && self.dim() >= 1 &&
       is_device(index, kLong) && index.dim() == 1 && index.is_contiguous() &&
       is_device(values, self.dtype()) && values.dim() == self.dim() &&
       values.size(0) == index.size(0);
  for (int64_t d = 1; ok && d < self.dim(); ++d) ok = values.size(d) == self.size(d);
  if (!ok) return run_device_fallback(h, ks, stack);
  // A batch's values are often a view (the value rows of a fused projection): gathered first.
  values = contiguous_on_device(values);
  const int64_t row = self.size(0) == 0 ? 0 : self.numel() / self.size(0);
  launch_scatter_rows(self.element_size(), device_ptr(self),
                      static_cast<const int64_t*>(device_ptr(index)), device_ptr(values),
                      index.numel(), row, self.size(0), current_stream());
  finish_call(s, Variant::kInplace, self, stack);
}

}  // namespace

void register_llm_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view n = s.name, o = s.overload;
    if (n == "paged_attention" && o.empty()) set_cuda_kernel(h, &paged_attention);
    else if (n == "rotary_embedding" && o.empty()) set_cuda_kernel(h, &rotary_embedding);
    else if (n == "index_put_" && o.empty()) set_cuda_kernel(h, &index_put);
    else if (n == "index_select" && o.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        gather(false, oh, ks, st);
      });
    else if (n == "embedding" && o.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        gather(true, oh, ks, st);
      });
  }
}

}  // namespace retorch::cuda_backend
