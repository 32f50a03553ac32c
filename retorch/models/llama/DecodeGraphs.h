// CUDA graphs of the engine's decode steps: one per batch size, captured on first use and
// replayed (Note [Decode graphs]).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "retorch/device/CudaGraph.h"
#include "retorch/models/llama/KvCache.h"
#include "retorch/models/llama/Model.h"

namespace retorch::llama {

class DecodeGraphs {
 public:
  /// Graphs for decode batches on `device` whose block tables are at most `table_width` wide and
  /// positions below `max_context`.
  DecodeGraphs(Device device, int64_t table_width, int64_t max_context);
  /// Whether decode batches go through graphs: a cuda device with the CUDA backend, and no
  /// capture has failed.
  bool usable() const;
  /// The logits [B, vocab] of a decode batch (one token per sequence, host tensors) through the
  /// graph of its size, captured now if new; nullopt when a capture fails (graphs then stay off
  /// and the engine runs eagerly).
  std::optional<Tensor> run(LlamaForCausalLMImpl& model, KvCache& cache, const ForwardBatch& batch);
  /// Replays so far.
  int64_t replays() const { return replays_; }

 private:
  struct Entry {
    ForwardBatch inputs;  // the device tensors the graph reads: views of `packed`
    Tensor packed;        // tokens, positions, slots, block tables: [b * (3 + width)] int64
    Tensor staging;       // packed's host side (pinned where the device allows)
    Event copied;         // the last copy of staging into packed
    Tensor logits;        // what the graph writes
    std::unique_ptr<cuda::CUDAGraph> graph;
  };
  // Fills e.staging with the batch's inputs (block tables padded with zeros) and queues one
  // copy of it into e.packed that the host does not wait for.
  void stage(Entry& e, const ForwardBatch& batch);
  bool capture(LlamaForCausalLMImpl& model, KvCache& cache, Entry& e);

  Device device_;
  int64_t table_width_, max_context_;
  std::map<int64_t, Entry> graphs_;
  bool broken_ = false;
  int64_t replays_ = 0;
};

}  // namespace retorch::llama
