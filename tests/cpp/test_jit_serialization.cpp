// jit::save / jit::load: archives round-trip modules and functions; damaged archives are errors.
#include <gtest/gtest.h>

#include <fstream>

#include "retorch/io/Safetensors.h"
#include "retorch/jit/Serialization.h"
#include "retorch/jit/Tracer.h"
#include "retorch/nn/nn.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::jit;
using retorch::testing::TempDir;

namespace {

bool close(const Tensor& a, const Tensor& b) {
  return retorch::allclose(a, b, 1e-5, 1e-6);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(JitSerialization, ModuleRoundTripsWithParametersBuffersAndGradients) {
  TempDir dir;
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(2, 3, 3).padding(1)), nn::BatchNorm2d(3),
                     nn::ReLU(), nn::Flatten(), nn::Linear(3 * 4 * 4, 2));
  net->eval();
  auto fwd = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{net(in[0])}; };
  ScriptModule sm = jit::trace(*net, fwd, {randn({2, 2, 4, 4})});
  const std::string path = (dir.path / "net.rtjit").string();
  jit::save(sm, path);

  ScriptModule loaded = jit::load(path);
  EXPECT_EQ(loaded.code(), sm.code());
  ASSERT_EQ(loaded.named_parameters().size(), sm.named_parameters().size());
  ASSERT_EQ(loaded.named_buffers().size(), sm.named_buffers().size());
  for (size_t i = 0; i < sm.named_parameters().size(); ++i) {
    EXPECT_EQ(loaded.named_parameters()[i].first, sm.named_parameters()[i].first);
    EXPECT_TRUE(loaded.named_parameters()[i].second.requires_grad());
    // The loaded tensors are copies, not the originals.
    EXPECT_NE(loaded.named_parameters()[i].second.impl(), sm.named_parameters()[i].second.impl());
  }
  Tensor x = randn({2, 2, 4, 4});
  Tensor want = net(x);
  Tensor got = loaded.forward({IValue(x)})[0].to_tensor();
  EXPECT_TRUE(close(got, want));
  // Gradients flow into the loaded parameters like into the original ones.
  got.sum().backward();
  want.sum().backward();
  EXPECT_TRUE(close(loaded.named_parameters()[0].second.grad(), net->parameters()[0].grad()));
  // `retorch ir` reads the graph out of an archive.
  EXPECT_EQ(archive_graph_text(path), std::optional<std::string>(sm.code()));
}

TEST(JitSerialization, FunctionWithTensorConstantsRoundTrips) {
  TempDir dir;
  Tensor table = arange(12, kFloat).reshape({3, 4});  // captured: becomes a <Tensor> constant
  ScriptFunction f = jit::trace(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{(in[0] * 2 + table).relu()};
      },
      {randn({3, 4})});
  ASSERT_NE(f.code().find("<Tensor>"), std::string::npos) << f.code();
  const std::string path = (dir.path / "f.rtjit").string();
  jit::save(f, path);
  ScriptFunction g = jit::load_function(path);
  Tensor x = randn({3, 4});
  EXPECT_TRUE(close(g({IValue(x)})[0].to_tensor(), (x * 2 + table).relu()));
  EXPECT_NE(error_of([&] { jit::load(path); }).find("holds a function"), std::string::npos);
  LoadedProgram p = load_program(path);
  EXPECT_FALSE(p.is_module);
}

TEST(JitSerialization, DamagedArchivesAreClearErrors) {
  TempDir dir;
  ScriptFunction f = jit::trace(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].exp()}; }, {randn({2})});
  const std::string good = (dir.path / "good.rtjit").string();
  jit::save(f, good);

  // Truncated file: the safetensors reader rejects it before anything else is read.
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = (dir.path / "cut.rtjit").string();
  std::ofstream(cut, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
  EXPECT_THROW(jit::load_function(cut), Error);

  // A plain safetensors file (no JIT metadata).
  const std::string plain = (dir.path / "plain.safetensors").string();
  OrderedDict<Tensor> ts("tensor");
  ts.insert("w", ones({2}));
  io::save_safetensors(plain, ts);
  EXPECT_NE(error_of([&] { jit::load_function(plain); }).find("has no \"retorch.jit\" field"),
            std::string::npos);
  EXPECT_EQ(archive_graph_text(plain), std::nullopt);

  // Graph text that does not parse: the error names the line.
  const std::string bad_graph = (dir.path / "bad.rtjit").string();
  io::save_safetensors(
      bad_graph, ts,
      {{"retorch.jit", "1"},
       {"kind", "function"},
       {"graph", "graph(%x : Tensor):\n  %1 : Tensor = aten::exp(%y)\n  return (%1)\n"}});
  std::string err = error_of([&] { jit::load_function(bad_graph); });
  EXPECT_NE(err.find("does not parse"), std::string::npos) << err;
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;

  // A module whose graph reads an attribute the archive lacks.
  const std::string missing = (dir.path / "missing.rtjit").string();
  io::save_safetensors(missing, ts,
                       {{"retorch.jit", "1"},
                        {"kind", "module"},
                        {"parameters", ""},
                        {"buffers", ""},
                        {"graph",
                         "graph(%self : __torch__.M,\n      %x : Tensor):\n"
                         "  %w : Tensor = prim::GetAttr[name=\"w\"](%self)\n"
                         "  %1 : Tensor = aten::mul(%x, %w)\n  return (%1)\n"}});
  err = error_of([&] { jit::load(missing); });
  EXPECT_NE(err.find("reads attribute 'w'"), std::string::npos) << err;

  // A parameter listed in the metadata without its tensor.
  const std::string lacks = (dir.path / "lacks.rtjit").string();
  io::save_safetensors(
      lacks, ts,
      {{"retorch.jit", "1"},
       {"kind", "module"},
       {"parameters", "v"},
       {"buffers", ""},
       {"graph", "graph(%self : __torch__.M,\n      %x : Tensor):\n  return (%x)\n"}});
  EXPECT_NE(error_of([&] { jit::load(lacks); }).find("lacks tensor \"param:v\""),
            std::string::npos);

  // An unknown format version.
  const std::string future = (dir.path / "future.rtjit").string();
  io::save_safetensors(future, ts, {{"retorch.jit", "99"}, {"kind", "function"}, {"graph", ""}});
  EXPECT_NE(error_of([&] { jit::load_function(future); }).find("archive format 99"),
            std::string::npos);
}
