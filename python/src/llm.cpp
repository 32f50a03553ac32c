// Python bindings of the Llama runtime (_C._llm): models, the engine, sampling (see retorch/llm).
#include "bindings.h"
#include "retorch/models/llama/Engine.h"
#include "retorch/models/llama/Model.h"
#include "retorch/models/llama/Sampling.h"
#include "retorch/models/llama/TokenizerLoader.h"

namespace retorch::python {
namespace {

using namespace retorch::llama;

py::dict config_dict(const LlamaConfig& c) {
  py::dict d;
  d["model_type"] = c.model_type;
  d["vocab_size"] = c.vocab_size;
  d["hidden_size"] = c.hidden_size;
  d["intermediate_size"] = c.intermediate_size;
  d["num_hidden_layers"] = c.num_layers;
  d["num_attention_heads"] = c.num_heads;
  d["num_key_value_heads"] = c.num_kv_heads;
  d["head_dim"] = c.head_dim;
  d["rms_norm_eps"] = c.rms_norm_eps;
  d["rope_theta"] = c.rope_theta;
  d["max_position_embeddings"] = c.max_position_embeddings;
  d["tie_word_embeddings"] = c.tie_word_embeddings;
  d["sliding_window"] = c.sliding_window;
  d["bos_token_id"] = c.bos_token_id;
  d["eos_token_id"] = c.eos_token_ids;
  return d;
}

// A config from a dict with HF config.json keys (through the same parser as the files).
LlamaConfig config_from_dict(const py::dict& d) {
  py::module_ json = py::module_::import("json");
  return LlamaConfig::from_hf_json_text(py::str(json.attr("dumps")(d)), "<dict>");
}

SamplingParams sampling_params(double temperature, int64_t top_k, double top_p, double min_p,
                               double repetition_penalty, int64_t max_new_tokens,
                               std::vector<int64_t> stop_token_ids, bool ignore_eos,
                               uint64_t seed, std::vector<std::string> stop_strings = {}) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repetition_penalty = repetition_penalty;
  p.max_new_tokens = max_new_tokens;
  p.stop_token_ids = std::move(stop_token_ids);
  p.ignore_eos = ignore_eos;
  p.seed = seed;
  p.stop_strings = std::move(stop_strings);
  return p;
}

#define SAMPLING_ARGS                                                                       \
  py::arg("temperature") = 1.0, py::arg("top_k") = 0, py::arg("top_p") = 1.0,               \
      py::arg("min_p") = 0.0, py::arg("repetition_penalty") = 1.0,                          \
      py::arg("max_new_tokens") = 128, py::arg("stop_token_ids") = std::vector<int64_t>{}, \
      py::arg("ignore_eos") = false, py::arg("seed") = 0

}  // namespace

void bind_llm(py::module_& m) {
  py::module_ l = m.def_submodule("_llm", "the Llama runtime behind retorch.llm");
  py::class_<LlamaForCausalLMImpl, std::shared_ptr<LlamaForCausalLMImpl>>(l, "LlamaForCausalLM")
      .def_property_readonly("config",
                             [](const LlamaForCausalLMImpl& mdl) { return config_dict(mdl.config()); })
      .def("weight_bytes_per_token", &LlamaForCausalLMImpl::weight_bytes_per_token)
      .def("state_dict", [](const LlamaForCausalLMImpl& mdl) {
        py::dict d;
        for (const auto& item : mdl.state_dict()) d[py::str(item.key)] = item.value;
        return d;
      });
  l.def(
      "load",
      [](const std::string& path, ScalarType dtype) {
        py::gil_scoped_release no_gil;
        return load_llama(path, LoadOptions{dtype}).ptr();
      },
      py::arg("path"), py::arg("dtype") = kFloat);
  l.def(
      "random",
      [](const py::dict& config, ScalarType dtype, int64_t qtype, uint64_t seed) {
        LlamaConfig c = config_from_dict(config);
        py::gil_scoped_release no_gil;
        return random_llama(c, dtype, qtype, seed).ptr();
      },
      py::arg("config"), py::arg("dtype") = kFloat, py::arg("qtype") = -1, py::arg("seed") = 0);

  l.def(
      "load_tokenizer", [](const std::string& path) { return load_tokenizer(path); },
      py::arg("path"), "the tokenizer of a HF directory (tokenizer.json) or a .gguf file");

  py::class_<Engine>(l, "Engine")
      .def(py::init([](std::shared_ptr<LlamaForCausalLMImpl> model, int64_t block_size,
                       int64_t num_blocks, int64_t max_context, int64_t max_seqs,
                       int64_t max_batch_tokens, ScalarType kv_dtype, py::object device,
                       bool cuda_graphs) {
             EngineOptions o{block_size, num_blocks, max_context, max_seqs, max_batch_tokens,
                             kv_dtype, optional_device(device).value_or(Device(kCPU)),
                             cuda_graphs};
             return std::make_unique<Engine>(LlamaForCausalLM(std::move(model)), o);
           }),
           py::arg("model"), py::arg("block_size") = 16, py::arg("num_blocks") = 0,
           py::arg("max_context") = 2048, py::arg("max_seqs") = 8,
           py::arg("max_batch_tokens") = 512, py::arg("kv_dtype") = kFloat,
           py::arg("device") = py::none(), py::arg("cuda_graphs") = true)
      .def(
          "add_request",
          [](Engine& e, const std::vector<int64_t>& prompt, double temperature, int64_t top_k,
             double top_p, double min_p, double repetition_penalty, int64_t max_new_tokens,
             std::vector<int64_t> stop_token_ids, bool ignore_eos, uint64_t seed,
             std::vector<std::string> stop_strings) {
            return e.add_request(prompt, sampling_params(temperature, top_k, top_p, min_p,
                                                         repetition_penalty, max_new_tokens,
                                                         std::move(stop_token_ids), ignore_eos,
                                                         seed, std::move(stop_strings)));
          },
          py::arg("prompt"), SAMPLING_ARGS, py::arg("stop_strings") = std::vector<std::string>{})
      .def(
          "set_tokenizer",
          [](Engine& e, const Tokenizer& tok) {
            e.set_detokenizer([tok](const std::vector<int64_t>& ids) {
              return tok.decode(std::vector<int32_t>(ids.begin(), ids.end()), true);
            });
          },
          py::arg("tokenizer"), "decode with this tokenizer for stop strings")
      .def("step",
           [](Engine& e) {
             std::vector<StepToken> out;
             {
               py::gil_scoped_release no_gil;
               out = e.step();
             }
             py::list res;
             for (const StepToken& t : out)
               res.append(py::make_tuple(t.seq_id, t.token, t.finished, t.finish_reason));
             return res;
           })
      .def("has_unfinished", &Engine::has_unfinished)
      .def("abort", &Engine::abort)
      .def("release", &Engine::release)
      .def("tokens", &Engine::tokens)
      .def("num_free_blocks", [](const Engine& e) { return e.cache().num_free_blocks(); })
      .def("cache_bytes", [](const Engine& e) { return e.cache().bytes(); },
           "bytes held by the KV cache's keys and values")
      .def("forward_all",
           [](Engine& e, const std::vector<int64_t>& ids) {
             py::gil_scoped_release no_gil;
             return e.forward_all(ids);
           })
      .def("stats", [](const Engine& e) {
        const EngineStats& s = e.stats();
        py::dict d;
        d["prefill_tokens"] = s.prefill_tokens;
        d["decode_tokens"] = s.decode_tokens;
        d["prefill_seconds"] = s.prefill_seconds;
        d["decode_seconds"] = s.decode_seconds;
        d["forward_passes"] = s.forward_passes;
        d["graph_replays"] = s.graph_replays;
        return d;
      });

  py::class_<Sampler>(l, "Sampler")
      .def(py::init([](double temperature, int64_t top_k, double top_p, double min_p,
                       double repetition_penalty, int64_t max_new_tokens,
                       std::vector<int64_t> stop_token_ids, bool ignore_eos, uint64_t seed) {
             return std::make_unique<Sampler>(sampling_params(
                 temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
                 std::move(stop_token_ids), ignore_eos, seed));
           }),
           SAMPLING_ARGS)
      .def("process",
           [](const Sampler& s, const Tensor& logits, const std::vector<int64_t>& history) {
             Tensor x = logits.to(kFloat).contiguous();
             RT_CHECK_VALUE(x.dim() == 1, "Sampler.process: expected 1-D logits, got shape ",
                            x.sizes());
             return s.process(x.data_ptr<float>(), x.numel(), history);
           })
      .def("sample", [](Sampler& s, const Tensor& logits, const std::vector<int64_t>& history) {
        Tensor x = logits.to(kFloat).contiguous();
        RT_CHECK_VALUE(x.dim() == 1, "Sampler.sample: expected 1-D logits, got shape ", x.sizes());
        return s.sample(x.data_ptr<float>(), x.numel(), history);
      });
  l.def(
      "sample_rows",
      [](const Tensor& logits, const std::vector<Sampler*>& samplers,
         const std::vector<std::vector<int64_t>>& histories) {
        std::vector<const std::vector<int64_t>*> h;
        for (const auto& v : histories) h.push_back(&v);
        py::gil_scoped_release no_gil;
        return sample_rows(logits, samplers, h);
      },
      py::arg("logits"), py::arg("samplers"), py::arg("histories"),
      "The next token of each row of [rows, vocab] float32 logits for samplers[i] (what "
      "samplers[i].sample(logits[i], histories[i]) gives), computed where the logits are.");
}

}  // namespace retorch::python
