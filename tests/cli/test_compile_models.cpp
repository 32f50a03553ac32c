// The CLI's seed models (tools/cli/Models.h) trained through retorch::compile (compiled backward
// kernels included): 20 SGD steps give the losses of the same model trained eagerly from the same
// initialization, to 1e-5; and
// `retorch compile --model M --benchmark` reports kernels and timings.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "retorch/compiler/Compiler.h"
#include "retorch/retorch.h"
#include "tests/cli/CliRun.h"
#include "tools/cli/Models.h"

using namespace retorch;

namespace {

// Nodes named `name` in the autograd graph behind t.
size_t count_nodes(const Tensor& t, const std::string& name) {
  std::vector<std::shared_ptr<autograd::Node>> todo = {t.grad_fn()};
  std::set<autograd::Node*> seen;
  size_t n = 0;
  while (!todo.empty()) {
    std::shared_ptr<autograd::Node> f = todo.back();
    todo.pop_back();
    if (!f || !seen.insert(f.get()).second) continue;
    n += f->name() == name;
    for (const autograd::Edge& e : f->next_edges()) todo.push_back(e.function);
  }
  return n;
}

// Losses of 20 steps of SGD with momentum on two fixed random batches, alternately (so the loss
// falls as they are memorized); `compiled` runs the forward through retorch::compile.
std::vector<double> train(const std::string& name, bool compiled, std::vector<int64_t> shape) {
  manual_seed(0);
  std::shared_ptr<nn::Module> m = cli::make_model(name);
  m->train();
  optim::SGD opt(m->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  std::optional<compiler::CompiledFunction> f;
  if (compiled) f = compile(*m);
  manual_seed(1);
  std::vector<Tensor> xs = {randn(shape), randn(shape)};
  std::vector<Tensor> ys = {randint(0, 10, {shape[0]}), randint(0, 10, {shape[0]})};
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    const Tensor& x = xs[size_t(step % 2)];
    const Tensor& y = ys[size_t(step % 2)];
    opt.zero_grad();
    Tensor out = compiled ? (*f)({x})[0] : m->forward(x);
    Tensor loss = cross_entropy(out, y);
    // Compiled: the ReLU kernels differentiate through their generated backward kernels.
    if (compiled && step == 0) EXPECT_GE(count_nodes(loss, "CompiledKernelBackward"), 1u) << name;
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  if (compiled) EXPECT_GE(f->num_compiled(), 1u) << name;
  return losses;
}

class CompileModelsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("retorch_compile_models_" + std::to_string(::getpid()));
    ::setenv("RETORCH_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    ::unsetenv("RETORCH_CACHE_DIR");
  }
  std::filesystem::path dir_;
};

TEST_P(CompileModelsTest, TwentyStepsMatchEagerLosses) {
  const std::string name = GetParam();
  std::vector<int64_t> shape = name == "mlp" ? std::vector<int64_t>{32, 784}
                                             : std::vector<int64_t>{16, 1, 28, 28};
  std::vector<double> eager = train(name, false, shape), comp = train(name, true, shape);
  ASSERT_EQ(eager.size(), comp.size());
  for (size_t i = 0; i < eager.size(); ++i)
    EXPECT_NEAR(comp[i], eager[i], 1e-5 * std::max(1.0, std::abs(eager[i])))
        << name << " step " << i;
  EXPECT_LT(eager[18], eager[0]) << name << ": the run should learn its first batch";
}

INSTANTIATE_TEST_SUITE_P(SeedModels, CompileModelsTest,
                         ::testing::Values("mlp", "lenet", "convnet", "resnet"));

// Runs the built `retorch` with args; returns the exit code (-1 on a signal) and the output.

TEST_F(CompileModelsTest, CliCompilesAndBenchmarksAModel) {
  const std::string cli = RETORCH_CLI;
  auto [status, out] =
      cli_test::run_command(cli + " compile --model lenet --batch-size 8 --benchmark --source");
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("lenet, batch 8: "), std::string::npos) << out;
  EXPECT_NE(out.find("max |compiled - eager| 0"), std::string::npos) << out;
  EXPECT_NE(out.find("  cpp_fused_relu_0"), std::string::npos) << out;
  EXPECT_NE(out.find("extern \"C\" void cpp_fused_relu_0"), std::string::npos) << out;
  for (const char* line : {"eager     median", "compiled  median", "speedup   "})
    EXPECT_NE(out.find(line), std::string::npos) << line << " missing in\n" << out;
  auto [bad, err] = cli_test::run_command(cli + " compile --model lenet --batch-size 0");
  EXPECT_NE(bad, 0);
  EXPECT_NE(err.find("batch-size"), std::string::npos) << err;
}

}  // namespace
