// Recurrent, attention and transformer modules through the C++ API: shapes, parameter names,
// packed sequences, printing, bad input as retorch::Error, and float64 gradcheck.
#include <sstream>

#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;
using autograd::gradcheck;
using autograd::variable_list;
namespace nn = retorch::nn;
namespace rnn = retorch::nn::utils::rnn;

namespace {

Tensor rnd(std::vector<int64_t> shape, ScalarType t = kFloat) {
  return randn(shape, std::nullopt, TensorOptions(t));
}

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

}  // namespace

TEST(NNRNN, ShapesAndParameterNames) {
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true).batch_first(true));
  auto [y, state] = lstm(rnd({3, 5, 4}));
  EXPECT_EQ(shape(y), (std::vector<int64_t>{3, 5, 12}));
  EXPECT_EQ(shape(std::get<0>(state)), (std::vector<int64_t>{4, 3, 6}));
  EXPECT_EQ(shape(std::get<1>(state)), (std::vector<int64_t>{4, 3, 6}));
  auto names = lstm->named_parameters().keys();
  ASSERT_EQ(names.size(), 16u);
  EXPECT_EQ(names[0], "weight_ih_l0");
  EXPECT_EQ(names[4], "weight_ih_l0_reverse");
  EXPECT_EQ(names[15], "bias_hh_l1_reverse");
  EXPECT_EQ(shape(lstm->named_parameters()["weight_ih_l1"]), (std::vector<int64_t>{24, 12}));

  nn::LSTM proj(nn::LSTMOptions(4, 6).proj_size(3));
  EXPECT_EQ(shape(proj->named_parameters()["weight_hr_l0"]), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(shape(std::get<0>(std::get<1>(proj(rnd({5, 2, 4}))))), (std::vector<int64_t>{1, 2, 3}));

  nn::GRU gru(nn::GRUOptions(4, 6));
  auto [gy, gh] = gru(rnd({5, 4}));  // unbatched
  EXPECT_EQ(shape(gy), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(shape(gh), (std::vector<int64_t>{1, 6}));
  nn::RNN r(nn::RNNOptions(4, 6).nonlinearity("relu").bias(false));
  EXPECT_EQ(r->parameters().size(), 2u);
}

TEST(NNRNN, DefaultInitBound) {
  manual_seed(0);
  nn::GRU gru(nn::GRUOptions(10, 25));
  for (const Tensor& p : gru->parameters())
    for (double v : values(p)) ASSERT_LE(std::abs(v), 1.0 / 5.0);
}

TEST(NNRNN, PackedMatchesPerSequenceRuns) {
  manual_seed(1);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).bidirectional(true));
  Tensor x = rnd({5, 3, 3});
  Tensor lengths = tensor({2, 5, 3});
  auto packed = rnn::pack_padded_sequence(x, lengths, false, false);
  EXPECT_EQ(packed.batch_sizes_vec(), (std::vector<int64_t>{3, 3, 2, 1, 1}));
  auto [y, state] = lstm(packed);
  auto [padded, lens] = rnn::pad_packed_sequence(y);
  EXPECT_EQ(values(lens), (std::vector<double>{2, 5, 3}));
  // Each sequence alone (unbatched, its own length) gives the same outputs and final state.
  for (int64_t b = 0; b < 3; ++b) {
    int64_t n = int64_t(values(lengths)[size_t(b)]);
    auto [yb, sb] = lstm(x.select(1, b).narrow(0, 0, n));
    EXPECT_TRUE(all_close(padded.select(1, b).narrow(0, 0, n), yb, 1e-5, 1e-6));
    EXPECT_TRUE(all_close(std::get<0>(state).select(1, b), std::get<0>(sb), 1e-5, 1e-6));
    if (n < 5) {
      EXPECT_EQ(values(padded.select(1, b).narrow(0, n, 5 - n).abs().sum())[0], 0.0);
    }
  }
  // pack_sequence and pad_sequence agree with pack_padded_sequence.
  std::vector<Tensor> seqs{rnd({4, 2}), rnd({2, 2}), rnd({1, 2})};
  auto p2 = rnn::pack_sequence(seqs);
  Tensor pad = rnn::pad_sequence(seqs, true);
  EXPECT_EQ(shape(pad), (std::vector<int64_t>{3, 4, 2}));
  EXPECT_TRUE(all_close(std::get<0>(rnn::pad_packed_sequence(p2, true)), pad));
}

TEST(NNRNN, BadInput) {
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2));
  Error e = catch_error([&] { lstm(rnd({2, 3, 4, 5})); });
  EXPECT_TRUE(contains(e.what(), {"LSTM", "2-D or 3-D", "4-D"}));
  e = catch_error([&] { lstm(rnd({5, 3, 7})); });
  EXPECT_TRUE(contains(e.what(), {"input_size", "Expected 4, got 7"}));
  e = catch_error([&] { lstm(rnd({5, 3, 4}), std::make_tuple(rnd({1, 3, 6}), rnd({2, 3, 6}))); });
  EXPECT_TRUE(contains(e.what(), {"LSTM", "hidden[0]", "(2, 3, 6)", "[1, 3, 6]"}));
  nn::GRU gru(nn::GRUOptions(4, 6));
  e = catch_error([&] { gru(rnd({5, 3, 4}), rnd({1, 6})); });
  EXPECT_TRUE(contains(e.what(), {"GRU", "3-D", "2-D"}));
  e = catch_error([] { nn::GRU(nn::GRUOptions(4, 6).dropout(1.5)); });
  EXPECT_TRUE(contains(e.what(), {"dropout"}));
  e = catch_error([] { nn::RNN(nn::RNNOptions(4, 6).nonlinearity("sigmoid")); });
  EXPECT_TRUE(contains(e.what(), {"nonlinearity", "sigmoid"}));
  e = catch_error([] { nn::LSTM(nn::LSTMOptions(4, 6).proj_size(6)); });
  EXPECT_TRUE(contains(e.what(), {"proj_size", "hidden_size"}));
  e = catch_error([] { rnn::pack_padded_sequence(rnd({5, 3, 2}), tensor({2, 5, 3})); });
  EXPECT_TRUE(contains(e.what(), {"decreasing", "enforce_sorted"}));
}

TEST(NNRNN, Printing) {
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2).dropout(0.5));
  EXPECT_EQ(printed(*lstm),
            "retorch::nn::LSTM(input_size=4, hidden_size=6, num_layers=2, bias=true, "
            "batch_first=false, dropout=0.5, bidirectional=false)");
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  EXPECT_EQ(printed(*layer),
            "retorch::nn::TransformerEncoderLayer(\n"
            "  (self_attn): retorch::nn::MultiheadAttention(\n"
            "    (out_proj): retorch::nn::Linear(in_features=8, out_features=8, bias=true)\n"
            "  )\n"
            "  (linear1): retorch::nn::Linear(in_features=8, out_features=16, bias=true)\n"
            "  (dropout): retorch::nn::Dropout(p=0.1, inplace=false)\n"
            "  (linear2): retorch::nn::Linear(in_features=16, out_features=8, bias=true)\n"
            "  (norm1): retorch::nn::LayerNorm([8], elementwise_affine=true, eps=1e-05)\n"
            "  (norm2): retorch::nn::LayerNorm([8], elementwise_affine=true, eps=1e-05)\n"
            "  (dropout1): retorch::nn::Dropout(p=0.1, inplace=false)\n"
            "  (dropout2): retorch::nn::Dropout(p=0.1, inplace=false)\n"
            ")");
}

TEST(NNAttention, ShapesAndErrors) {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  auto [y, w] = mha(rnd({3, 4, 8}), rnd({3, 5, 8}), rnd({3, 5, 8}));
  EXPECT_EQ(shape(y), (std::vector<int64_t>{3, 4, 8}));
  EXPECT_EQ(shape(w), (std::vector<int64_t>{3, 4, 5}));
  auto [y2, w2] = mha(rnd({3, 4, 8}), rnd({3, 5, 8}), rnd({3, 5, 8}), Tensor(), false);
  EXPECT_FALSE(w2.defined());
  auto names = mha->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                             "out_proj.bias"}));
  Error e = catch_error([] { nn::MultiheadAttention(10, 3); });
  EXPECT_TRUE(contains(e.what(), {"MultiheadAttention", "divisible", "10", "3"}));
  e = catch_error([&] { mha(rnd({3, 4, 6}), rnd({3, 5, 8}), rnd({3, 5, 8})); });
  EXPECT_TRUE(contains(e.what(), {"MultiheadAttention", "8"}));
  nn::MultiheadAttention sep(nn::MultiheadAttentionOptions(8, 2).kdim(3).vdim(5));
  EXPECT_FALSE(sep->in_proj_weight.defined());
  EXPECT_EQ(shape(sep->k_proj_weight), (std::vector<int64_t>{8, 3}));
}

TEST(NNTransformer, ShapesMaskAndClonedLayers) {
  Tensor mask = nn::TransformerImpl::generate_square_subsequent_mask(3);
  EXPECT_EQ(values(mask.isinf()), (std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  nn::TransformerEncoder enc(nn::TransformerEncoderOptions(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16), 2));
  auto sd = enc->state_dict();
  EXPECT_TRUE(sd.contains("layers.1.self_attn.in_proj_weight"));
  // See Note [Cloned layers]: the copies start equal.
  EXPECT_TRUE(all_close(sd["layers.0.linear1.weight"], sd["layers.1.linear1.weight"], 0, 0));
  nn::Transformer t(nn::TransformerOptions(8, 2, 1, 1).dim_feedforward(16).dropout(0.0));
  Error e = catch_error([&] { t(rnd({5, 2, 8}), rnd({4, 2, 8}), Tensor(), mask); });
  EXPECT_TRUE(contains(e.what(), {"attn_mask", "[3, 3]", "(4, 4)"}));
  e = catch_error([&] { t(rnd({5, 2, 8}), rnd({4, 3, 8})); });
  EXPECT_TRUE(contains(e.what(), {"batch number"}));
  e = catch_error([] {
    nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).activation("tanh"));
  });
  EXPECT_TRUE(contains(e.what(), {"relu/gelu", "tanh"}));
  Tensor y = t(rnd({5, 2, 8}), rnd({4, 2, 8}), Tensor(),
               nn::TransformerImpl::generate_square_subsequent_mask(4));
  EXPECT_EQ(shape(y), (std::vector<int64_t>{4, 2, 8}));
}

TEST(NNRNN, DropoutBetweenLayersOnlyInTraining) {
  manual_seed(5);
  nn::GRU gru(nn::GRUOptions(3, 8).num_layers(2).dropout(0.5));
  Tensor x = rnd({4, 2, 3});
  gru->eval();
  Tensor a = std::get<0>(gru(x)), b = std::get<0>(gru(x));
  EXPECT_TRUE(all_close(a, b, 0, 0));
  gru->train();
  Tensor c = std::get<0>(gru(x));
  EXPECT_FALSE(all_close(a, c, 1e-6, 1e-6));
  // A single layer has no "between layers": training changes nothing.
  nn::GRU one(nn::GRUOptions(3, 8).dropout(0.5));
  Tensor d = std::get<0>(one(x));
  one->eval();
  EXPECT_TRUE(all_close(d, std::get<0>(one(x)), 0, 0));
}

// The module's parameters are gradcheck inputs too: gradcheck perturbs them in place.
TEST(NNRNN, GradcheckLSTMAndGRU) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(2, 3).bidirectional(true).proj_size(2));
  lstm->to(kDouble);
  variable_list in{rnd({3, 2, 2}, kDouble).requires_grad_(),
                   rnd({2, 2, 2}, kDouble).requires_grad_(),
                   rnd({2, 2, 3}, kDouble).requires_grad_()};
  for (const Tensor& p : lstm->parameters()) in.push_back(p);
  EXPECT_TRUE(gradcheck(
      [&](const variable_list& v) {
        auto [y, s] = lstm(v[0], std::make_tuple(v[1], v[2]));
        return variable_list{y, std::get<0>(s), std::get<1>(s)};
      },
      in));

  nn::GRU gru(nn::GRUOptions(2, 3).num_layers(2));
  gru->to(kDouble);
  variable_list gin{rnd({4, 2, 2}, kDouble).requires_grad_()};
  for (const Tensor& p : gru->parameters()) gin.push_back(p);
  Tensor lengths = tensor({4, 2});
  EXPECT_TRUE(gradcheck(
      [&](const variable_list& v) {
        auto [y, h] = gru(rnn::pack_padded_sequence(v[0], lengths));
        return variable_list{y.data(), h};
      },
      gin));
}

TEST(NNAttention, GradcheckMultiheadAttention) {
  manual_seed(4);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(2));
  mha->to(kDouble);
  Tensor kpm = tensor({false, false, true, false, false, false}).view({2, 3});
  variable_list in{rnd({2, 2, 4}, kDouble).requires_grad_(),
                   rnd({3, 2, 3}, kDouble).requires_grad_(),
                   rnd({3, 2, 2}, kDouble).requires_grad_()};
  for (const Tensor& p : mha->parameters()) in.push_back(p);
  EXPECT_TRUE(gradcheck(
      [&](const variable_list& v) {
        auto [y, w] = mha(v[0], v[1], v[2], kpm);
        return variable_list{y, w};
      },
      in));
}
