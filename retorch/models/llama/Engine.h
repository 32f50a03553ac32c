// The generation engine: continuous batching of many sequences over one model and a paged cache.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "retorch/models/llama/DecodeGraphs.h"
#include "retorch/models/llama/KvCache.h"
#include "retorch/models/llama/Model.h"
#include "retorch/models/llama/Sampling.h"

namespace retorch::llama {

/// Sizes of the engine's cache and batches.
struct EngineOptions {
  int64_t block_size = 16;
  /// Cache blocks; 0 sizes the cache for max_context tokens of max_seqs sequences.
  int64_t num_blocks = 0;
  int64_t max_context = 2048;
  int64_t max_seqs = 8;
  /// Tokens per forward pass: prompts longer than this are prefilled in chunks.
  int64_t max_batch_tokens = 512;
  /// The cache's element type: float32, or bfloat16 for half the memory and decode reads.
  ScalarType kv_dtype = kFloat;
  /// Where the model runs and the cache lives: the engine moves the model there; tokens,
  /// positions and tables go there each step and logits come back for sampling on the cpu.
  Device device = Device(kCPU);
  /// On a cuda device, run decode steps through CUDA graphs, one per batch size (Note [Decode
  /// graphs]); false runs every step eagerly.
  bool cuda_graphs = true;
};

/// One token produced by step().
struct StepToken {
  int64_t seq_id = 0;
  int64_t token = 0;
  bool finished = false;
  std::string finish_reason;  // "stop" (eos or a stop token), "length", "abort"
};

/// Throughput counters since the engine was made.
struct EngineStats {
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  double prefill_seconds = 0;  // forward passes that contained prompt tokens
  double decode_seconds = 0;   // forward passes of decode tokens only
  int64_t forward_passes = 0;
  int64_t graph_replays = 0;  // decode passes replayed from a CUDA graph
};

// Note [Continuous batching]
// Every step() runs one forward pass over a batch gathered from all unfinished sequences: one
// token for each sequence that is decoding, and a chunk of the prompt of each sequence still
// prefilling, up to max_batch_tokens. Requests added between steps join the next one; a
// sequence whose prompt needs several chunks gets logits only when its last chunk runs.
// Finished sequences give their cache blocks back at once. A sequence that cannot get a block
// waits for a later step.
class Engine {
 public:
  Engine(LlamaForCausalLM model, const EngineOptions& options = {});
  /// Queues a prompt; returns its sequence id. Tokens arrive through step().
  int64_t add_request(const std::vector<int64_t>& prompt, const SamplingParams& params);
  /// Runs one forward pass; returns the tokens it produced (at most one per sequence).
  std::vector<StepToken> step();
  /// True while some sequence is unfinished.
  bool has_unfinished() const;
  /// Ends a sequence early (its blocks are freed).
  void abort(int64_t seq_id);
  /// Prompt plus generated tokens of a sequence (kept after it finishes, until release()).
  const std::vector<int64_t>& tokens(int64_t seq_id) const;
  /// Forgets a finished sequence.
  void release(int64_t seq_id);
  /// The text of a sequence's generated tokens, for stop strings (usually a tokenizer's decode).
  using Detokenizer = std::function<std::string(const std::vector<int64_t>& ids)>;
  /// Enables SamplingParams::stop_strings: a sequence stops once its generated text contains one.
  void set_detokenizer(Detokenizer fn) { detokenize_ = std::move(fn); }
  /// Logits [n, vocab] for every position of `ids`, run as one sequence (tests, perplexity).
  Tensor forward_all(const std::vector<int64_t>& ids);

  const LlamaForCausalLM& model() const { return model_; }
  const KvCache& cache() const { return cache_; }
  const EngineStats& stats() const { return stats_; }

 private:
  struct Sequence {
    std::vector<int64_t> tokens;
    int64_t prompt_len = 0;
    int64_t computed = 0;  // tokens whose keys and values are in the cache
    std::vector<int64_t> blocks;
    Sampler sampler;
    bool finished = false;
    int64_t order = 0;  // arrival, for first-come scheduling
  };
  void finish(Sequence& s, StepToken& out, const char* reason);
  bool hits_stop_string(const Sequence& s) const;

  LlamaForCausalLM model_;
  EngineOptions options_;
  KvCache cache_;
  std::map<int64_t, Sequence> seqs_;
  int64_t next_id_ = 0;
  EngineStats stats_;
  Detokenizer detokenize_;
  DecodeGraphs graphs_;  // after cache_: destroyed first
};

}  // namespace retorch::llama
