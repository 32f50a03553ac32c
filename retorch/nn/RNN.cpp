// Recurrent modules: parameters, PyTorch's initialization, the time loop over padded or packed
// input written in retorch ops (so autograd differentiates it), and libtorch-style printing.
#include "retorch/nn/RNN.h"

#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/nn/Init.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn {

namespace detail {

namespace {

int64_t gate_count(RNNMode mode) {
  switch (mode) {
    case RNNMode::kLSTM:
      return 4;
    case RNNMode::kGRU:
      return 3;
    default:
      return 1;
  }
}

int64_t directions(const RNNOptionsBase& o) {
  return o.bidirectional() ? 2 : 1;
}

int64_t out_hidden_size(const RNNOptionsBase& o) {
  return o.proj_size() > 0 ? o.proj_size() : o.hidden_size();
}

void check_hidden(const RNNOptionsBase& o, const std::string& name, const Tensor& hx, int64_t batch,
                  int64_t size, const char* what) {
  std::vector<int64_t> expected{o.num_layers() * directions(o), batch, size};
  RT_CHECK(hx.sizes() == IntArrayRef(expected), name, ": Expected ", what, " size (", expected[0],
           ", ", expected[1], ", ", expected[2], "), got ", hx.sizes());
}

}  // namespace

RNNImplBase::RNNImplBase(const RNNOptionsBase& options, std::string name)
    : Module(std::move(name)), options_base(options) {
  reset();
}

int64_t RNNImplBase::real_hidden_size() const {
  return out_hidden_size(options_base);
}

void RNNImplBase::reset() {
  const auto& o = options_base;
  RT_CHECK(o.input_size() > 0 && o.hidden_size() > 0, name(),
           ": input_size and hidden_size must be positive, got ", o.input_size(), " and ",
           o.hidden_size());
  RT_CHECK(o.num_layers() > 0, name(), ": num_layers must be positive, got ", o.num_layers());
  RT_CHECK(o.dropout() >= 0 && o.dropout() <= 1, name(),
           ": dropout should be a number in range [0, 1] representing the probability of an "
           "element being zeroed, got ",
           o.dropout());
  RT_CHECK(o.proj_size() >= 0, name(), ": proj_size should be a non-negative integer, got ",
           o.proj_size());
  RT_CHECK(o.proj_size() < o.hidden_size(), name(), ": proj_size (", o.proj_size(),
           ") has to be smaller than hidden_size (", o.hidden_size(), ")");
  RT_CHECK(o.proj_size() == 0 || o.mode() == RNNMode::kLSTM, name(),
           ": proj_size argument is only supported for LSTM, not RNN or GRU");
  const int64_t G = gate_count(o.mode()) * o.hidden_size(), H = o.hidden_size();
  const int64_t H_out = real_hidden_size();
  flat_weights_.clear();
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    for (int64_t dir = 0; dir < num_directions(); ++dir) {
      const int64_t in = layer == 0 ? o.input_size() : H_out * num_directions();
      const std::string sfx = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      std::vector<Tensor> w(5);
      w[0] = register_parameter("weight_ih" + sfx, retorch::empty({G, in}));
      w[1] = register_parameter("weight_hh" + sfx, retorch::empty({G, H_out}));
      if (o.bias()) {
        w[2] = register_parameter("bias_ih" + sfx, retorch::empty({G}));
        w[3] = register_parameter("bias_hh" + sfx, retorch::empty({G}));
      }
      if (o.proj_size() > 0)
        w[4] = register_parameter("weight_hr" + sfx, retorch::empty({H_out, H}));
      flat_weights_.push_back(std::move(w));
    }
  }
  reset_parameters();
}

void RNNImplBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(double(options_base.hidden_size()));
  for (const Tensor& w : all_weights()) init::uniform_(w, -stdv, stdv);
}

std::vector<Tensor> RNNImplBase::all_weights() const {
  std::vector<Tensor> out;
  for (const auto& ws : flat_weights_)
    for (const Tensor& w : ws)
      if (w.defined()) out.push_back(w);
  return out;
}

void RNNImplBase::pretty_print(std::ostream& os) const {
  const auto& o = options_base;
  os << std::boolalpha << name() << "(input_size=" << o.input_size()
     << ", hidden_size=" << o.hidden_size() << ", num_layers=" << o.num_layers()
     << ", bias=" << o.bias() << ", batch_first=" << o.batch_first() << ", dropout=" << o.dropout()
     << ", bidirectional=" << o.bidirectional();
  if (o.proj_size() > 0) os << ", proj_size=" << o.proj_size();
  os << ")";
}

// Note [RNN time loop]
// Every layer and direction runs over "flat" data: the rows of all time steps stacked, step t
// holding batch_sizes[t] rows (a padded batch has batch_sizes = [B] * T; a packed one shrinks,
// see Note [Packed layout]). The input projection of all steps is one matmul; each step then
// does one addmm with W_hh on the first batch_sizes[t] rows of h and the pointwise gates. Rows
// past batch_sizes[t] keep their state, which makes each sequence's final state its state at
// its own last step, and in the reverse direction makes a sequence start from h0 at its last
// step. Both directions therefore run the same loop, only the order of t differs.
namespace {

std::tuple<Tensor, Tensor, Tensor> run(const RNNOptionsBase& o, const RNNWeights& weights,
                                       bool training, const Tensor& data,
                                       const std::vector<int64_t>& batch_sizes, const Tensor& h0,
                                       const Tensor& c0) {
  const RNNMode mode = o.mode();
  const int64_t D = directions(o), T = int64_t(batch_sizes.size());
  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = data;
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    std::vector<Tensor> dir_out;
    for (int64_t dir = 0; dir < D; ++dir) {
      const std::vector<Tensor>& w = weights[size_t(layer * D + dir)];
      Tensor h = h0.select(0, layer * D + dir), c;
      if (mode == RNNMode::kLSTM) c = c0.select(0, layer * D + dir);
      Tensor proj =
          linear(layer_input, w[0], w[2].defined() ? std::optional<Tensor>(w[2]) : std::nullopt);
      std::vector<Tensor> steps = retorch::split_with_sizes(proj, batch_sizes, 0);
      std::vector<Tensor> outs(static_cast<size_t>(T));
      const Tensor w_hh_t = w[1].t();
      for (int64_t k = 0; k < T; ++k) {
        const int64_t t = dir == 1 ? T - 1 - k : k, bs = batch_sizes[size_t(t)];
        const bool all = bs == h.size(0);
        Tensor hp = all ? h : h.narrow(0, 0, bs);
        Tensor hh = w[3].defined() ? retorch::addmm(w[3], hp, w_hh_t) : hp.mm(w_hh_t);
        const Tensor& xi = steps[size_t(t)];
        Tensor h_new;
        if (mode == RNNMode::kLSTM) {
          std::vector<Tensor> g = (xi + hh).chunk(4, 1);
          Tensor cp = all ? c : c.narrow(0, 0, bs);
          Tensor c_new = g[1].sigmoid() * cp + g[0].sigmoid() * g[2].tanh();
          h_new = g[3].sigmoid() * c_new.tanh();
          if (w[4].defined()) h_new = h_new.mm(w[4].t());
          c = all ? c_new : retorch::cat({c_new, c.narrow(0, bs, c.size(0) - bs)}, 0);
        } else if (mode == RNNMode::kGRU) {
          std::vector<Tensor> gi = xi.chunk(3, 1), gh = hh.chunk(3, 1);
          Tensor r = (gi[0] + gh[0]).sigmoid(), z = (gi[1] + gh[1]).sigmoid();
          Tensor n = (gi[2] + r * gh[2]).tanh();
          h_new = n + z * (hp - n);
        } else {
          h_new = mode == RNNMode::kRNNTanh ? (xi + hh).tanh() : (xi + hh).relu();
        }
        outs[size_t(t)] = h_new;
        h = all ? h_new : retorch::cat({h_new, h.narrow(0, bs, h.size(0) - bs)}, 0);
      }
      h_n.push_back(h);
      if (mode == RNNMode::kLSTM) c_n.push_back(c);
      dir_out.push_back(retorch::cat(outs, 0));
    }
    layer_input = D == 2 ? retorch::cat(dir_out, 1) : dir_out[0];
    if (o.dropout() > 0 && training && layer + 1 < o.num_layers())
      layer_input = retorch::dropout(layer_input, o.dropout(), true);
  }
  return {layer_input, retorch::stack(h_n, 0),
          mode == RNNMode::kLSTM ? retorch::stack(c_n, 0) : Tensor()};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> rnn_forward_padded(const RNNOptionsBase& o,
                                                      const RNNWeights& weights, bool training,
                                                      const std::string& name, const Tensor& input,
                                                      Tensor h0, Tensor c0) {
  RT_CHECK(int64_t(weights.size()) == o.num_layers() * directions(o), name, ": expected ",
           o.num_layers() * directions(o), " (layer, direction) weight sets, got ", weights.size());
  RT_CHECK(input.dim() == 2 || input.dim() == 3, name,
           ": Expected input to be 2-D or 3-D but received ", input.dim(), "-D tensor of size ",
           input.sizes());
  RT_CHECK(input.size(-1) == o.input_size(), name,
           ": input.size(-1) must be equal to input_size. Expected ", o.input_size(), ", got ",
           input.size(-1));
  RT_CHECK(is_floating_type(input.dtype()), name, ": expected a floating input, got ",
           input.dtype());
  const bool batched = input.dim() == 3;
  for (const Tensor* hx : {&h0, &c0}) {
    if (!hx->defined()) continue;
    RT_CHECK(hx->dim() == (batched ? 3 : 2), name, ": For ",
             batched ? "batched 3-D" : "unbatched 2-D", " input, hx should also be ",
             batched ? 3 : 2, "-D but got ", hx->dim(), "-D tensor");
    RT_CHECK(hx->dtype() == input.dtype(), name,
             ": input and hidden tensors are not the same "
             "dtype, found input tensor with ",
             input.dtype(), " and hidden tensor with ", hx->dtype());
  }
  Tensor x = batched ? input : input.unsqueeze(1);
  if (batched && o.batch_first()) x = x.transpose(0, 1);
  if (!batched) {
    if (h0.defined()) h0 = h0.unsqueeze(1);
    if (c0.defined()) c0 = c0.unsqueeze(1);
  }
  const int64_t T = x.size(0), B = x.size(1), L = o.num_layers() * directions(o);
  const TensorOptions opts = TensorOptions(input.dtype()).device(input.device());
  if (!h0.defined()) h0 = zeros({L, B, out_hidden_size(o)}, opts);
  check_hidden(o, name, h0, B, out_hidden_size(o),
               o.mode() == RNNMode::kLSTM ? "hidden[0]" : "hidden");
  if (o.mode() == RNNMode::kLSTM) {
    if (!c0.defined()) c0 = zeros({L, B, o.hidden_size()}, opts);
    check_hidden(o, name, c0, B, o.hidden_size(), "hidden[1]");
  }
  auto [out, h_n, c_n] = run(o, weights, training, x.reshape({T * B, o.input_size()}),
                             std::vector<int64_t>(size_t(T), B), h0, c0);
  out = out.view({T, B, -1});
  if (batched && o.batch_first()) out = out.transpose(0, 1);
  if (!batched) {
    out = out.squeeze(1);
    h_n = h_n.squeeze(1);
    if (c_n.defined()) c_n = c_n.squeeze(1);
  }
  return {out, h_n, c_n};
}

std::tuple<PackedSequence, Tensor, Tensor> rnn_forward_packed(
    const RNNOptionsBase& o, const RNNWeights& weights, bool training, const std::string& name,
    const PackedSequence& input, Tensor h0, Tensor c0) {
  RT_CHECK(int64_t(weights.size()) == o.num_layers() * directions(o), name, ": expected ",
           o.num_layers() * directions(o), " (layer, direction) weight sets, got ", weights.size());
  const Tensor& data = input.data();
  RT_CHECK(data.dim() == 2 && data.size(1) == o.input_size(), name,
           ": expected packed data of size (N, ", o.input_size(), "), got ", data.sizes());
  std::vector<int64_t> bs = input.batch_sizes_vec();
  RT_CHECK(!bs.empty(), name, ": empty PackedSequence");
  const int64_t B = bs[0], L = o.num_layers() * directions(o);
  const TensorOptions opts = TensorOptions(data.dtype()).device(data.device());
  const Tensor& sorted = input.sorted_indices();
  // hx is given in the original batch order; the loop works in sorted order.
  if (h0.defined() && sorted.defined()) h0 = h0.index_select(1, sorted);
  if (c0.defined() && sorted.defined()) c0 = c0.index_select(1, sorted);
  if (!h0.defined()) h0 = zeros({L, B, out_hidden_size(o)}, opts);
  check_hidden(o, name, h0, B, out_hidden_size(o),
               o.mode() == RNNMode::kLSTM ? "hidden[0]" : "hidden");
  if (o.mode() == RNNMode::kLSTM) {
    if (!c0.defined()) c0 = zeros({L, B, o.hidden_size()}, opts);
    check_hidden(o, name, c0, B, o.hidden_size(), "hidden[1]");
  }
  auto [out, h_n, c_n] = run(o, weights, training, data, bs, h0, c0);
  const Tensor& unsorted = input.unsorted_indices();
  if (unsorted.defined()) {
    h_n = h_n.index_select(1, unsorted);
    if (c_n.defined()) c_n = c_n.index_select(1, unsorted);
  }
  return {PackedSequence(out, input.batch_sizes(), sorted, unsorted), h_n, c_n};
}

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::forward_padded(const Tensor& input, Tensor h0,
                                                               Tensor c0) {
  return rnn_forward_padded(options_base, flat_weights_, is_training(), name(), input, h0, c0);
}

std::tuple<PackedSequence, Tensor, Tensor> RNNImplBase::forward_packed(const PackedSequence& input,
                                                                       Tensor h0, Tensor c0) {
  return rnn_forward_packed(options_base, flat_weights_, is_training(), name(), input, h0, c0);
}

}  // namespace detail

namespace {

detail::RNNOptionsBase base_options(const RNNOptions& o) {
  RT_CHECK(o.nonlinearity() == "tanh" || o.nonlinearity() == "relu", "RNN: Unknown nonlinearity '",
           o.nonlinearity(), "'. Select from 'tanh' or 'relu'.");
  return detail::RNNOptionsBase(
             o.nonlinearity() == "tanh" ? detail::RNNMode::kRNNTanh : detail::RNNMode::kRNNReLU,
             o.input_size(), o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional());
}

detail::RNNOptionsBase base_options(const LSTMOptions& o) {
  return detail::RNNOptionsBase(detail::RNNMode::kLSTM, o.input_size(), o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional())
      .proj_size(o.proj_size());
}

detail::RNNOptionsBase base_options(const GRUOptions& o) {
  return detail::RNNOptionsBase(detail::RNNMode::kGRU, o.input_size(), o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional());
}

}  // namespace

RNNImpl::RNNImpl(const RNNOptions& options_)
    : RNNImplBase(base_options(options_), "retorch::nn::RNN"), options(options_) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [out, h, c] = forward_padded(input, hx, Tensor());
  return {out, h};
}

std::tuple<PackedSequence, Tensor> RNNImpl::forward(const PackedSequence& input, const Tensor& hx) {
  auto [out, h, c] = forward_packed(input, hx, Tensor());
  return {out, h};
}

std::tuple<PackedSequence, Tensor> RNNImpl::forward_with_packed_input(const PackedSequence& input,
                                                                      const Tensor& hx) {
  return forward(input, hx);
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_)
    : RNNImplBase(base_options(options_), "retorch::nn::LSTM"), options(options_) {}

std::tuple<Tensor, LSTMImpl::State> LSTMImpl::forward(const Tensor& input,
                                                      const std::optional<State>& hx) {
  auto [out, h, c] =
      forward_padded(input, hx ? std::get<0>(*hx) : Tensor(), hx ? std::get<1>(*hx) : Tensor());
  return {out, {h, c}};
}

std::tuple<PackedSequence, LSTMImpl::State> LSTMImpl::forward(const PackedSequence& input,
                                                              const std::optional<State>& hx) {
  auto [out, h, c] =
      forward_packed(input, hx ? std::get<0>(*hx) : Tensor(), hx ? std::get<1>(*hx) : Tensor());
  return {out, {h, c}};
}

std::tuple<PackedSequence, LSTMImpl::State> LSTMImpl::forward_with_packed_input(
    const PackedSequence& input, const std::optional<State>& hx) {
  return forward(input, hx);
}

GRUImpl::GRUImpl(const GRUOptions& options_)
    : RNNImplBase(base_options(options_), "retorch::nn::GRU"), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [out, h, c] = forward_padded(input, hx, Tensor());
  return {out, h};
}

std::tuple<PackedSequence, Tensor> GRUImpl::forward(const PackedSequence& input, const Tensor& hx) {
  auto [out, h, c] = forward_packed(input, hx, Tensor());
  return {out, h};
}

std::tuple<PackedSequence, Tensor> GRUImpl::forward_with_packed_input(const PackedSequence& input,
                                                                      const Tensor& hx) {
  return forward(input, hx);
}

}  // namespace retorch::nn
