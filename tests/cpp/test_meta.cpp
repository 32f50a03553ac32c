// The meta device: shapes and dtypes without data, from the CPU kernels' own shape logic (Note
// [Meta through CPU kernels]); model dry runs, meta autograd, JIT shape propagation on meta.
#include <gtest/gtest.h>

#include "retorch/jit/Parser.h"
#include "retorch/jit/passes/Passes.h"
#include "retorch/nn/Summary.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {
const Device kMetaDevice(kMeta);

nn::Sequential make_convnet() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8),
                        nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(8 * 14 * 14, 10));
}
}  // namespace

TEST(Meta, TensorsHaveShapesAndNoData) {
  Tensor x = empty({2, 3}, TensorOptions().device(kMetaDevice));
  EXPECT_EQ(x.device(), kMetaDevice);
  EXPECT_EQ(x.toString(), "tensor(..., device='meta', size=(2, 3))");
  try {
    (void)x.data_ptr();
    FAIL() << "data_ptr of a meta tensor";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotImplemented);
    EXPECT_NE(std::string(e.what()).find("meta tensors have shapes and dtypes but no data"),
              std::string::npos);
  }
  EXPECT_THROW(x.to(Device(kCPU)), Error);
  EXPECT_THROW((void)(x + ones({2, 3})), Error);  // meta and cpu do not mix
  EXPECT_THROW(nonzero(x), Error);                // no meta kernel: a clear error, not a crash
}

TEST(Meta, OpsGiveTheShapesDtypesAndStridesOfRealExecution) {
  Tensor a = randn({4, 1, 5}), b = randn({3, 1}).to(kDouble), w = randn({5, 6});
  auto meta = [](const Tensor& t) {
    return empty_strided(t.sizes(), t.strides(), TensorOptions(t.dtype()).device(kMetaDevice));
  };
  std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&,
                                                          const Tensor&)>>> cases = {
      {"add", [](auto& x, auto& y, auto&) { return x + y; }},
      {"exp.t", [](auto& x, auto&, auto&) { return x.transpose(0, 2).exp(); }},
      {"matmul", [](auto& x, auto&, auto& z) { return x.matmul(z); }},
      {"sum", [](auto& x, auto&, auto&) { return x.sum({0, 2}, true); }},
      {"softmax", [](auto& x, auto&, auto&) { return x.softmax(2); }},
      {"max", [](auto& x, auto&, auto&) { return std::get<1>(x.max(2)); }},
      {"cat", [](auto& x, auto&, auto&) { return cat({x, x}, 1); }},
      {"lt", [](auto& x, auto& y, auto&) { return x.lt(y); }},
  };
  for (auto& [name, f] : cases) {
    Tensor real = f(a, b, w), m = f(meta(a), meta(b), meta(w));
    EXPECT_EQ(m.device(), kMetaDevice) << name;
    EXPECT_EQ(shape(m), shape(real)) << name;
    EXPECT_EQ(m.dtype(), real.dtype()) << name;
    EXPECT_EQ(strides(m), strides(real)) << name;
  }
}

TEST(Meta, ModelsTrainOnMetaWithoutData) {
  nn::Sequential net = make_convnet();
  net->to(kMetaDevice);
  Tensor x = empty({4, 1, 28, 28}, TensorOptions().device(kMetaDevice));
  Tensor y = empty({4}, TensorOptions(kLong).device(kMetaDevice));
  Tensor loss = cross_entropy(net->forward(x), y);
  EXPECT_EQ(loss.device(), kMetaDevice);
  EXPECT_EQ(loss.dim(), 0);
  loss.backward();
  for (const auto& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().device(), kMetaDevice);
    EXPECT_EQ(shape(p.grad()), shape(p));
  }
}

TEST(Meta, SummaryOfAMetaModelIsADryRun) {
  nn::Sequential cpu_net = make_convnet();
  nn::Sequential meta_net = make_convnet();
  meta_net->to(kMetaDevice);
  nn::ModelSummary a = nn::summary(*cpu_net, {2, 1, 28, 28});
  nn::ModelSummary b = nn::summary(*meta_net, {2, 1, 28, 28});
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].layer, b.rows[i].layer);
    EXPECT_EQ(a.rows[i].output_shape, b.rows[i].output_shape);
    EXPECT_EQ(a.rows[i].params, b.rows[i].params);
  }
  EXPECT_EQ(a.total_params, b.total_params);
}

TEST(Meta, JitShapePropagationRunsOnMetaAndKeepsTheDevice) {
  auto g = jit::parse_ir(
      "graph(%x : Float(64, 128, strides=[128, 1], requires_grad=0, device=cpu),\n"
      "      %w : Float(128, 32, strides=[32, 1], requires_grad=1, device=cpu)):\n"
      "  %y : Tensor = aten::mm(%x, %w)\n"
      "  %z : Tensor = aten::relu(%y)\n"
      "  return (%z)\n");
  jit::propagate_shapes(*g);
  EXPECT_NE(g->str().find("Float(64, 32, strides=[32, 1], requires_grad=1, device=cpu) = aten::relu"),
            std::string::npos)
      << g->str();
}
