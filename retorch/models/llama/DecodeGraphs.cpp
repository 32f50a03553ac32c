// CUDA graphs of the engine's decode steps.
#include "retorch/models/llama/DecodeGraphs.h"

#include <iostream>

#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"

namespace retorch::llama {

// Note [Decode graphs]
// A decode step at batch 1 is bound by the host: about a thousand dispatched ops for half a
// millisecond of weight reads on an H200. On a cuda device the engine runs each decode batch (one
// token per sequence) through a CUDA graph of its size (Note [CUDA graphs]): the first batch of a
// size runs eagerly on a side stream (a warm-up), then the same forward is captured with device
// tensors of fixed shapes as inputs (tokens, positions, the sequence of each token, block tables
// padded to the widest a sequence can need, cache slots) and all rows' logits as its output;
// every later batch of that size copies its values into those inputs and replays the graph.
// The inputs are views of one device buffer filled by one copy from a pinned host buffer that
// does not wait for the device (Note [Pinned host memory]): four copies that each waited for
// the stream before; the host writes that buffer again only once the last copy has run.
// The capture asks the model for rotary tables covering max_context positions, so replays never
// need a larger table, and the KV cache's tensors are the engine's own, so the graph's writes
// land where eager steps read. If a capture fails (an op of the model that needs the host, such
// as a quantized weight type without a CUDA kernel), graphs turn off for the engine, with a note
// on stderr, and it runs eagerly.

namespace {
Tensor on(const Tensor& t, Device d) { return t.to(d, t.dtype()); }
}  // namespace

DecodeGraphs::DecodeGraphs(Device device, int64_t table_width, int64_t max_context)
    : device_(device), table_width_(table_width), max_context_(max_context) {}

bool DecodeGraphs::usable() const {
  return !broken_ && device_.is_cuda() && cuda::is_available();
}

bool DecodeGraphs::capture(LlamaForCausalLMImpl& model, KvCache& cache, Entry& e) {
  const Stream previous = cuda::current_stream();
  const Stream side = device_api::new_stream(device_);
  side.wait_stream(previous);
  device_api::set_stream(side);
  auto graph = std::make_unique<cuda::CUDAGraph>();
  bool captured = true;
  try {
    model.forward(e.inputs, cache);  // the warm-up: lazy initialization happens outside
    graph->capture_begin();
    e.logits = model.forward(e.inputs, cache);
    graph->capture_end();
  } catch (const std::exception& err) {
    graph->capture_abort();
    captured = false;
    std::cerr << "retorch: CUDA graphs of decode steps are off for this engine (the capture "
                 "failed: " << err.what() << ")\n";
  }
  device_api::set_stream(previous);
  previous.wait_stream(side);
  if (captured) e.graph = std::move(graph);
  return captured;
}

void DecodeGraphs::stage(Entry& e, const ForwardBatch& batch) {
  const int64_t b = batch.tokens.numel(), w = batch.block_tables.size(1);
  if (e.copied.recorded()) e.copied.synchronize();  // (passed already: the logits were read)
  Tensor& h = e.staging;
  h.narrow(0, 0, b).copy_(batch.tokens.reshape({b}));
  h.narrow(0, b, b).copy_(batch.positions.reshape({b}));
  h.narrow(0, 2 * b, b).copy_(batch.slots.reshape({b}));
  Tensor tables = h.narrow(0, 3 * b, b * table_width_).view({b, table_width_});
  if (w < table_width_) tables.narrow(1, w, table_width_ - w).zero_();
  tables.narrow(1, 0, w).copy_(batch.block_tables);
  e.packed.copy_(h, /*non_blocking=*/true);
  e.copied.record(cuda::current_stream());
}

std::optional<Tensor> DecodeGraphs::run(LlamaForCausalLMImpl& model, KvCache& cache,
                                        const ForwardBatch& batch) {
  if (!usable()) return std::nullopt;
  const int64_t b = batch.tokens.numel();
  RT_CHECK(batch.block_tables.size(1) <= table_width_, "DecodeGraphs: a block table of ",
           batch.block_tables.size(1), " blocks is wider than the ", table_width_, " captured");
  auto it = graphs_.find(b);
  if (it == graphs_.end()) {
    Entry e;
    const int64_t n = b * (3 + table_width_);
    e.staging = zeros({n}, TensorOptions().dtype(kLong));
    try {
      e.staging = pin_memory(e.staging);
    } catch (const std::exception&) {
    }  // (pageable: each copy then waits, as before)
    e.packed = zeros({n}, TensorOptions().dtype(kLong).device(device_));
    e.inputs = ForwardBatch{e.packed.narrow(0, 0, b),
                            e.packed.narrow(0, b, b),
                            on(arange(b, TensorOptions().dtype(kLong)), device_),
                            e.packed.narrow(0, 3 * b, b * table_width_).view({b, table_width_}),
                            e.packed.narrow(0, 2 * b, b),
                            Tensor(),
                            max_context_ - 1};
    stage(e, batch);
    if (!capture(model, cache, e)) {
      broken_ = true;
      return std::nullopt;
    }
    it = graphs_.emplace(b, std::move(e)).first;
  } else {
    stage(it->second, batch);
  }
  it->second.graph->replay();
  ++replays_;
  return it->second.logits;
}

}  // namespace retorch::llama
