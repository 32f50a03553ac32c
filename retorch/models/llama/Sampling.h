// Token sampling for generation: greedy, temperature, top-k, top-p, min-p, repetition penalty.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "retorch/core/Generator.h"
#include "retorch/core/Tensor.h"

namespace retorch::llama {

/// How one sequence picks its next tokens and when it stops (HF generate's meanings).
struct SamplingParams {
  double temperature = 1.0;          // 0: greedy (argmax)
  int64_t top_k = 0;                 // 0: off
  double top_p = 1.0;                // 1: off
  double min_p = 0.0;                // 0: off
  double repetition_penalty = 1.0;   // 1: off; applied to every token of prompt and output
  int64_t max_new_tokens = 128;
  std::vector<int64_t> stop_token_ids;  // besides the model's eos ids
  std::vector<std::string> stop_strings;  // checked on the decoded text by the caller
  bool ignore_eos = false;
  uint64_t seed = 0;                 // the same seed gives the same tokens
};

/// Picks tokens for one sequence; owns that sequence's random generator.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  /// The next token from a row of logits, given the tokens so far (prompt + output).
  int64_t sample(const float* logits, int64_t vocab, const std::vector<int64_t>& history);
  /// The logits after penalty, temperature and the top-k/top-p/min-p filters (-inf where a
  /// token is filtered out), in HF's order: what sample() draws from through a softmax.
  std::vector<float> process(const float* logits, int64_t vocab,
                             const std::vector<int64_t>& history) const;
  const SamplingParams& params() const { return params_; }
  /// The uniform number in [0, 1) sample() draws for its next token (temperature > 0): the
  /// generator's next double, so a caller drawing the token itself keeps the seed's sequence.
  double uniform();

 private:
  SamplingParams params_;
  Generator gen_;
};

/// The next token of each row of `logits` ([rows, vocab] float32, on any device) for
/// samplers[i] given histories[i]: what samplers[i]->sample() returns for that row, computed
/// with tensor ops where the logits are (Note [Sampling where the logits are]), so that only a
/// token a row comes back to the host.
std::vector<int64_t> sample_rows(const Tensor& logits, const std::vector<Sampler*>& samplers,
                                 const std::vector<const std::vector<int64_t>*>& histories);

}  // namespace retorch::llama
