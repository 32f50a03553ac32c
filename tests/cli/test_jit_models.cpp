// The CLI's seed models (tools/cli/Models.h) traced with jit::trace: same outputs and parameter
// gradients as eager, and their graphs record the layers' composite ops (aten::linear, ...).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "retorch/jit/Parser.h"
#include "retorch/jit/Serialization.h"
#include "retorch/jit/Tracer.h"
#include "retorch/ops/TensorOperators.h"
#include "retorch/retorch.h"
#include "tools/cli/Models.h"

using namespace retorch;

namespace {

std::vector<Tensor> grads(nn::Module& m, const Tensor& out) {
  m.zero_grad();
  (out * out).sum().backward();
  std::vector<Tensor> g;
  for (const Tensor& p : m.parameters()) g.push_back(p.grad().clone());
  return g;
}

bool close(const Tensor& a, const Tensor& b, double tol) {
  return a.sizes().vec() == b.sizes().vec() && (a - b).abs().max().item<double>() <= tol;
}

void check(const std::string& name, const std::vector<int64_t>& shape,
           const std::vector<std::string>& ops) {
  manual_seed(0);
  std::shared_ptr<nn::Module> m = cli::make_model(name);
  jit::ScriptModule sm = jit::trace(*m, {randn(shape)});
  std::string code = sm.code();
  size_t pos = 0;
  for (const std::string& op : ops) {
    size_t at = code.find(op + "(", pos);
    ASSERT_NE(at, std::string::npos) << name << ": " << op << " missing (in order) in\n" << code;
    pos = at + op.size();
  }
  EXPECT_EQ(code.find("aten::addmm"), std::string::npos) << code;
  EXPECT_EQ(code.find("aten::convolution"), std::string::npos) << code;
  EXPECT_EQ(sm.parameters().size(), m->parameters().size());
  Tensor x = randn(shape);
  Tensor eager = m->forward(x);
  std::vector<Tensor> ge = grads(*m, eager);
  Tensor traced = sm.forward({IValue(x)})[0].to_tensor();
  EXPECT_TRUE(close(traced, eager, 1e-5)) << name;
  std::vector<Tensor> gt = grads(*m, traced);
  ASSERT_EQ(gt.size(), ge.size());
  for (size_t i = 0; i < ge.size(); ++i) EXPECT_TRUE(close(gt[i], ge[i], 1e-4)) << name << " " << i;

  // The printed graph parses back to the same text; a saved archive reloads and runs alike.
  EXPECT_EQ(jit::parse_ir(code)->str(), code);
  auto path = std::filesystem::temp_directory_path() /
              ("retorch_jit_" + name + "_" + std::to_string(::getpid()) + ".rtjit");
  jit::save(sm, path.string());
  jit::ScriptModule loaded = jit::load(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(loaded.code(), code);
  EXPECT_TRUE(close(loaded.forward({IValue(x)})[0].to_tensor(), eager, 1e-5)) << name;
}

}  // namespace

TEST(JitSeedModels, MlpTracesAndMatchesEager) {
  check("mlp", {4, 1, 28, 28}, {"aten::flatten", "aten::linear", "aten::relu", "aten::linear"});
}

TEST(JitSeedModels, ConvNetTracesAndMatchesEager) {
  check("convnet", {2, 1, 28, 28},
        {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::max_pool2d", "aten::conv2d",
         "aten::flatten", "aten::linear"});
}

TEST(JitSeedModels, ResNetTracesAndMatchesEager) {
  check("resnet", {2, 1, 28, 28},
        {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::add", "aten::adaptive_avg_pool2d",
         "aten::linear"});
}
