// retorch._C._tokenizer: LLM tokenizers for Python (re-exported as retorch.llm.Tokenizer).
#include "retorch/models/llama/Tokenizer.h"

#include "bindings.h"

namespace retorch::python {

namespace {

using llama::ChatMessage;
using llama::StreamDecoder;
using llama::Tokenizer;
using llama::TokenizerSpec;

std::vector<ChatMessage> to_messages(const py::iterable& messages) {
  std::vector<ChatMessage> out;
  for (py::handle m : messages) {
    RT_CHECK_TYPE(py::isinstance<py::dict>(m),
                  "apply_chat_template: each message must be a dict "
                  "with 'role' and 'content', got ",
                  std::string(py::str(py::type::of(m))));
    py::dict d = py::reinterpret_borrow<py::dict>(m);
    RT_CHECK_VALUE(d.contains("role") && d.contains("content"),
                   "apply_chat_template: a message lacks 'role' or 'content'");
    out.push_back({d["role"].cast<std::string>(), d["content"].cast<std::string>()});
  }
  return out;
}

}  // namespace

void bind_tokenizer(py::module_& m) {
  py::module_ t = m.def_submodule("_tokenizer", "LLM tokenizers (see retorch.llm.Tokenizer)");
  py::class_<Tokenizer>(t, "Tokenizer",
                        "BPE / SentencePiece tokenizer that encodes and decodes like the "
                        "Hugging Face tokenizers package.")
      .def_static("from_file", &Tokenizer::from_file, py::arg("path"),
                  "Reads tokenizer.json (a file or a directory), with tokenizer_config.json.")
      .def_static(
          "from_spec",
          [](const std::string& kind, std::vector<std::string> tokens, std::vector<float> scores,
             std::vector<int32_t> token_types, std::vector<std::string> merges,
             std::optional<int32_t> bos_id, std::optional<int32_t> eos_id,
             std::optional<int32_t> unk_id, std::optional<int32_t> pad_id, bool add_bos,
             bool add_eos, bool add_space_prefix, const std::string& pre,
             const std::string& chat_template) {
            TokenizerSpec spec;
            spec.kind = kind;
            spec.tokens = std::move(tokens);
            spec.scores = std::move(scores);
            spec.token_types = std::move(token_types);
            spec.merges = std::move(merges);
            spec.bos_id = bos_id;
            spec.eos_id = eos_id;
            spec.unk_id = unk_id;
            spec.pad_id = pad_id;
            spec.add_bos = add_bos;
            spec.add_eos = add_eos;
            spec.add_space_prefix = add_space_prefix;
            spec.pre = pre;
            spec.chat_template = chat_template;
            py::gil_scoped_release no_gil;
            return Tokenizer::from_spec(spec);
          },
          py::kw_only(), py::arg("kind") = "gpt2", py::arg("tokens"),
          py::arg("scores") = std::vector<float>{}, py::arg("token_types") = std::vector<int32_t>{},
          py::arg("merges") = std::vector<std::string>{}, py::arg("bos_id") = py::none(),
          py::arg("eos_id") = py::none(), py::arg("unk_id") = py::none(),
          py::arg("pad_id") = py::none(), py::arg("add_bos") = false, py::arg("add_eos") = false,
          py::arg("add_space_prefix") = true, py::arg("pre") = "default",
          py::arg("chat_template") = "",
          "Builds a tokenizer from GGUF-style data (tokenizer.ggml.* metadata).")
      .def(
          "encode",
          [](const Tokenizer& self, const std::string& text, bool add_special_tokens) {
            py::gil_scoped_release no_gil;
            return self.encode(text, add_special_tokens);
          },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](const Tokenizer& self, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            py::gil_scoped_release no_gil;
            return self.decode(ids, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def("token_to_id", &Tokenizer::token_to_id, py::arg("token"))
      .def("id_to_token", &Tokenizer::id_to_token, py::arg("id"))
      .def("is_special", &Tokenizer::is_special, py::arg("id"))
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def("__len__", &Tokenizer::vocab_size)
      .def_property_readonly("bos_id", &Tokenizer::bos_id)
      .def_property_readonly("eos_id", &Tokenizer::eos_id)
      .def_property_readonly("stop_ids", &Tokenizer::stop_ids)
      .def_property_readonly("chat_template", &Tokenizer::chat_template)
      .def(
          "apply_chat_template",
          [](const Tokenizer& self, const py::iterable& messages, bool add_generation_prompt) {
            return self.apply_chat_template(to_messages(messages), add_generation_prompt);
          },
          py::arg("messages"), py::arg("add_generation_prompt") = false)
      .def(
          "stream_decoder",
          [](const Tokenizer& self, bool skip_special_tokens, std::vector<int32_t> context) {
            return StreamDecoder(self, skip_special_tokens, std::move(context));
          },
          py::arg("skip_special_tokens") = false, py::arg("context") = std::vector<int32_t>{},
          py::keep_alive<0, 1>(), "A StreamDecoder over this tokenizer.");

  py::class_<StreamDecoder>(t, "StreamDecoder",
                            "Decodes generated ids one at a time, yielding whole characters.")
      .def(py::init<const Tokenizer&, bool, std::vector<int32_t>>(), py::arg("tokenizer"),
           py::arg("skip_special_tokens") = false, py::arg("context") = std::vector<int32_t>{},
           py::keep_alive<1, 2>())
      .def("put", &StreamDecoder::put, py::arg("id"),
           "Takes one id; returns the text it completes (maybe empty).")
      .def("flush", &StreamDecoder::flush, "Returns the text still held back.");
}

}  // namespace retorch::python
