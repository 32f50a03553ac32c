// nn modules through the libtorch-shaped C++ API: registration, state dicts, printing, train/eval,
// dtype conversion, default initialization, containers, summary, utilities and bad input.
#include <sstream>

#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;
namespace nn = retorch::nn;

namespace {

// The ConvNet of the training demo, written the way a libtorch user writes a model.
struct NetImpl : nn::Module {
  NetImpl() : nn::Module("Net") {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)));
    bn1 = register_module("bn1", nn::BatchNorm2d(4));
    fc = register_module("fc", nn::Linear(4 * 4 * 4, 10));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = max_pool2d(relu(bn1(conv1(x))), {2, 2});
    return fc(h.flatten(1));
  }
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  nn::Linear fc{nullptr};
};
RETORCH_MODULE(Net);

}  // namespace

TEST(NN, LinearForwardAndDefaultInit) {
  manual_seed(0);
  nn::Linear lin(nn::LinearOptions(400, 30));
  const double bound = 1.0 / std::sqrt(400.0);
  // kaiming_uniform(a=sqrt(5)) and the bias both give U(-1/sqrt(in), 1/sqrt(in)), as in torch.
  for (const Tensor& t : {lin->weight, lin->bias}) {
    auto v = values(t);
    double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    EXPECT_GE(lo, -bound);
    EXPECT_LE(hi, bound);
    EXPECT_LT(lo, -0.9 * bound);
    EXPECT_GT(hi, 0.9 * bound);
  }
  Tensor x = randn({5, 400});
  EXPECT_TRUE(all_close(lin(x), x.matmul(lin->weight.t()) + lin->bias, 1e-5, 1e-5));
  EXPECT_TRUE(lin->weight.requires_grad());
  EXPECT_EQ(lin->parameters().size(), 2u);
  nn::Linear nobias(nn::LinearOptions(3, 2).bias(false));
  EXPECT_EQ(nobias->parameters().size(), 1u);
}

TEST(NN, NamedParametersBuffersAndStateDict) {
  Net net;
  std::vector<std::string> expected = {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias",
                                       "fc.weight",    "fc.bias"};
  EXPECT_EQ(net->named_parameters().keys(), expected);
  std::vector<std::string> bufs = {"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked"};
  EXPECT_EQ(net->named_buffers().keys(), bufs);
  auto sd = net->state_dict();
  EXPECT_EQ(sd.size(), 9u);
  EXPECT_FALSE(sd["fc.weight"].requires_grad());

  Net other;
  other->load_state_dict(sd);
  EXPECT_TRUE(all_close(other->fc->weight, net->fc->weight, 0, 0));
  // Loading copies values: later changes to the source do not leak into the loaded model.
  {
    NoGradGuard g;
    net->fc->weight.add_(1.0);
  }
  EXPECT_FALSE(all_close(other->fc->weight, net->fc->weight, 0, 0));
}

TEST(NN, LoadStateDictErrorsListNamesAndShapes) {
  Net net;
  auto sd = net->state_dict();
  OrderedDict<Tensor> bad;
  for (const auto& [k, v] : sd)
    if (k != "bn1.bias") bad.insert(k, k == "fc.weight" ? zeros({10, 5}) : v);
  bad.insert("extra.weight", zeros({1}));
  Error e = catch_error([&] { net->load_state_dict(bad); });
  EXPECT_TRUE(contains(e.what(), {"Missing key(s)", "\"bn1.bias\"", "Unexpected key(s)",
                                  "\"extra.weight\"", "fc.weight", "[10, 5]", "[10, 64]"}))
      << e.what();
  // Non-strict loading ignores key differences but never shape differences.
  bad["fc.weight"] = zeros({10, 64});
  net->load_state_dict(bad, /*strict=*/false);
  EXPECT_TRUE(all_close(net->fc->weight, zeros({10, 64}), 0, 0));
}

TEST(NN, PrintsLikeLibtorch) {
  nn::Sequential seq(nn::Conv2d(nn::Conv2dOptions(1, 16, 5).padding(2)), nn::BatchNorm2d(16),
                     nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(3136, 10),
                     nn::Dropout(0.25));
  std::ostringstream os;
  os << seq;
  EXPECT_EQ(os.str(),
            "retorch::nn::Sequential(\n"
            "  (0): retorch::nn::Conv2d(1, 16, kernel_size=[5, 5], stride=[1, 1], padding=[2, 2])\n"
            "  (1): retorch::nn::BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=true, "
            "track_running_stats=true)\n"
            "  (2): retorch::nn::ReLU()\n"
            "  (3): retorch::nn::MaxPool2d(kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], "
            "dilation=[1, 1], ceil_mode=false)\n"
            "  (4): retorch::nn::Flatten(start_dim=1, end_dim=-1)\n"
            "  (5): retorch::nn::Linear(in_features=3136, out_features=10, bias=true)\n"
            "  (6): retorch::nn::Dropout(p=0.25, inplace=false)\n"
            ")");
  EXPECT_EQ(seq(zeros({2, 1, 28, 28})).sizes().vec(), (std::vector<int64_t>{2, 10}));
}

TEST(NN, TrainEvalAndBatchNormRunningStats) {
  manual_seed(3);
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(3).momentum(0.2));
  Tensor x = randn({4, 3, 5, 5}) * 2.0 + 1.0;
  bn(x);
  Tensor mean = x.mean(std::vector<int64_t>{0, 2, 3});
  Tensor var = x.var(std::vector<int64_t>{0, 2, 3}, /*unbiased=*/true);
  EXPECT_TRUE(all_close(bn->running_mean, mean * 0.2, 1e-5, 1e-6));
  EXPECT_TRUE(all_close(bn->running_var, var * 0.2 + 0.8, 1e-5, 1e-6));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  Net net;
  net->eval();
  EXPECT_FALSE(net->bn1->is_training());
  Tensor before = net->bn1->running_mean.clone();
  net(randn({2, 1, 8, 8}));
  EXPECT_TRUE(all_close(net->bn1->running_mean, before, 0, 0));  // eval: statistics frozen
  net->train();
  EXPECT_TRUE(net->conv1->is_training());
}

TEST(NN, ToDtypeKeepsParameterIdentity) {
  Net net;
  Tensor w = net->fc->weight;
  net(randn({2, 1, 8, 8})).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  net->to(kDouble);
  EXPECT_EQ(w.dtype(), kDouble);  // the handle the module and an optimizer hold is converted
  EXPECT_EQ(w.grad().dtype(), kDouble);
  EXPECT_EQ(net->bn1->num_batches_tracked.dtype(), kLong);  // integer buffers keep their dtype
  EXPECT_EQ(net(randn({2, 1, 8, 8}, std::nullopt, TensorOptions(kDouble))).dtype(), kDouble);
  net->zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(NN, ContainersAndHolders) {
  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU());
  list->push_back(nn::Linear(3, 1));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->ptr<nn::LinearImpl>(2)->options.in_features(), 3);
  EXPECT_EQ(list->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  catch_error([&] { list->ptr<nn::LinearImpl>(1); });
  catch_error([&] { (*list)[7]; });
  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(4, 4));
  EXPECT_TRUE(dict->contains("enc"));
  catch_error([&] { dict->insert("enc", nn::ReLU()); });
  nn::Linear a(2, 2);
  nn::Linear b = a;  // holders share the module, like libtorch
  EXPECT_EQ(a.get(), b.get());
  nn::ReLU relu_module;
  nn::Sequential s1(relu_module);
  nn::Sequential s2 = s1;
  EXPECT_EQ(s1.get(), s2.get());
  EXPECT_EQ(s2->size(), 1u);
}

TEST(NN, SummaryCountsLayersAndParameters) {
  Net net;
  auto s = nn::summary(*net, {1, 1, 8, 8});
  ASSERT_EQ(s.rows.size(), 3u);  // conv1, bn1, fc (called through holders)
  EXPECT_EQ(s.rows[0].layer, "Conv2d-1");
  EXPECT_EQ(s.rows[0].output_shape, (std::vector<int64_t>{1, 4, 8, 8}));
  EXPECT_EQ(s.rows[0].params, 4 * 9 + 4);
  EXPECT_EQ(s.total_params, 40 + 8 + 64 * 10 + 10);
  EXPECT_TRUE(net->is_training());  // restored
  EXPECT_TRUE(contains(s.to_string(), {"Total params: 698", "Conv2d-1", "Linear-1"}));
}

TEST(NN, InitFunctions) {
  manual_seed(5);
  Tensor w = empty({64, 32});
  nn::init::orthogonal_(w);
  EXPECT_TRUE(all_close(w.t().matmul(w), eye(32), 1e-5, 1e-5));
  Tensor t = empty({10000});
  nn::init::trunc_normal_(t, 0.0, 1.0, -0.5, 0.5);
  auto v = values(t);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), -0.5);
  EXPECT_LE(*std::max_element(v.begin(), v.end()), 0.5);
  Tensor k = empty({256, 128, 3, 3});
  nn::init::kaiming_normal_(k, 0.0, "fan_in", "relu");
  EXPECT_NEAR(k.std().item<double>(), std::sqrt(2.0 / (128 * 9)), 2e-3);
  EXPECT_NEAR(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04), 1e-12);
  catch_error([] { nn::init::calculate_gain("swish"); });
  catch_error([] { nn::init::kaiming_uniform_(empty({3}), 0.0); });
}

TEST(NN, ClipGradNormAndVectors) {
  nn::Linear lin(3, 2);
  lin(ones({4, 3})).sum().backward();
  auto params = lin->parameters();
  Tensor flat = nn::utils::parameters_to_vector(params);
  EXPECT_EQ(flat.numel(), 8);
  double norm = 0;
  for (const auto& p : params) norm += p.grad().pow(2).sum().item<double>();
  norm = std::sqrt(norm);
  EXPECT_NEAR(nn::utils::clip_grad_norm_(params, 1.0), norm, 1e-4);
  double after = 0;
  for (const auto& p : params) after += p.grad().pow(2).sum().item<double>();
  EXPECT_NEAR(std::sqrt(after), 1.0, 1e-4);
  nn::utils::clip_grad_value_(params, 0.1);
  for (const auto& p : params) EXPECT_LE(p.grad().abs().max().item<double>(), 0.1 + 1e-7);
  nn::utils::vector_to_parameters(zeros({8}), params);
  EXPECT_EQ(lin->weight.abs().sum().item<double>(), 0.0);
  catch_error([&] { nn::utils::vector_to_parameters(zeros({7}), params); });
}

TEST(NN, BadOptionsAndInputsRaise) {
  catch_error([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)); });
  catch_error([] { nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding("full")); });
  catch_error([] { nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding("same").stride(2)); });
  catch_error([] { nn::Dropout(1.5); });
  catch_error([] { nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction("avg")); });
  nn::BatchNorm2d bn(3);
  Error e = catch_error([&] { bn(zeros({2, 3, 4})); });
  EXPECT_TRUE(contains(e.what(), {"BatchNorm2d", "4D", "3D"})) << e.what();
  nn::Linear lin(3, 2);
  catch_error([&] { lin(zeros({2, 4})); });
  nn::Module bare;
  catch_error([&] { bare.forward(zeros({1})); });
}

TEST(NN, ModulesMatchFunctionalForms) {
  manual_seed(9);
  Tensor x = randn({2, 3, 6, 6});
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3).padding(1).padding_mode("reflect"));
  Tensor ref = conv2d(pad(x, {1, 1, 1, 1}, "reflect"), conv->weight, conv->bias);
  EXPECT_TRUE(all_close(conv(x), ref, 1e-5, 1e-5));
  nn::Conv2d same(nn::Conv2dOptions(3, 4, 4).padding("same"));
  EXPECT_EQ(same(x).sizes().vec(), (std::vector<int64_t>{2, 4, 6, 6}));
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(3, 2, 2).stride(2));
  EXPECT_EQ(up(x).sizes().vec(), (std::vector<int64_t>{2, 2, 12, 12}));
  nn::Embedding emb(nn::EmbeddingOptions(10, 4).padding_idx(0));
  EXPECT_EQ(emb->weight.select(0, 0).abs().sum().item<double>(), 0.0);
  Tensor ids = tensor({{1, 2}, {0, 3}}).to(kLong);
  EXPECT_TRUE(all_close(emb(ids), embedding(emb->weight, ids), 0, 0));
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(10, 4).mode("sum"));
  EXPECT_TRUE(all_close(bag(ids), embedding(bag->weight, ids).sum(1), 1e-6, 1e-6));
  nn::Bilinear bil(3, 4, 2);
  Tensor a = randn({5, 3}), b = randn({5, 4});
  Tensor expect = einsum("bi,oij,bj->bo", {a, bil->weight, b}) + bil->bias;
  EXPECT_TRUE(all_close(bil(a, b), expect, 1e-5, 1e-5));
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().label_smoothing(0.1));
  Tensor logits = randn({4, 5}), y = tensor({0, 1, 2, 3}).to(kLong);
  EXPECT_TRUE(all_close(ce(logits, y), cross_entropy(logits, y, std::nullopt, -100, "mean", 0.1),
                        0, 0));
  nn::PReLU prelu;
  EXPECT_TRUE(all_close(prelu(tensor({-2.0f, 3.0f})), tensor({-0.5f, 3.0f}), 1e-6, 1e-6));
  nn::LayerNorm ln(nn::LayerNormOptions({6}));
  EXPECT_TRUE(all_close(ln(x), layer_norm(x, {6}), 1e-6, 1e-6));
  nn::Unflatten unf(nn::UnflattenOptions(1, {3, 1}));
  EXPECT_EQ(unf(x).sizes().vec(), (std::vector<int64_t>{2, 3, 1, 6, 6}));
}

// The README's training loop, on a small learnable problem: the loss must fall.
TEST(NN, ReadmeTrainingLoopLearns) {
  manual_seed(11);
  Tensor x = randn({400, 1, 8, 8});
  Tensor y = (x.mean(std::vector<int64_t>{1, 2, 3}) > 0).to(kLong);  // learnable labels
  Net net;
  optim::Adam opt(net->parameters(), optim::AdamOptions(1e-2));
  data::DataLoader loader(std::make_shared<data::TensorDataset>(x, y),
                          data::DataLoaderOptions(50).shuffle(true).num_workers(1));
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    double total = 0;
    for (data::Example& batch : loader) {
      Tensor loss = cross_entropy(net(batch.data), batch.target);
      opt.zero_grad();
      loss.backward();
      opt.step();
      total += loss.item<double>();
    }
    (epoch == 0 ? first : last) = total;
  }
  EXPECT_LT(last, 0.5 * first);
  std::string path = ::testing::TempDir() + "/readme_net.safetensors";
  save(*net, path);
  Net other;
  load(*other, path);
  EXPECT_TRUE(all_close(other->fc->weight, net->fc->weight, 0, 0));
  nn::Linear wrong(3, 3);
  Error e = catch_error([&] { load(*wrong, path); });
  EXPECT_TRUE(contains(e.what(), {"readme_net.safetensors", "Missing key(s)", "conv1.weight"}))
      << e.what();
}

TEST(NN, SaveLoadTensorsAndOptimizers) {
  const std::string dir = ::testing::TempDir();
  Tensor t = randn({3, 4}).t();  // non-contiguous: written contiguous, read back equal
  save(t, dir + "/t.safetensors");
  Tensor back;
  load(back, dir + "/t.safetensors");
  EXPECT_TRUE(all_close(back, t, 0, 0));
  save(std::vector<Tensor>{t, arange(5)}, dir + "/list.safetensors");
  std::vector<Tensor> list;
  load(list, dir + "/list.safetensors");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].dtype(), kLong);
  catch_error([&] { load(back, dir + "/list.safetensors"); });
  Net net;
  optim::Adam opt(net->parameters(), optim::AdamOptions(1e-3));
  net(randn({2, 1, 8, 8})).sum().backward();
  opt.step();
  save(opt, dir + "/opt.safetensors");
  optim::Adam other(net->parameters(), optim::AdamOptions(1e-3));
  load(other, dir + "/opt.safetensors");
  EXPECT_TRUE(all_close(other.state_dict()["state.0.0.exp_avg"],
                        opt.state_dict()["state.0.0.exp_avg"], 0, 0));
}
