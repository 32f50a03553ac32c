// The generation engine's scheduler (see Note [Continuous batching]).
#include "retorch/models/llama/Engine.h"

#include <algorithm>
#include <chrono>

#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"

namespace retorch::llama {
namespace {

int64_t blocks_for(const EngineOptions& o) {
  if (o.num_blocks > 0) return o.num_blocks;
  return (o.max_context + o.block_size - 1) / o.block_size * std::max<int64_t>(1, o.max_seqs);
}

// The batch's index tensors on the engine's device.
ForwardBatch on_device(ForwardBatch b, Device d) {
  if (d.is_cpu()) return b;
  for (Tensor* t : {&b.tokens, &b.positions, &b.query_seq, &b.block_tables, &b.slots,
                    &b.logit_rows})
    if (t->defined()) *t = t->to(d, t->dtype());
  return b;
}

Tensor long_tensor(const std::vector<int64_t>& v) {
  Tensor t = empty({int64_t(v.size())}, TensorOptions().dtype(kLong));
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t;
}

// [rows, width] int64, each table padded with zeros (padding is never read: see
// Note [Paged attention]).
Tensor table_tensor(const std::vector<const std::vector<int64_t>*>& tables) {
  size_t width = 1;
  for (const auto* t : tables) width = std::max(width, t->size());
  Tensor out = zeros({int64_t(tables.size()), int64_t(width)}, TensorOptions().dtype(kLong));
  int64_t* p = out.data_ptr<int64_t>();
  for (size_t r = 0; r < tables.size(); ++r)
    std::copy(tables[r]->begin(), tables[r]->end(), p + r * width);
  return out;
}

}  // namespace

Engine::Engine(LlamaForCausalLM model, const EngineOptions& options)
    : model_(std::move(model)),
      options_(options),
      cache_(model_->config(), blocks_for(options), options.block_size, options.kv_dtype,
             options.device),
      graphs_(options.device, (options.max_context + options.block_size - 1) / options.block_size,
              options.max_context) {
  RT_CHECK_VALUE(options.max_batch_tokens > 0 && options.max_context > 0,
                 "Engine: max_batch_tokens (", options.max_batch_tokens, ") and max_context (",
                 options.max_context, ") must be positive");
  model_->to(options.device);
}

int64_t Engine::add_request(const std::vector<int64_t>& prompt, const SamplingParams& params) {
  int64_t vocab = model_->config().vocab_size;
  RT_CHECK_VALUE(!prompt.empty(), "Engine.add_request: the prompt has no tokens");
  RT_CHECK_VALUE(int64_t(prompt.size()) < options_.max_context, "Engine.add_request: a prompt of ",
                 prompt.size(), " tokens does not fit the context of ", options_.max_context);
  for (int64_t t : prompt)
    RT_CHECK_INDEX(t >= 0 && t < vocab, "Engine.add_request: token id ", t,
                   " is outside the vocabulary of ", vocab);
  RT_CHECK_VALUE(params.stop_strings.empty() || detokenize_, "Engine.add_request: stop strings "
                 "need the engine to decode tokens (Engine::set_detokenizer, or a tokenizer)");
  int64_t id = next_id_++;
  Sequence s{prompt, int64_t(prompt.size()), 0, {}, Sampler(params), false, id};
  seqs_.emplace(id, std::move(s));
  return id;
}

bool Engine::has_unfinished() const {
  for (const auto& [id, s] : seqs_)
    if (!s.finished) return true;
  return false;
}

bool Engine::hits_stop_string(const Sequence& s) const {
  const std::vector<std::string>& stops = s.sampler.params().stop_strings;
  if (stops.empty()) return false;
  // The whole generated text is decoded each step: exact across token boundaries (a stop
  // string may span tokens), and cheap next to a forward pass.
  std::string text = detokenize_(std::vector<int64_t>(s.tokens.begin() + s.prompt_len,
                                                      s.tokens.end()));
  for (const std::string& stop : stops)
    if (!stop.empty() && text.find(stop) != std::string::npos) return true;
  return false;
}

void Engine::finish(Sequence& s, StepToken& out, const char* reason) {
  s.finished = true;
  cache_.release(s.blocks);
  out.finished = true;
  out.finish_reason = reason;
}

void Engine::abort(int64_t seq_id) {
  auto it = seqs_.find(seq_id);
  RT_CHECK_INDEX(it != seqs_.end(), "Engine.abort: no sequence ", seq_id);
  it->second.finished = true;
  cache_.release(it->second.blocks);
}

const std::vector<int64_t>& Engine::tokens(int64_t seq_id) const {
  auto it = seqs_.find(seq_id);
  RT_CHECK_INDEX(it != seqs_.end(), "Engine.tokens: no sequence ", seq_id);
  return it->second.tokens;
}

void Engine::release(int64_t seq_id) {
  auto it = seqs_.find(seq_id);
  RT_CHECK_INDEX(it != seqs_.end(), "Engine.release: no sequence ", seq_id);
  cache_.release(it->second.blocks);
  seqs_.erase(it);
}

std::vector<StepToken> Engine::step() {
  // Decoding sequences first (one token each, cheap, latency-bound), then prompts by arrival.
  std::vector<Sequence*> order;
  for (auto& [id, s] : seqs_)
    if (!s.finished) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const Sequence* a, const Sequence* b) {
    bool da = a->computed >= a->prompt_len, db = b->computed >= b->prompt_len;
    return da != db ? da : a->order < b->order;
  });
  std::vector<Sequence*> batch;
  std::vector<int64_t> chunk;
  int64_t budget = options_.max_batch_tokens;
  bool has_prompt = false;
  for (Sequence* s : order) {
    if (int64_t(batch.size()) >= options_.max_seqs || budget <= 0) break;
    int64_t n = std::min<int64_t>(int64_t(s->tokens.size()) - s->computed, budget);
    if (n <= 0 || !cache_.reserve(s->blocks, s->computed + n)) continue;
    batch.push_back(s);
    chunk.push_back(n);
    budget -= n;
    has_prompt = has_prompt || s->computed < s->prompt_len;
  }
  if (batch.empty()) {
    RT_CHECK(!has_unfinished(), "Engine.step: the KV cache (", cache_.num_blocks(),
             " blocks of ", cache_.block_size(), " tokens, ", cache_.num_free_blocks(),
             " free) cannot hold the next token of any unfinished sequence");
    return {};
  }
  std::vector<int64_t> tokens, positions, query_seq, slots, logit_rows;
  std::vector<const std::vector<int64_t>*> tables, histories;
  std::vector<Sampler*> samplers;  // of the rows of logits, in order
  for (size_t i = 0; i < batch.size(); ++i) {
    Sequence& s = *batch[i];
    for (int64_t p = s.computed; p < s.computed + chunk[i]; ++p) {
      tokens.push_back(s.tokens[size_t(p)]);
      positions.push_back(p);
      query_seq.push_back(int64_t(i));
      slots.push_back(cache_.slot(s.blocks, p));
    }
    if (s.computed + chunk[i] == int64_t(s.tokens.size())) {
      logit_rows.push_back(int64_t(tokens.size()) - 1);
      samplers.push_back(&s.sampler);
      histories.push_back(&s.tokens);
    }
    tables.push_back(&s.blocks);
  }
  ForwardBatch fb{long_tensor(tokens), long_tensor(positions), long_tensor(query_seq),
                  table_tensor(tables), long_tensor(slots), long_tensor(logit_rows),
                  positions.empty() ? 0 : *std::max_element(positions.begin(), positions.end())};
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Tensor> graphed;  // decode batches on cuda: Note [Decode graphs]
  if (!has_prompt && options_.cuda_graphs && graphs_.usable())
    graphed = graphs_.run(*model_, cache_, fb);
  if (graphed) ++stats_.graph_replays;
  Tensor logits = graphed ? *graphed
                          : model_->forward(on_device(std::move(fb), options_.device), cache_);
  // Each row's token is drawn where its logits are (Note [Sampling where the logits are]): on a
  // device the host gets a token a row instead of 128 KB of logits for a 32k vocabulary, and on
  // the cpu the tensor path beats the host sampler a row at a time (bench/bench_sampling.py).
  const std::vector<int64_t> ids = sample_rows(logits.to(kFloat), samplers, histories);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++stats_.forward_passes;
  (has_prompt ? stats_.prefill_seconds : stats_.decode_seconds) += secs;

  std::vector<StepToken> out;
  int64_t row = 0;
  const std::vector<int64_t>& eos = model_->config().eos_token_ids;
  for (size_t i = 0; i < batch.size(); ++i) {
    Sequence& s = *batch[i];
    bool prompt_chunk = s.computed < s.prompt_len;
    (prompt_chunk ? stats_.prefill_tokens : stats_.decode_tokens) += chunk[i];
    s.computed += chunk[i];
    if (s.computed < int64_t(s.tokens.size())) continue;  // more prompt chunks to go
    StepToken t;
    t.seq_id = s.order;
    t.token = ids[size_t(row++)];
    s.tokens.push_back(t.token);
    const SamplingParams& p = s.sampler.params();
    auto in = [&](const std::vector<int64_t>& v) {
      return std::find(v.begin(), v.end(), t.token) != v.end();
    };
    if ((!p.ignore_eos && in(eos)) || in(p.stop_token_ids) || hits_stop_string(s)) {
      finish(s, t, "stop");
    } else if (int64_t(s.tokens.size()) - s.prompt_len >= p.max_new_tokens ||
               int64_t(s.tokens.size()) >= options_.max_context) {
      finish(s, t, "length");
    }
    out.push_back(t);
  }
  return out;
}

Tensor Engine::forward_all(const std::vector<int64_t>& ids) {
  RT_CHECK_VALUE(!ids.empty(), "Engine.forward_all: no tokens");
  int64_t vocab = model_->config().vocab_size;
  for (int64_t t : ids)
    RT_CHECK_INDEX(t >= 0 && t < vocab, "Engine.forward_all: token id ", t,
                   " is outside the vocabulary of ", vocab);
  std::vector<int64_t> blocks;
  RT_CHECK(cache_.reserve(blocks, int64_t(ids.size())), "Engine.forward_all: ", ids.size(),
           " tokens need more than the ", cache_.num_free_blocks(), " free cache blocks");
  std::vector<int64_t> positions, seq(ids.size(), 0), slots;
  for (int64_t p = 0; p < int64_t(ids.size()); ++p) {
    positions.push_back(p);
    slots.push_back(cache_.slot(blocks, p));
  }
  ForwardBatch fb{long_tensor(ids), long_tensor(positions), long_tensor(seq),
                  table_tensor({&blocks}), long_tensor(slots), Tensor(),
                  int64_t(ids.size()) - 1};
  Tensor logits;
  try {
    logits = model_->forward(on_device(std::move(fb), options_.device), cache_);
  } catch (...) {
    cache_.release(blocks);
    throw;
  }
  cache_.release(blocks);
  return logits;
}

}  // namespace retorch::llama
