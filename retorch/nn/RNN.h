// Recurrent modules: RNN (tanh/relu), LSTM (optional projections) and GRU, over padded or packed
// sequences, with PyTorch's parameter names, initialization and gate order.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"
#include "retorch/nn/PackedSequence.h"

namespace retorch::nn {

using utils::rnn::PackedSequence;

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  RETORCH_ARG(int64_t, input_size);
  RETORCH_ARG(int64_t, hidden_size);
  RETORCH_ARG(int64_t, num_layers) = 1;
  /// "tanh" or "relu".
  RETORCH_ARG(std::string, nonlinearity) = "tanh";
  RETORCH_ARG(bool, bias) = true;
  RETORCH_ARG(bool, batch_first) = false;
  RETORCH_ARG(double, dropout) = 0.0;
  RETORCH_ARG(bool, bidirectional) = false;
};

struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  RETORCH_ARG(int64_t, input_size);
  RETORCH_ARG(int64_t, hidden_size);
  RETORCH_ARG(int64_t, num_layers) = 1;
  RETORCH_ARG(bool, bias) = true;
  RETORCH_ARG(bool, batch_first) = false;
  RETORCH_ARG(double, dropout) = 0.0;
  RETORCH_ARG(bool, bidirectional) = false;
  /// When > 0, h is projected to this size by weight_hr_l{k}.
  RETORCH_ARG(int64_t, proj_size) = 0;
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  RETORCH_ARG(int64_t, input_size);
  RETORCH_ARG(int64_t, hidden_size);
  RETORCH_ARG(int64_t, num_layers) = 1;
  RETORCH_ARG(bool, bias) = true;
  RETORCH_ARG(bool, batch_first) = false;
  RETORCH_ARG(double, dropout) = 0.0;
  RETORCH_ARG(bool, bidirectional) = false;
};

namespace detail {

enum class RNNMode { kRNNTanh, kRNNReLU, kLSTM, kGRU };

/// The options every recurrent module shares, plus its mode.
struct RNNOptionsBase {
  RNNOptionsBase(RNNMode mode, int64_t input_size, int64_t hidden_size)
      : mode_(mode), input_size_(input_size), hidden_size_(hidden_size) {}
  RETORCH_ARG(RNNMode, mode);
  RETORCH_ARG(int64_t, input_size);
  RETORCH_ARG(int64_t, hidden_size);
  RETORCH_ARG(int64_t, num_layers) = 1;
  RETORCH_ARG(bool, bias) = true;
  RETORCH_ARG(bool, batch_first) = false;
  RETORCH_ARG(double, dropout) = 0.0;
  RETORCH_ARG(bool, bidirectional) = false;
  RETORCH_ARG(int64_t, proj_size) = 0;
};

/// Per (layer, direction): w_ih, w_hh, b_ih, b_hh, w_hr (undefined when absent).
using RNNWeights = std::vector<std::vector<Tensor>>;

/// Runs a padded input (unbatched, seq- or batch-first) through the recurrent layers with the
/// given weights; h0/c0 may be undefined (zeros). Returns (output, h_n, c_n (LSTM only)).
/// `name` prefixes error messages. Python's nn.RNN/LSTM/GRU call this directly.
std::tuple<Tensor, Tensor, Tensor> rnn_forward_padded(const RNNOptionsBase& options,
                                                      const RNNWeights& weights, bool training,
                                                      const std::string& name, const Tensor& input,
                                                      Tensor h0, Tensor c0);
/// As above for a packed input; hx and h_n follow the original batch order.
std::tuple<PackedSequence, Tensor, Tensor> rnn_forward_packed(
    const RNNOptionsBase& options, const RNNWeights& weights, bool training,
    const std::string& name, const PackedSequence& input, Tensor h0, Tensor c0);

/// The shared machinery: parameters per layer and direction, hx defaults, printing.
class RNNImplBase : public Module {
 public:
  RNNImplBase(const RNNOptionsBase& options, std::string name);
  /// Re-creates the parameters and re-initializes them.
  void reset();
  /// U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) for every parameter, like torch.
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;
  /// Every weight in torch's order (layer, direction, w_ih, w_hh, b_ih, b_hh, w_hr).
  std::vector<Tensor> all_weights() const;

  RNNOptionsBase options_base;

 protected:
  /// Runs the padded input (unbatched, seq- or batch-first); h0/c0 may be undefined.
  std::tuple<Tensor, Tensor, Tensor> forward_padded(const Tensor& input, Tensor h0, Tensor c0);
  /// Runs a packed input; hx follows the original batch order like the outputs.
  std::tuple<PackedSequence, Tensor, Tensor> forward_packed(const PackedSequence& input, Tensor h0,
                                                            Tensor c0);

 private:
  int64_t num_directions() const { return options_base.bidirectional() ? 2 : 1; }
  int64_t real_hidden_size() const;

  RNNWeights flat_weights_;
};

}  // namespace detail

/// Elman RNN: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh).
class RNNImpl : public detail::RNNImplBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  /// (output, h_n); hx is (num_layers * directions, batch, hidden) or undefined for zeros.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {});
  std::tuple<PackedSequence, Tensor> forward(const PackedSequence& input, const Tensor& hx = {});
  /// libtorch's name for the packed overload.
  std::tuple<PackedSequence, Tensor> forward_with_packed_input(const PackedSequence& input,
                                                               const Tensor& hx = {});
  RNNOptions options;
};
RETORCH_MODULE(RNN);

/// LSTM with gates (i, f, g, o) and an optional projection of h.
class LSTMImpl : public detail::RNNImplBase {
 public:
  using State = std::tuple<Tensor, Tensor>;
  LSTMImpl(int64_t input_size, int64_t hidden_size)
      : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  /// (output, (h_n, c_n)); hx = (h_0, c_0) or nullopt for zeros.
  std::tuple<Tensor, State> forward(const Tensor& input,
                                    const std::optional<State>& hx = std::nullopt);
  std::tuple<PackedSequence, State> forward(const PackedSequence& input,
                                            const std::optional<State>& hx = std::nullopt);
  std::tuple<PackedSequence, State> forward_with_packed_input(
      const PackedSequence& input, const std::optional<State>& hx = std::nullopt);
  LSTMOptions options;
};
RETORCH_MODULE(LSTM);

/// GRU with gates (r, z, n); n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
class GRUImpl : public detail::RNNImplBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  /// (output, h_n).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {});
  std::tuple<PackedSequence, Tensor> forward(const PackedSequence& input, const Tensor& hx = {});
  std::tuple<PackedSequence, Tensor> forward_with_packed_input(const PackedSequence& input,
                                                               const Tensor& hx = {});
  GRUOptions options;
};
RETORCH_MODULE(GRU);

}  // namespace retorch::nn
