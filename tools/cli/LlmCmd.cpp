// `retorch generate` and `retorch bench-llm`: the Llama runtime from the command line.
#include "tools/cli/LlmCmd.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <vector>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/models/llama/Engine.h"
#include "retorch/models/llama/TokenizerLoader.h"
#include "retorch/retorch.h"

namespace retorch::cli {
namespace {

using namespace retorch::llama;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

ScalarType parse_dtype(const std::string& s) {
  if (s == "float32" || s == "f32") return kFloat;
  if (s == "bfloat16" || s == "bf16") return kBFloat16;
  if (s == "float16" || s == "f16") return kHalf;
  RT_CHECK_VALUE(false, "unknown dtype '", s, "' (float32, bfloat16, float16)");
  return kFloat;
}

// Llama shapes of the two sizes: TinyStories-110M-like and TinyLlama-1.1B.
LlamaConfig preset(const std::string& name) {
  LlamaConfig c;
  c.vocab_size = 32000;
  c.max_position_embeddings = 2048;
  c.eos_token_ids = {2};
  if (name == "110m") {
    c.hidden_size = 768, c.intermediate_size = 2048, c.num_layers = 12;
    c.num_heads = 12, c.num_kv_heads = 12, c.head_dim = 64;
    c.tie_word_embeddings = true;  // llama2.c's stories110M shares them
  } else if (name == "1b") {
    c.hidden_size = 2048, c.intermediate_size = 5632, c.num_layers = 22;
    c.num_heads = 32, c.num_kv_heads = 4, c.head_dim = 64;
  } else {
    RT_CHECK_VALUE(false, "bench-llm: '", name,
                   "' is neither a checkpoint (directory or .gguf) nor a preset (110m, 1b)");
  }
  return c;
}

// Bytes per second of a parallel copy of 256 MB (read + write), pre-faulted: the memory limit
// a decode step (which streams every weight once) is measured against.
double copy_bandwidth() {
  size_t n = size_t(64) << 20;
  std::vector<float> a(n, 1.f), b(n, 0.f);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    parallel_for(0, int64_t(n), 1 << 20, [&](int64_t lo, int64_t hi) {
      std::memcpy(b.data() + lo, a.data() + lo, size_t(hi - lo) * sizeof(float));
    });
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * double(n) * 4 / best;
}

double gemm_peak() {
  Tensor a = randn({2048, 2048}), b = randn({2048, 2048});
  mm(a, b);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    mm(a, b);
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * 2048.0 * 2048.0 * 2048.0 / best;
}

// The same two limits on a device with its own memory (cuda): a device-to-device copy of 1 GB
// and 8192^3 products in the weights' dtype, each timed to the device's completion.
double best_device_seconds(Device device, const std::function<void()>& f) {
  f();
  device_api::synchronize(device.type, -1);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    f();
    device_api::synchronize(device.type, -1);
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

double device_copy_bandwidth(Device device) {
  const int64_t n = int64_t(256) << 20;
  Tensor a = zeros({n}, TensorOptions(kFloat).device(device)), b = empty_like(a);
  return 2.0 * double(n) * 4 / best_device_seconds(device, [&] { b.copy_(a); });
}

double device_gemm_peak(Device device, ScalarType dtype) {
  const int64_t n = 8192;
  Tensor a = randn({n, n}).to(dtype).to(device), b = a.clone();
  return 2.0 * double(n) * double(n) * double(n) / best_device_seconds(device, [&] { mm(a, b); });
}

}  // namespace

int run_generate(const GenerateConfig& c) {
  auto t0 = Clock::now();
  LlamaForCausalLM model = load_llama(c.model, LoadOptions{parse_dtype(c.dtype)});
  Tokenizer tok = load_tokenizer(c.model);
  std::fprintf(stderr, "loaded %s in %.2f s\n", c.model.c_str(), seconds_since(t0));
  std::string text = c.prompt;
  if (c.chat) {
    std::vector<ChatMessage> msgs;
    if (!c.system.empty()) msgs.push_back({"system", c.system});
    msgs.push_back({"user", c.prompt});
    text = tok.apply_chat_template(msgs, /*add_generation_prompt=*/true);
  }
  // A chat template already writes the BOS token as text.
  std::vector<int32_t> ids32 = tok.encode(text, /*add_special_tokens=*/!c.chat);
  std::vector<int64_t> prompt(ids32.begin(), ids32.end());
  SamplingParams sp;
  sp.temperature = c.temperature;
  sp.top_k = c.top_k;
  sp.top_p = c.top_p;
  sp.min_p = c.min_p;
  sp.repetition_penalty = c.repetition_penalty;
  sp.max_new_tokens = c.max_new_tokens;
  sp.seed = c.seed;
  for (int32_t id : tok.stop_ids()) sp.stop_token_ids.push_back(id);
  sp.stop_strings = c.stop;
  EngineOptions o;
  o.kv_dtype = c.kv_dtype == "bfloat16" ? kBFloat16 : kFloat;
  o.device = Device(c.device);
  o.cuda_graphs = !c.eager;
  o.max_seqs = 1;
  o.max_context = int64_t(prompt.size()) + c.max_new_tokens + 1;
  Engine engine(model, o);
  engine.set_detokenizer([&tok](const std::vector<int64_t>& ids) {
    return tok.decode(std::vector<int32_t>(ids.begin(), ids.end()), true);
  });
  engine.add_request(prompt, sp);
  StreamDecoder stream(tok, /*skip_special_tokens=*/true, ids32);
  if (!c.chat) std::cout << c.prompt << std::flush;
  while (engine.has_unfinished()) {
    for (const StepToken& t : engine.step()) std::cout << stream.put(int32_t(t.token)) << std::flush;
  }
  std::cout << stream.flush() << std::endl;
  const EngineStats& s = engine.stats();
  std::fprintf(stderr, "prefill: %lld tokens, %.1f tokens/s | decode: %lld tokens, %.2f tokens/s\n",
               static_cast<long long>(s.prefill_tokens),
               double(s.prefill_tokens) / std::max(s.prefill_seconds, 1e-9),
               static_cast<long long>(s.decode_tokens),
               double(s.decode_tokens) / std::max(s.decode_seconds, 1e-9));
  return 0;
}

int run_bench_llm(const BenchLlmConfig& c) {
  RT_CHECK_VALUE(c.batch > 0 && c.prompt_len > 0 && c.gen_len > 0,
                 "bench-llm: --batch, --prompt-len and --gen-len must be positive");
  bool is_file = std::filesystem::exists(c.model);
  auto t0 = Clock::now();
  LlamaForCausalLM model = nullptr;
  std::string what;
  if (is_file) {
    model = load_llama(c.model);
    what = c.model;
  } else {
    ScalarType dtype = kFloat;
    int64_t qtype = -1;
    if (c.format == "bf16") dtype = kBFloat16;
    else if (c.format == "q8_0") qtype = 8;
    else if (c.format == "q4_0") qtype = 2;
    else RT_CHECK_VALUE(c.format == "f32", "bench-llm: --format must be f32, bf16, q8_0 or q4_0");
    model = random_llama(preset(c.model), dtype, qtype, 0);
    what = c.model + " " + c.format + " (random weights)";
  }
  const LlamaConfig& cfg = model->config();
  std::printf("model %s: %.1fM parameters, %.1f MB of weights read per token, loaded in %.2f s\n",
              what.c_str(), double(cfg.num_parameters()) / 1e6,
              double(model->weight_bytes_per_token()) / 1e6, seconds_since(t0));
  EngineOptions o;
  o.kv_dtype = c.kv_dtype == "bfloat16" ? kBFloat16 : kFloat;
  o.device = Device(c.device);
  o.cuda_graphs = !c.eager;
  o.max_seqs = c.batch;
  o.max_context = c.prompt_len + c.gen_len + 1;
  o.max_batch_tokens = c.batch * c.prompt_len;
  Engine engine(model, o);
  Generator gen(1);
  Tensor ids = randint(3, cfg.vocab_size, {c.batch, c.prompt_len}, gen);
  SamplingParams sp;
  sp.temperature = c.temperature;
  sp.top_p = c.top_p;
  sp.ignore_eos = true;
  sp.max_new_tokens = c.gen_len;
  for (int64_t b = 0; b < c.batch; ++b) {
    Tensor row = ids.select(0, b).contiguous();
    const int64_t* p = row.data_ptr<int64_t>();
    sp.seed = uint64_t(b);
    engine.add_request(std::vector<int64_t>(p, p + c.prompt_len), sp);
  }
  while (engine.has_unfinished()) engine.step();
  const EngineStats& s = engine.stats();
  const Device device(c.device);
  const bool own_memory = device_available(device.type) && !device.is_cpu();
  double bw = own_memory ? device_copy_bandwidth(device) : copy_bandwidth();
  const ScalarType gemm_dtype = c.format == "bf16" ? kBFloat16 : kFloat;
  double peak = own_memory ? device_gemm_peak(device, gemm_dtype) : gemm_peak();
  double prefill_tps = double(s.prefill_tokens) / s.prefill_seconds;
  double decode_steps_per_s = double(s.decode_tokens) / double(c.batch) / s.decode_seconds;
  double bound = bw / double(model->weight_bytes_per_token());  // steps/s if weights stream once
  // Matmul FLOPs per token: 2 per weight of every projection and the head (attention over the
  // prompt adds a little more, not counted).
  double flops_per_token =
      2.0 * double(cfg.num_parameters() - cfg.vocab_size * cfg.hidden_size *
                                              (cfg.tie_word_embeddings ? 0 : 1));
  std::printf("%s | copy bandwidth %.1f GB/s | GEMM peak %.1f GFLOP/s | KV cache %s\n",
              own_memory ? device.str().c_str()
                         : ("threads " + std::to_string(get_num_threads())).c_str(),
              bw / 1e9, peak / 1e9, c.kv_dtype.c_str());
  std::printf("prefill: %lld x %lld tokens, %.1f tokens/s, %.1f GFLOP/s (%.0f%% of GEMM peak)\n",
              static_cast<long long>(c.batch), static_cast<long long>(c.prompt_len), prefill_tps,
              prefill_tps * flops_per_token / 1e9, 100.0 * prefill_tps * flops_per_token / peak);
  std::printf("decode:  batch %lld, %.2f tokens/s (%.2f steps/s; bandwidth bound %.2f steps/s, "
              "%.0f%% of it)\n",
              static_cast<long long>(c.batch), decode_steps_per_s * double(c.batch),
              decode_steps_per_s, bound, 100.0 * decode_steps_per_s / bound);
  return 0;
}

}  // namespace retorch::cli
