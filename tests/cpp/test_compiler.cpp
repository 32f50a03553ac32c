// retorch::compile against eager execution: generated kernels (one per fused group), values and
// gradients over dtypes, broadcasting and strided inputs, guards, the code cache (hits,
// tampered objects, private directory) and the eager fallbacks.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "retorch/compiler/Benchmark.h"
#include "retorch/compiler/CodeCache.h"
#include "retorch/compiler/Compiler.h"
#include "retorch/compiler/Nvrtc.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {

// Each test gets its own cache directory.
class CompilerTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("RETORCH_CACHE_DIR", dir_.path.c_str(), 1); }
  void TearDown() override { ::unsetenv("RETORCH_CACHE_DIR"); }
  TempDir dir_{"retorch_compile"};
};

void expect_close(const Tensor& got, const Tensor& want, double rtol = 1.3e-6, double atol = 1e-5) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  ASSERT_EQ(got.dtype(), want.dtype());
  std::vector<double> g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isinf(w[i])) {
      EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]) << "at " << i;
      continue;
    }
    EXPECT_NEAR(g[i], w[i], atol + rtol * std::abs(w[i])) << "at " << i;
  }
}

std::vector<Tensor> tanh_chain(const std::vector<Tensor>& x) { return {(x[0] * 2 + 1).tanh()}; }

}  // namespace

TEST_F(CompilerTest, PointwiseChainIsOneNamedKernel) {
  auto f = compile(tanh_chain);
  Tensor a = randn({1000, 37});
  expect_close(f({a})[0], tanh_chain({a})[0]);
  const auto& info = f.last();
  ASSERT_EQ(info.lowered.kernels.size(), 1u);
  EXPECT_EQ(info.lowered.kernels[0].name, "cpp_fused_add_mul_tanh_0");
  EXPECT_EQ(info.lowered.kernels[0].origins.size(), 3u);  // mul, add, tanh
  EXPECT_NE(info.source.find("extern \"C\" void cpp_fused_add_mul_tanh_0"), std::string::npos);
  EXPECT_NE(info.source.find("#pragma omp simd"), std::string::npos);
  EXPECT_NE(info.source.find("aten::tanh"), std::string::npos);  // the origins comment
  // The wrapper graph calls the kernel instead of the three ops.
  std::string wrapper = info.lowered.graph->str();
  EXPECT_NE(wrapper.find("compiler::CppKernel"), std::string::npos);
  EXPECT_EQ(wrapper.find("aten::tanh"), std::string::npos);
}

TEST_F(CompilerTest, ValuesMatchEagerOverDtypesBroadcastAndStrides) {
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = (x[0] - x[1]).sigmoid() * x[1].exp() + x[0].relu();
    Tensor z = maximum(y, x[0]).neg().abs().sqrt() / (x[1].abs() + 1);
    return std::vector<Tensor>{y, z, (y > x[1]), where(y > 0.5, y, x[1].sin())};
  };
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    // Same shape; a broadcast row; a transposed (strided) operand.
    std::vector<std::vector<Tensor>> cases = {
        {randn({64, 33}).to(dt), randn({64, 33}).to(dt)},
        {randn({64, 33}).to(dt), randn({33}).to(dt)},
        {randn({33, 64}).to(dt).t(), randn({64, 33}).to(dt)},
    };
    for (const auto& in : cases) {
      auto f = compile(fn);
      std::vector<Tensor> got = f(in);
      if (dt == kBFloat16) {
        // Kernels keep float32 between ops (eager rounds each op to bfloat16): compare with the
        // float32 computation on the same values, rounded once.
        std::vector<Tensor> want = fn({in[0].to(kFloat), in[1].to(kFloat)});
        for (size_t i = 0; i < 2; ++i) expect_close(got[i].to(kFloat), want[i], 8e-3, 1e-2);
      } else {
        std::vector<Tensor> want = fn(in);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-6, 1e-6);
      }
      // One kernel over the output shape; with a broadcast row, its exp, abs + 1 and sin run
      // over the row's own shape first (three kernels: the full-shape chain reads each of them
      // before the next row op is reached).
      EXPECT_EQ(f.last().lowered.kernels.size(), in[1].dim() == 1 ? 4u : 1u) << dtype_name(dt);
    }
  }
}

TEST_F(CompilerTest, EdgeValuesMatchEager) {
  auto fn = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{x[0].tanh(), x[0].exp(), x[0].sigmoid(), x[0].relu(),
                               clamp(x[0], -1.0, 2.0), gelu(x[0]), x[0].log1p()};
  };
  Tensor a = tensor({0.f, -0.f, 1e-8f, -3.f, 0.4999f, 0.5f, 8.99f, 9.f, 20.f, -20.f, 88.f, 89.f,
                     -88.f, -104.f, INFINITY, -INFINITY, NAN});
  auto f = compile(fn);
  std::vector<Tensor> got = f({a}), want = fn({a});
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i]);
}

TEST_F(CompilerTest, ExternsRunBetweenKernels) {
  // mm is an extern; the pointwise ops on either side become kernels.
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor h = mm((x[0] * 0.5).tanh(), x[1]);
    return std::vector<Tensor>{(h + 1).relu() * 3};
  };
  Tensor a = randn({32, 16}), w = randn({16, 8});
  auto f = compile(fn);
  expect_close(f({a, w})[0], fn({a, w})[0]);
  EXPECT_EQ(f.last().lowered.kernels.size(), 2u);
}

TEST_F(CompilerTest, GuardsRecompileOnNewShapesOnly) {
  auto f = compile(tanh_chain);
  f({randn({8, 8})});
  f({randn({8, 8})});
  EXPECT_EQ(f.num_compiled(), 1u);
  Tensor b = randn({5, 3});
  expect_close(f({b})[0], tanh_chain({b})[0]);
  EXPECT_EQ(f.num_compiled(), 2u);
  f({randn({8, 8}).to(kDouble)});  // a new dtype
  EXPECT_EQ(f.num_compiled(), 3u);
  Tensor c = randn({8, 8}).t();  // new strides
  expect_close(f({c})[0], tanh_chain({c})[0]);
  EXPECT_EQ(f.num_compiled(), 4u);
}

TEST_F(CompilerTest, GradientsMatchEager) {
  auto fn = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{((x[0] * x[1]).tanh() + x[0].sigmoid()).sum()};
  };
  Tensor a = randn({6, 5}).requires_grad_(true), b = randn({6, 5}).requires_grad_(true);
  auto f = compile(fn);
  f({a, b})[0].backward();
  Tensor ga = a.grad().clone(), gb = b.grad().clone();
  a.grad().zero_();
  b.grad().zero_();
  fn({a, b})[0].backward();
  expect_close(ga, a.grad());
  expect_close(gb, b.grad());
}

TEST_F(CompilerTest, ModuleCompilesAndSeesParameterUpdates) {
  nn::Sequential mlp(nn::Linear(12, 16), nn::Tanh(), nn::Linear(16, 4), nn::Sigmoid());
  auto f = compile(*mlp);
  Tensor x = randn({10, 12});
  NoGradGuard ng;
  expect_close(f({x})[0], mlp->forward(x));
  EXPECT_GE(f.last().lowered.kernels.size(), 1u);
  for (Tensor& p : mlp->parameters()) p.mul_(0.5);
  expect_close(f({x})[0], mlp->forward(x));
  EXPECT_EQ(f.num_compiled(), 1u);
}

TEST_F(CompilerTest, SecondLoadHitsTheCacheAndTamperedObjectsAreRebuilt) {
  Tensor a = randn({100});
  std::string object;
  {
    auto f = compile(tanh_chain);
    f({a});
    EXPECT_FALSE(f.last().cache_hit);
    object = f.last().object;
  }  // the library is unloaded with its last user
  {
    auto f = compile(tanh_chain);
    expect_close(f({a})[0], tanh_chain({a})[0]);
    EXPECT_TRUE(f.last().cache_hit);
  }
  {
    std::fstream obj(object, std::ios::in | std::ios::out | std::ios::binary);
    obj.seekp(100);
    obj.put('\x5a');
  }
  compiler::BuildInfo info;
  auto f = compile(tanh_chain);
  f({a});
  compiler::build_or_load(f.last().source, &info);
  EXPECT_FALSE(f.last().cache_hit);  // the tampered object was not trusted
  expect_close(f({a})[0], tanh_chain({a})[0]);
  struct stat st {};
  ASSERT_EQ(::stat((dir_.path / "compiler").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "the cache directory must be private";
}

TEST_F(CompilerTest, BuildFailureRunsEagerly) {
  ::setenv("RETORCH_CXX", "/nonexistent/c++", 1);
  auto f = compile(tanh_chain);
  Tensor a = randn({10});
  Tensor got = f({a})[0];
  ::unsetenv("RETORCH_CXX");
  expect_close(got, tanh_chain({a})[0]);
  EXPECT_EQ(f.eager_calls(), 1u);
  EXPECT_EQ(f.num_compiled(), 0u);
}

TEST_F(CompilerTest, SumThenDivideIsOneReductionKernel) {
  auto fn = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{(x[0] * x[0]).sum({-1}) / 4 + x[1]};
  };
  Tensor a = randn({300, 70}), b = randn({300});
  auto f = compile(fn);
  expect_close(f({a, b})[0], fn({a, b})[0], 1e-5, 1e-5);
  const auto& k = f.last().lowered.kernels;
  ASSERT_EQ(k.size(), 1u);  // prologue (mul), sum, epilogue (div, add) in one loop
  EXPECT_EQ(k[0].reductions.size(), 1u);
  EXPECT_NE(f.last().source.find("reduction(+:acc0)"), std::string::npos);
}

TEST_F(CompilerTest, ReductionsMatchEager) {
  auto fn = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{x[0].exp().mean({-2, -1}, true), amax(x[0], {-1}),
                               (x[0] - 1).sum({2}).relu()};
  };
  Tensor a = randn({6, 33, 20});
  a.select(0, 0).select(0, 3).select(0, 5).fill_(NAN);
  a.select(0, 1).select(0, 2).fill_(-INFINITY);  // a row of -inf: its max is -inf
  for (const Tensor& in : {a, a.transpose(1, 2).contiguous().transpose(1, 2), a.to(kDouble)}) {
    auto f = compile(fn);
    std::vector<Tensor> got = f({in}), want = fn({in});
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-5, 1e-5);
    // exp + mean over two dims; amax and (x - 1).sum(2).relu() share rows of one dim.
    EXPECT_EQ(f.last().lowered.kernels.size(), 2u);
  }
  Tensor h = randn({16, 64}).to(kBFloat16);
  auto f = compile(fn);
  std::vector<Tensor> got = f({h.unsqueeze(0)});
  std::vector<Tensor> want = fn({h.unsqueeze(0).to(kFloat)});
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i].to(kFloat), want[i], 8e-3, 1e-2);
}

TEST_F(CompilerTest, RowKernelsFuseNormsSoftmaxAndTheirEpilogues) {
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor z = x[0] * 0.5 + x[2];
    return std::vector<Tensor>{gelu(layer_norm(x[0], {x[0].size(-1)}, x[1], x[2])) + x[0],
                               softmax(z, -1), log_softmax(z, -1),
                               var(x[0], IntArrayRef({-1}), std::optional<int64_t>(1))};
  };
  Tensor a = randn({40, 96}) * 3, w = randn({96}), b = randn({96});
  for (const Tensor& in : {a, a.to(kDouble)}) {
    std::vector<Tensor> ins = {in, w.to(in.dtype()), b.to(in.dtype())};
    auto f = compile(fn);
    std::vector<Tensor> got = f(ins), want = fn(ins);
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-5, 1e-5);
    const auto& k = f.last().lowered.kernels;
    ASSERT_EQ(k.size(), 1u);  // every row op and its epilogue in one loop over rows
    EXPECT_EQ(k[0].reduce_dims, 1u);
    EXPECT_EQ(k[0].reductions.size(), 8u);  // two passes each
  }
}

TEST_F(CompilerTest, CudaEmulatedKernelsMatchEager) {
  // The CUDA emitter's kernels built for the host (Note [CUDA kernels]): pointwise with a
  // transposed operand, and row kernels, over more work than the emulated grid's threads.
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = (x[0] - x[1]).sigmoid() * x[1].exp() + x[0].relu();
    return std::vector<Tensor>{y, softmax(y, -1), layer_norm(x[0], {x[0].size(-1)})};
  };
  compiler::CompileOptions o;
  o.codegen.target = compiler::Target::kCudaEmulated;
  for (ScalarType dt : {kFloat, kDouble}) {
    std::vector<Tensor> in = {randn({300, 70}).to(dt), randn({70, 300}).to(dt).t()};
    auto f = compile(fn, o);
    std::vector<Tensor> got = f(in), want = fn(in);
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-5, 1e-5);
    EXPECT_NE(f.last().source.find("blockIdx.x"), std::string::npos);
    EXPECT_EQ(f.last().source.find("#pragma omp simd"), std::string::npos);
  }
  o.codegen.target = compiler::Target::kCuda;  // generated, but not launchable on the host
  auto g = compile(fn, o);
  std::vector<Tensor> in = {randn({4, 5}), randn({4, 5})};
  expect_close(g(in)[0], fn(in)[0]);
  EXPECT_EQ(g.eager_calls(), 1u);
}

TEST(CudaCodegen, IndexesIn32BitsWhereEveryOffsetFits) {
  // y = x + 1 over sizes whose last offset does or does not fit in 31 bits.
  auto kernel = [](int64_t rows) {
    compiler::Kernel k;
    k.name = "k";
    k.sizes = {rows, 65536};
    compiler::KernelArg a;
    a.sizes = k.sizes;
    a.strides = a.loop_strides = {65536, 1};
    k.inputs = {a};
    k.outputs = {a};
    k.input_ctypes = {"float"};
    k.body = {compiler::Stmt{"float", "(l0 + float(1.0))", false, {0}, {}, {}}};
    k.stores = {0};
    return k;
  };
  compiler::CodegenOptions o;
  o.target = compiler::Target::kCuda;
  const std::string narrow = compiler::generate_cuda({kernel(32767)}, o);
  const std::string wide = compiler::generate_cuda({kernel(32768)}, o);
  EXPECT_NE(narrow.find("int32_t r = int32_t(e);"), std::string::npos);
  EXPECT_NE(wide.find("int64_t r = int64_t(e);"), std::string::npos);
  EXPECT_NE(wide.find("e < 2147483648;"), std::string::npos);
  EXPECT_EQ(compiler::cuda_launch(kernel(2)).work, 131072);
  EXPECT_THROW(compiler::generate_cpp({kernel(2)}, o), Error);
  if (!compiler::nvrtc_available()) GTEST_SKIP() << "NVRTC (CUDA toolkit) not installed";
  TempDir dir{"retorch_nvrtc"};
  ::setenv("RETORCH_CACHE_DIR", dir.path.c_str(), 1);
  for (const std::string& src : {narrow, wide}) {
    const std::string ptx = compiler::compile_ptx(src, "compute_90");
    EXPECT_NE(ptx.find(".entry k("), std::string::npos);
  }
  ::unsetenv("RETORCH_CACHE_DIR");
}

TEST(CompilerBenchmark, CountsFollowTheEstimateAndQuantilesAreOrdered) {
  int calls = 0;
  Tensor a = randn({1000});
  compiler::BenchmarkOptions o;
  o.warmup_ms = 2;
  o.rep_ms = 5;
  compiler::BenchmarkResult r = compiler::benchmark([&] {
    ++calls;
    Tensor b = (a * 2 + 1).tanh();
  }, o);
  EXPECT_GE(r.reps, 1);
  EXPECT_GE(r.warmup, 1);
  EXPECT_EQ(calls, 1 + 5 + r.warmup + r.reps);  // first call, estimate, warm-up, timed
  EXPECT_LE(r.min, r.p20);
  EXPECT_LE(r.p20, r.median);
  EXPECT_LE(r.median, r.p80);
  EXPECT_GT(r.min, 0);
  o.max_reps = 3;  // the counts are capped
  compiler::BenchmarkResult capped = compiler::benchmark([&] { ++calls; }, o);
  EXPECT_LE(capped.reps, 3);
  EXPECT_LE(capped.warmup, 3);
}
