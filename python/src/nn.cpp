// retorch._C._nn: the C++ nn pieces python/retorch/nn builds on (init, clipping, packed
// sequences, the recurrent time loop) and C++ modules handed to Python (nn.CppModule).
#include <sstream>

#include "python/src/bindings.h"

namespace retorch::python {

namespace {

using nn::detail::RNNMode;
using nn::utils::rnn::PackedSequence;

Tensor or_undefined(const py::handle& h) {
  return h.is_none() ? Tensor() : h.cast<Tensor>();
}

py::object or_none(const Tensor& t) {
  return t.defined() ? py::cast(t) : py::none();
}

// A PackedSequence travels as the tuple (data, batch_sizes, sorted_indices, unsorted_indices)
// that Python's PackedSequence namedtuple is.
PackedSequence packed_from(const py::handle& seq) {
  auto t = seq.cast<py::tuple>();
  RT_CHECK(t.size() == 4, "PackedSequence: expected 4 fields, got ", t.size());
  return PackedSequence(t[0].cast<Tensor>(), t[1].cast<Tensor>(), or_undefined(t[2]),
                        or_undefined(t[3]));
}

py::tuple packed_to(const PackedSequence& p) {
  return py::make_tuple(p.data(), p.batch_sizes(), or_none(p.sorted_indices()),
                        or_none(p.unsorted_indices()));
}

RNNMode rnn_mode(const std::string& mode) {
  if (mode == "RNN_TANH") return RNNMode::kRNNTanh;
  if (mode == "RNN_RELU") return RNNMode::kRNNReLU;
  if (mode == "LSTM") return RNNMode::kLSTM;
  if (mode == "GRU") return RNNMode::kGRU;
  RT_ERROR_KIND(::retorch::ErrorKind::kValue, "Unknown recurrent mode '", mode, "'");
}

// Python's modules keep torch's _flat_weights order per (layer, direction): w_ih, w_hh, then
// b_ih, b_hh when bias, then w_hr when proj_size > 0.
nn::detail::RNNWeights rnn_weights(const py::list& flat, bool bias, bool proj, size_t sets) {
  const size_t per = 2 + (bias ? 2 : 0) + (proj ? 1 : 0);
  RT_CHECK(flat.size() == per * sets, "rnn: expected ", per * sets, " weights, got ", flat.size());
  nn::detail::RNNWeights w(sets, std::vector<Tensor>(5));
  for (size_t s = 0; s < sets; ++s) {
    size_t k = s * per;
    w[s][0] = flat[k++].cast<Tensor>();
    w[s][1] = flat[k++].cast<Tensor>();
    if (bias) {
      w[s][2] = flat[k++].cast<Tensor>();
      w[s][3] = flat[k++].cast<Tensor>();
    }
    if (proj) w[s][4] = flat[k++].cast<Tensor>();
  }
  return w;
}

// Runs Python's nn.RNN/LSTM/GRU: input is a tensor or a PackedSequence tuple; returns
// (output, h_n, c_n or None) with output of the same kind as input.
py::tuple rnn_forward(const std::string& name, const std::string& mode, py::handle input,
                      py::handle h0, py::handle c0, const py::list& flat, int64_t input_size,
                      int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first,
                      double dropout, bool training, bool bidirectional, int64_t proj_size) {
  nn::detail::RNNOptionsBase o(rnn_mode(mode), input_size, hidden_size);
  o.num_layers(num_layers)
      .bias(bias)
      .batch_first(batch_first)
      .dropout(dropout)
      .bidirectional(bidirectional)
      .proj_size(proj_size);
  const size_t sets = size_t(num_layers) * (bidirectional ? 2 : 1);
  auto w = rnn_weights(flat, bias, proj_size > 0, sets);
  if (py::isinstance<py::tuple>(input)) {
    auto [out, h, c] = nn::detail::rnn_forward_packed(o, w, training, name, packed_from(input),
                                                      or_undefined(h0), or_undefined(c0));
    return py::make_tuple(packed_to(out), h, or_none(c));
  }
  auto [out, h, c] = nn::detail::rnn_forward_padded(o, w, training, name, input.cast<Tensor>(),
                                                    or_undefined(h0), or_undefined(c0));
  return py::make_tuple(out, h, or_none(c));
}

py::list items(const OrderedDict<Tensor>& d) {
  py::list out;
  for (const auto& item : d) out.append(py::make_tuple(item.key, item.value));
  return out;
}

// A few C++ layers built from Python, so C++ models can be assembled without a C++ compiler and
// tests can mix them with Python modules. Arguments are torch's positional ones.
std::shared_ptr<nn::Module> cpp_layer(const std::string& kind, const py::args& a) {
  auto i = [&](size_t k) { return a[k].cast<int64_t>(); };
  if (kind == "Linear")
    return nn::Linear(nn::LinearOptions(i(0), i(1)).bias(a.size() < 3 || a[2].cast<bool>())).ptr();
  if (kind == "Conv2d")
    return nn::Conv2d(nn::Conv2dOptions(i(0), i(1), i(2))
                          .stride(a.size() > 3 ? i(3) : 1)
                          .padding(a.size() > 4 ? i(4) : 0))
        .ptr();
  if (kind == "BatchNorm2d") return nn::BatchNorm2d(i(0)).ptr();
  if (kind == "MaxPool2d") return nn::MaxPool2d(i(0)).ptr();
  if (kind == "ReLU") return nn::ReLU().ptr();
  if (kind == "Flatten") return nn::Flatten().ptr();
  if (kind == "Sequential") {
    nn::Sequential seq;
    for (py::handle h : a) seq->push_back(h.cast<std::shared_ptr<nn::Module>>());
    return seq.ptr();
  }
  RT_ERROR_KIND(::retorch::ErrorKind::kValue, "cpp_layer: unknown layer kind '", kind, "'");
}

}  // namespace

void bind_nn(py::module_& parent) {
  py::module_ m = parent.def_submodule("_nn", "C++ nn helpers behind retorch.nn");
  namespace init = nn::init;
  m.def("calculate_gain", &init::calculate_gain, py::arg("nonlinearity"),
        py::arg("param") = py::none());
  m.def("_calculate_fan_in_and_fan_out", &init::calculate_fan_in_and_fan_out);
  m.def("uniform_", &init::uniform_, py::arg("tensor"), py::arg("a") = 0.0, py::arg("b") = 1.0,
        py::arg("generator") = py::none());
  m.def("normal_", &init::normal_, py::arg("tensor"), py::arg("mean") = 0.0, py::arg("std") = 1.0,
        py::arg("generator") = py::none());
  m.def("constant_", &init::constant_);
  m.def("ones_", &init::ones_);
  m.def("zeros_", &init::zeros_);
  m.def("eye_", &init::eye_);
  m.def("xavier_uniform_", &init::xavier_uniform_);
  m.def("xavier_normal_", &init::xavier_normal_);
  m.def("kaiming_uniform_", &init::kaiming_uniform_);
  m.def("kaiming_normal_", &init::kaiming_normal_);
  m.def("orthogonal_", &init::orthogonal_);
  m.def("trunc_normal_", &init::trunc_normal_);

  m.def("clip_grad_norm_", &nn::utils::clip_grad_norm_);
  m.def("clip_grad_value_", &nn::utils::clip_grad_value_);
  m.def("parameters_to_vector", &nn::utils::parameters_to_vector);
  m.def("vector_to_parameters", &nn::utils::vector_to_parameters);

  namespace rnn = nn::utils::rnn;
  m.def("pack_padded_sequence",
        [](const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted) {
          return packed_to(rnn::pack_padded_sequence(input, lengths, batch_first, enforce_sorted));
        });
  m.def("pad_packed_sequence", [](py::handle seq, bool batch_first, double padding_value,
                                  std::optional<int64_t> total_length) {
    return rnn::pad_packed_sequence(packed_from(seq), batch_first, padding_value, total_length);
  });
  m.def("pad_sequence", &rnn::pad_sequence);
  m.def("pack_sequence", [](const std::vector<Tensor>& seqs, bool enforce_sorted) {
    return packed_to(rnn::pack_sequence(seqs, enforce_sorted));
  });
  m.def("invert_permutation", &rnn::invert_permutation);
  m.def("rnn_forward", &rnn_forward);

  // Any C++ nn::Module (its single-tensor forward, direct parameters/buffers/children, mode).
  py::class_<nn::Module, std::shared_ptr<nn::Module>>(m, "Module")
      .def_property_readonly("name", &nn::Module::name)
      .def("forward", &nn::Module::forward, py::call_guard<py::gil_scoped_release>())
      .def("named_parameters",
           [](const nn::Module& mod) { return items(mod.named_parameters(false)); })
      .def("named_buffers", [](const nn::Module& mod) { return items(mod.named_buffers(false)); })
      .def("named_children",
           [](const nn::Module& mod) {
             py::list out;
             for (const auto& item : mod.named_children())
               out.append(py::make_tuple(item.key, item.value));
             return out;
           })
      .def("train", &nn::Module::train)
      .def_property_readonly("training", &nn::Module::is_training)
      .def("__repr__", [](const nn::Module& mod) {
        std::ostringstream os;
        os << mod;
        return os.str();
      });
  m.def("cpp_layer", &cpp_layer);
}

}  // namespace retorch::python
