// The Llama runtime in C++ (and so under ASan/UBSan): the paged cache's block pool, continuous
// batching giving each sequence the tokens it gets alone, quantized models, and bad input.
#include <gtest/gtest.h>

#include "retorch/models/llama/Engine.h"
#include "retorch/retorch.h"

using namespace retorch;
using namespace retorch::llama;

namespace {

LlamaConfig tiny() {
  LlamaConfig c;
  c.vocab_size = 64;
  c.hidden_size = 64;
  c.intermediate_size = 96;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  return c;
}

std::vector<int64_t> run(Engine& e, const std::vector<int64_t>& prompt, int64_t n) {
  SamplingParams p;
  p.temperature = 0;
  p.ignore_eos = true;
  p.max_new_tokens = n;
  int64_t id = e.add_request(prompt, p);
  while (e.has_unfinished()) e.step();
  const std::vector<int64_t>& t = e.tokens(id);
  return {t.begin() + int64_t(prompt.size()), t.end()};
}

}  // namespace

TEST(LlamaCache, BlocksAreHandedOutAndReturned) {
  KvCache cache(tiny(), 4, 8);
  std::vector<int64_t> a, b;
  EXPECT_TRUE(cache.reserve(a, 9));  // two blocks
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(cache.slot(a, 9), a[1] * 8 + 1);
  EXPECT_TRUE(cache.reserve(b, 16));
  EXPECT_FALSE(cache.reserve(b, 17));  // no fifth block; the table is unchanged
  EXPECT_EQ(b.size(), 2u);
  EXPECT_THROW(cache.slot(b, 16), Error);
  cache.release(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(cache.num_free_blocks(), 2);
  EXPECT_TRUE(cache.reserve(b, 32));
}

TEST(LlamaEngine, BatchedSequencesMatchEachAlone) {
  // Dense, Q8_0, and Q4_0 (held as Q4_0x16: Note [Q4_0 in groups of 16 rows]).
  for (int64_t qtype : {int64_t(-1), int64_t(8), int64_t(2)}) {
    LlamaForCausalLM model = random_llama(tiny(), kFloat, qtype, 3);
    std::vector<std::vector<int64_t>> prompts = {{1, 5, 9}, {7}, {3, 4, 5, 6, 7, 8, 9, 10, 11}};
    std::vector<std::vector<int64_t>> alone;
    for (const auto& p : prompts) {
      Engine e(model, EngineOptions{4, 0, 64, 1, 512});
      alone.push_back(run(e, p, 6));
    }
    // Blocks of 2 tokens and 4 tokens per pass: prompts are prefilled in chunks beside decodes.
    Engine e(model, EngineOptions{2, 0, 64, 4, 4});
    SamplingParams p;
    p.temperature = 0;
    p.ignore_eos = true;
    p.max_new_tokens = 6;
    std::vector<int64_t> ids;
    for (const auto& pr : prompts) ids.push_back(e.add_request(pr, p));
    int64_t steps = 0;
    while (e.has_unfinished()) {
      e.step();
      ++steps;
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::vector<int64_t>& t = e.tokens(ids[i]);
      EXPECT_EQ(std::vector<int64_t>(t.begin() + int64_t(prompts[i].size()), t.end()), alone[i])
          << "qtype " << qtype << " prompt " << i;
    }
    EXPECT_GT(steps, 6);  // the long prompt needed several passes
    EXPECT_EQ(e.cache().num_free_blocks(), e.cache().num_blocks());
  }
}

TEST(LlamaEngine, SeededSamplingRepeats) {
  LlamaForCausalLM model = random_llama(tiny(), kFloat, -1, 4);
  auto sample = [&](uint64_t seed) {
    Engine e(model);
    SamplingParams p;
    p.temperature = 1.0;
    p.top_p = 0.9;
    p.seed = seed;
    p.ignore_eos = true;
    p.max_new_tokens = 12;
    int64_t id = e.add_request({1, 2, 3}, p);
    while (e.has_unfinished()) e.step();
    return e.tokens(id);
  };
  EXPECT_EQ(sample(11), sample(11));
  EXPECT_NE(sample(11), sample(12));
}

TEST(LlamaKernels, BadInputRaises) {
  Tensor q = randn({2, 4, 8});
  Tensor kc = zeros({3, 4, 2, 8}), vc = zeros({3, 4, 2, 8});
  Tensor table = tensor({{0, 5}});
  Tensor seq = tensor({0, 0}), pos = tensor({0, 5});
  EXPECT_THROW(paged_attention(q, kc, vc, table, seq, pos, 1.0, -1), Error);  // block 5 of 3
  EXPECT_THROW(paged_attention(q, kc, vc, tensor({{0, 1}}), seq, tensor({0, 8}), 1.0, -1),
               Error);  // position 8 needs a third block
  EXPECT_THROW(rotary_embedding(q, tensor({0, 9}), zeros({4, 8}), false), Error);
  EXPECT_THROW(silu_and_mul(zeros({2, 3})), Error);
  EXPECT_THROW(fused_rms_norm(zeros({2, 8}), std::nullopt, zeros({4}), 1e-5), Error);
  EXPECT_THROW(LlamaConfig::from_hf_json_text("{\"num_attention_heads\": 3, "
                                              "\"num_key_value_heads\": 2}", "cfg"),
               Error);
  EXPECT_THROW(LlamaConfig::from_hf_json_text("[1]", "cfg"), Error);
}

// The tiled prefill path (Note [Attention tiles]) and the per-token path (Note [Decode
// attention]) over float32 and bfloat16 caches agree, including a sliding window and head
// dims with a masked tail; also what the ASan build runs of those kernels (torch checks the
// values in tests/python/test_ops_llm.py).
TEST(LlamaKernels, AttentionTilesMatchTokenByToken) {
  manual_seed(3);
  const int64_t Hq = 4, Hkv = 2, BS = 8, L = 150, NB = (L + BS - 1) / BS;
  for (int64_t D : {16, 24}) {
    for (int64_t window : {-1, 37}) {
      Tensor kc = randn({NB, BS, Hkv, D}), vc = randn({NB, BS, Hkv, D});
      std::vector<int64_t> blocks(static_cast<size_t>(NB));
      for (int64_t b = 0; b < NB; ++b) blocks[size_t(b)] = (b * 7) % NB;  // scattered
      Tensor table = tensor(blocks).view({1, NB});
      Tensor q = randn({L, Hq, D});
      Tensor seq = zeros({L}, TensorOptions().dtype(kLong)), pos = arange(L);
      for (ScalarType dt : {kFloat, kBFloat16}) {
        Tensor k = kc.to(dt), v = vc.to(dt);
        Tensor all = paged_attention(q, k, v, table, seq, pos, 0.25, window);  // tiles
        for (int64_t t : {int64_t(0), int64_t(63), int64_t(64), int64_t(149)}) {
          Tensor one = paged_attention(q.narrow(0, t, 1), k, v, table, seq.narrow(0, t, 1),
                                       pos.narrow(0, t, 1), 0.25, window);  // token by token
          EXPECT_TRUE(allclose(all.narrow(0, t, 1), one, 1e-5, 1e-6))
              << "D " << D << " window " << window << " dtype " << dt << " token " << t;
        }
      }
    }
  }
}
