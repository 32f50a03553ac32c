// Device routing and the device API without a GPU: tensors on cuda/mps/xpu run through the
// DeviceFallback key on cpu, give cpu's numbers, keep their device, and count their fallbacks.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "retorch/device/CudaGraph.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/device/DeviceFallback.h"
#include "retorch/profiler/Profiler.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {

// Restores the default policy, placement and order, and clears the counters.
struct FallbackScope {
  FallbackScope() { reset_device_fallback_stats(); }
  ~FallbackScope() {
    set_device_fallback(FallbackPolicy::kAuto);
    set_device_fallback_placement(FallbackPlacement::kRequested);
    set_device_fallback_order({kCUDA, kMPS, kCPU});
    reset_device_fallback_stats();
    set_fallback_warning_handler(nullptr);
  }
};

int64_t calls_of(const std::string& op) {
  int64_t n = 0;
  for (const auto& s : device_fallback_stats())
    if (s.op == op) n += s.calls;
  return n;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// These tests use cuda as a device without a backend (host memory, zero-copy moves); where the
// CUDA backend has a device, tests/cpp/test_cuda_runtime.cpp covers cuda instead.
#define SKIP_WITH_A_CUDA_DEVICE()                                                              \
  if (cuda::is_available()) GTEST_SKIP() << "cuda has a backend and a device here"

}  // namespace

TEST(Devices, ParsesEveryDeviceType) {
  EXPECT_EQ(Device("mps").type, kMPS);
  EXPECT_EQ(Device("xpu:1"), Device(kXPU, 1));
  EXPECT_EQ(Device("meta").str(), "meta");
  EXPECT_EQ(Device("cuda").canonical(), Device(kCUDA, 0));
  EXPECT_EQ(Device("cpu").canonical(), Device(kCPU));
  EXPECT_EQ(Device("meta:0").canonical(), Device(kMeta));
  EXPECT_NE(error_of([] { Device("tpu"); }).find("cpu, cuda, mps, xpu, meta"), std::string::npos);
  EXPECT_THROW(Device("cuda:999"), Error);
}

TEST(Devices, KeySetsFollowTheBackends) {
  SKIP_WITH_A_CUDA_DEVICE();
  EXPECT_TRUE(device_key_set(kCUDA).has(DispatchKey::DeviceFallback));
  EXPECT_TRUE(device_key_set(kMPS).has(DispatchKey::DeviceFallback));
  EXPECT_FALSE(device_key_set(kCPU).has(DispatchKey::DeviceFallback));
  EXPECT_FALSE(device_has_backend(kCUDA));
  EXPECT_TRUE(device_has_backend(kCPU));
}

TEST(Devices, FactoriesAndOpsOnCudaGiveCpuNumbersAndKeepTheDevice) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  manual_seed(3);
  Tensor a_cpu = randn({4, 5});
  Tensor b_cpu = randn({5, 3});
  Tensor a = a_cpu.to(Device("cuda"));
  Tensor b = b_cpu.to(Device("cuda"));
  EXPECT_EQ(a.device(), Device(kCUDA, 0));
  EXPECT_TRUE(a.is_cuda());
  Tensor c = (a.mm(b) + 1).relu().sum(0);
  EXPECT_EQ(c.device(), Device(kCUDA, 0));
  EXPECT_TRUE(all_close(c.to(Device(kCPU)), (a_cpu.mm(b_cpu) + 1).relu().sum(0)));
  EXPECT_EQ(c.to(Device(kCPU)).device(), Device(kCPU));
  EXPECT_EQ(calls_of("aten::mm"), 1);
  // The temporary `mm + 1` takes relu in place (Note [Reusing temporaries]).
  EXPECT_EQ(calls_of("aten::relu") + calls_of("aten::relu_"), 1);

  Tensor z = zeros({2, 3}, TensorOptions().device(Device("cuda:1")));
  EXPECT_EQ(z.device(), Device(kCUDA, 1));
  EXPECT_EQ(z.sum().item<double>(), 0.0);
  Tensor m = ones({2}, TensorOptions().device(Device("mps")));
  EXPECT_EQ(m.device(), Device(kMPS, 0));
  EXPECT_EQ(m.toString(), "tensor([1., 1.], device='mps:0')");
}

TEST(Devices, InPlaceAndOutResultsAreTheArgumentsThemselves) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  Tensor x = arange(6, TensorOptions(kFloat).device(Device("cuda")));
  const uint32_t v0 = x.impl()->version();
  Tensor r = x.add_(2);
  EXPECT_EQ(r.impl(), x.impl());
  EXPECT_GT(x.impl()->version(), v0);
  EXPECT_EQ(values(x), (std::vector<double>{2, 3, 4, 5, 6, 7}));
  Tensor out = empty({6}, TensorOptions(kFloat).device(Device("cuda")));
  Tensor r2 = mul_out(out, x, x);
  EXPECT_EQ(r2.impl(), out.impl());
  EXPECT_EQ(values(out)[1], 9.0);
}

TEST(Devices, TypedFastRouteDoesWhatTheBoxedFallbackDoes) {
  // Note [Unboxed device fallback]: under the auto policy ops with a CPU kernel take the typed
  // route; the warn policy sends the same calls through the boxed fallback. Values, devices,
  // argument identities and counters must come out the same both ways.
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  EXPECT_TRUE(Dispatcher::singleton().find("relu")->has_kernel(DispatchKey::DeviceFallback));
  set_fallback_warning_handler([](const std::string&) {});
  struct Run {
    std::vector<Tensor> results;
    std::map<std::string, std::pair<int64_t, int64_t>> counts;  // op -> calls, bytes moved
    bool in_place_is_self = false;
  };
  auto run = [](FallbackPolicy policy) {
    set_device_fallback(policy);
    reset_device_fallback_stats();
    manual_seed(7);
    const TensorOptions cuda = TensorOptions(kFloat).device(Device("cuda"));
    Tensor x = randn({4, 6}, cuda), w = randn({3, 6}, cuda), b = randn({3}, cuda);
    Tensor idx = tensor(std::vector<int64_t>{2, 0}).to(Device("cuda"));
    Run r;
    r.results = {linear(x, w, b).relu(), x.exp(), x * 2.5, x + x, x.sum({1}), x.softmax(1),
                 x.clamp(-0.5, std::nullopt), index_select(x, 0, idx), x.max(), x.argmax(1)};
    Tensor y = x.clone();
    r.in_place_is_self = y.mul_(3).impl() == y.impl();
    r.results.push_back(y);
    for (const auto& s : device_fallback_stats()) r.counts[s.op] = {s.calls, s.bytes_moved};
    return r;
  };
  const Run fast = run(FallbackPolicy::kAuto), boxed = run(FallbackPolicy::kWarn);
  ASSERT_EQ(fast.results.size(), boxed.results.size());
  for (size_t i = 0; i < fast.results.size(); ++i) {
    EXPECT_EQ(fast.results[i].device(), Device(kCUDA, 0)) << i;
    EXPECT_EQ(fast.results[i].dtype(), boxed.results[i].dtype()) << i;
    EXPECT_EQ(fast.results[i].sizes(), boxed.results[i].sizes()) << i;
    EXPECT_EQ(values(fast.results[i]), values(boxed.results[i])) << i;
  }
  EXPECT_TRUE(fast.in_place_is_self);
  EXPECT_TRUE(boxed.in_place_is_self);
  EXPECT_EQ(fast.counts, boxed.counts);
  EXPECT_EQ(fast.counts.at("aten::addmm").first, 1);
  EXPECT_EQ(fast.counts.at("aten::mul_.Tensor").first, 1);
}

TEST(Devices, ViewsAndCompositesRunWithoutFallingBack) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  Tensor x = arange(12, TensorOptions(kFloat).device(Device("cuda"))).view({3, 4});
  Tensor t = x.t().narrow(0, 1, 2);
  EXPECT_EQ(t.device(), Device(kCUDA, 0));
  EXPECT_EQ(storage_ptr(t), storage_ptr(x));
  EXPECT_EQ(calls_of("aten::view"), 0);
  EXPECT_EQ(calls_of("aten::t"), 0);
  EXPECT_EQ(calls_of("aten::zeros"), 0);  // composite: empty + zero_ fall back instead
  Tensor z = zeros({2}, TensorOptions().device(Device("cuda")));
  EXPECT_EQ(calls_of("aten::empty"), 1);
}

TEST(Devices, AutogradGraphAndGradsLiveOnTheAskedDevice) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  manual_seed(7);
  Tensor w_cpu = randn({3, 2}).requires_grad_(true);
  Tensor x_cpu = randn({4, 3});
  Tensor w = w_cpu.detach().to(Device("cuda")).requires_grad_(true);
  Tensor x = x_cpu.to(Device("cuda"));
  Tensor loss = x.mm(w).tanh().pow(2).mean();
  loss.backward();
  x_cpu.mm(w_cpu).tanh().pow(2).mean().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().device(), Device(kCUDA, 0));
  EXPECT_TRUE(all_close(w.grad().to(Device(kCPU)), w_cpu.grad(), 1e-6, 1e-7));
}

TEST(Devices, ModuleTrainingOnCudaMatchesCpu) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  auto run = [](Device dev) {
    manual_seed(11);
    nn::Sequential net(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 3));
    net->to(dev);
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    Tensor x = randn({32, 8}).to(dev);
    Tensor y = randint(0, 3, {32}).to(dev);
    double last = 0;
    for (int i = 0; i < 5; ++i) {
      opt.zero_grad();
      Tensor loss = cross_entropy(net->forward(x), y);
      loss.backward();
      opt.step();
      last = loss.item<double>();
    }
    EXPECT_EQ(net->parameters()[0].device(), dev.canonical());
    return std::make_pair(last, net->parameters()[0].to(Device(kCPU)));
  };
  auto [loss_cpu, w_cpu] = run(Device(kCPU));
  auto [loss_cuda, w_cuda] = run(Device("cuda"));
  EXPECT_DOUBLE_EQ(loss_cpu, loss_cuda);
  EXPECT_TRUE(all_close(w_cuda, w_cpu, 0, 0));
  EXPECT_GT(calls_of("aten::addmm"), 0);
}

TEST(Devices, MixedDevicesAreRefusedLikePyTorch) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  Tensor a = ones({3}, TensorOptions().device(Device("cuda")));
  std::string msg = error_of([&] { (void)(a + ones({3})); });
  EXPECT_NE(msg.find("Expected all tensors to be on the same device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cuda:0 and cpu"), std::string::npos) << msg;
  msg = error_of([&] { (void)(a + ones({3}, TensorOptions().device(Device("cuda:1")))); });
  EXPECT_NE(msg.find("cuda:0 and cuda:1"), std::string::npos) << msg;
  // cpu scalars (0-dim) may join any device, as in PyTorch.
  EXPECT_EQ(values(a + full({}, 2.0)), (std::vector<double>{3, 3, 3}));
  // Copies between devices are what .to() is for.
  Tensor c = ones({3});
  c.copy_(a * 5);
  EXPECT_EQ(values(c)[0], 5.0);
  // So are cpu index tensors (ops.yaml `mixed_devices`): a[idx] and index_put_ with them.
  Tensor idx = tensor({2, 0});
  Tensor picked = index(a * 3, {std::optional<Tensor>(idx)});
  EXPECT_EQ(picked.device(), Device(kCUDA, 0));
  EXPECT_EQ(values(picked), (std::vector<double>{3, 3}));
  Tensor b = zeros({3}, TensorOptions().device(Device("cuda")));
  b.index_put_({std::optional<Tensor>(idx)}, full({2}, 7.0, TensorOptions().device(Device("cuda"))));
  EXPECT_EQ(values(b), (std::vector<double>{7, 0, 7}));
}

TEST(Devices, ErrorPolicyNamesTheFirstOpAndOffRefusesToo) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  Tensor a = ones({2}, TensorOptions().device(Device("cuda")));
  set_device_fallback("error");
  std::string msg = error_of([&] { (void)a.exp(); });
  EXPECT_NE(msg.find("aten::exp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'error'"), std::string::npos) << msg;
  // Views need no kernel: they still work under error.
  EXPECT_EQ(a.view({1, 2}).device(), Device(kCUDA, 0));
  set_device_fallback("off");
  msg = error_of([&] { (void)ones({2}, TensorOptions().device(Device("xpu"))); });
  EXPECT_NE(msg.find("Could not run 'aten::empty'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("xpu:0"), std::string::npos) << msg;
  EXPECT_THROW(set_device_fallback("sometimes"), Error);
}

TEST(Devices, WarnPolicyWarnsOncePerOp) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  static std::vector<std::string> seen;
  seen.clear();
  set_fallback_warning_handler([](const std::string& m) { seen.push_back(m); });
  set_device_fallback(FallbackPolicy::kWarn);
  Tensor a = ones({2}, TensorOptions().device(Device("cuda")));
  for (int i = 0; i < 3; ++i) a = a.exp();
  int exp_warnings = 0;
  for (const auto& m : seen) exp_warnings += m.find("aten::exp") != std::string::npos;
  EXPECT_EQ(exp_warnings, 1);
  EXPECT_EQ(calls_of("aten::exp"), 3);
}

TEST(Devices, ExecutingPlacementLeavesResultsOnCpu) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  set_device_fallback_placement(FallbackPlacement::kExecuting);
  Tensor a = ones({2}, TensorOptions().device(Device("cuda")));
  EXPECT_EQ(a.device(), Device(kCPU));
  EXPECT_EQ((a * 3).device(), Device(kCPU));
}

TEST(Devices, ReportCountsCallsAndBytes) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  Tensor a = ones({256}, TensorOptions().device(Device("cuda")));
  Tensor b = a.exp();
  FallbackStats s;
  for (const auto& r : device_fallback_stats())
    if (r.op == "aten::exp") s = r;
  EXPECT_EQ(s.calls, 1);
  EXPECT_EQ(s.from, Device(kCUDA, 0));
  EXPECT_EQ(s.to, Device(kCPU));
  EXPECT_EQ(s.bytes_moved, 2 * 256 * 4);  // the argument there, the result back
  EXPECT_EQ(s.bytes_copied, 0);           // host memory on both sides: nothing copied
  const std::string rep = device_fallback_report();
  EXPECT_NE(rep.find("aten::exp"), std::string::npos) << rep;
  EXPECT_NE(rep.find("cuda:0->cpu"), std::string::npos) << rep;
}

TEST(Devices, CountersOfSeveralThreadsAddUpToOneRowAndResetToZero) {
  // Each thread counts in its own slots; the stats sum them per op and route, and a reset
  // zeroes the sums while the slots live on.
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  Tensor a = ones({64}, TensorOptions().device(Device("cuda")));
  constexpr int kThreads = 4, kCalls = 300;
  auto run = [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < kCalls; ++i) a.neg();
      });
    for (auto& t : threads) t.join();
  };
  run();
  int rows = 0;
  for (const auto& r : device_fallback_stats()) {
    if (r.op != "aten::neg") continue;
    ++rows;
    EXPECT_EQ(r.calls, kThreads * kCalls);
    EXPECT_EQ(r.bytes_moved, int64_t(kThreads) * kCalls * 2 * 64 * 4);
  }
  EXPECT_EQ(rows, 1);
  reset_device_fallback_stats();
  EXPECT_EQ(calls_of("aten::neg"), 0);
  a.neg();
  run();
  EXPECT_EQ(calls_of("aten::neg"), kThreads * kCalls + 1);
}

TEST(Devices, ProfilerShowsFallbackMovesAsRows) {
  SKIP_WITH_A_CUDA_DEVICE();
  FallbackScope scope;
  Tensor a = ones({16}, TensorOptions().device(Device("cuda")));
  profiler::Profile p;
  (void)a.exp();
  p.stop();
  bool there = false, back = false;
  for (const auto& e : p.events()) {
    there |= e.name == "device_fallback::cuda:0_to_cpu";
    back |= e.name == "device_fallback::cpu_to_cuda:0";
  }
  EXPECT_TRUE(there);
  EXPECT_TRUE(back);
}

TEST(Devices, ApiAnswersTruthfullyWithoutADevice) {
  SKIP_WITH_A_CUDA_DEVICE();
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(mps::is_available());
  EXPECT_EQ(xpu::device_count(), 0);
  EXPECT_EQ(cuda::current_device(), 0);
  {
    DeviceGuard g(Device("cuda:2"));
    EXPECT_EQ(cuda::current_device(), 2);
    EXPECT_EQ(ones({1}, TensorOptions().device(Device("cuda"))).device(), Device(kCUDA, 2));
  }
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_THROW(cuda::set_device(-1), Error);
  cuda::synchronize();
  Stream s = cuda::current_stream();
  EXPECT_TRUE(s.query());
  EXPECT_EQ(s.device(), Device(kCUDA, 0));
  Event e0(true), e1(true);
  e0.record(s);
  e1.record(s);
  EXPECT_GE(e0.elapsed_time(e1), 0.0);
  Event untimed;
  untimed.record(s);
  EXPECT_THROW(untimed.elapsed_time(e1), Error);
  EXPECT_EQ(cuda::memory_allocated(), 0);
  EXPECT_EQ(cuda::max_memory_reserved(), 0);
  EXPECT_NE(cuda::memory_summary().find("No cuda device"), std::string::npos);
  // Pinned memory needs a device (PyTorch: "Pinned memory requires CUDA").
  EXPECT_FALSE(is_pinned(ones({2})));
  try {
    (void)pin_memory(ones({2}));
    ADD_FAILURE() << "pin_memory without a device did not raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pinned memory requires a CUDA device"),
              std::string::npos)
        << e.what();
  }
}

// Without the device a stream is a label of its own (work runs as it is issued): new streams
// get new ids, the current stream follows set_stream, and the waits and record_stream return.
TEST(Devices, StreamsWithoutADeviceAreLabels) {
  SKIP_WITH_A_CUDA_DEVICE();
  const Stream s1 = device_api::new_stream(Device(kCUDA), -1);
  const Stream s2 = device_api::new_stream(Device(kCUDA));
  EXPECT_NE(s1.id(), 0);
  EXPECT_NE(s1.id(), s2.id());
  EXPECT_EQ(s1.device(), Device(kCUDA, 0));
  EXPECT_EQ(s1.priority(), -1);
  EXPECT_FALSE(s1 == cuda::default_stream());
  device_api::set_stream(s1);
  EXPECT_EQ(cuda::current_stream(), s1);
  EXPECT_EQ(cuda::current_stream(1), cuda::default_stream(1)) << "another device's stream";
  s1.wait_stream(s2);
  Event e;
  e.record(s2);
  s1.wait_event(e);
  e.wait(s1);
  EXPECT_TRUE(s1.query());
  s1.synchronize();
  Tensor x = ones({2, 3}, TensorOptions().device(Device(kCUDA)));
  record_stream(x, s1);
  const Error cpu = catch_error([] { record_stream(ones({2, 3}), cuda::current_stream()); });
  EXPECT_EQ(cpu.kind(), ErrorKind::kNotImplemented);
  EXPECT_TRUE(contains(cpu.what(), {"record_stream", "float32", "[2, 3]", "cpu"}));
  EXPECT_THROW(record_stream(x, device_api::new_stream(Device(kXPU))), Error);
  device_api::set_stream(cuda::default_stream());
  EXPECT_EQ(cuda::current_stream().id(), 0);
}

TEST(Devices, CudaGraphsWithoutADeviceRaiseClearly) {
  SKIP_WITH_A_CUDA_DEVICE();
  cuda::CUDAGraph g;
  EXPECT_TRUE(contains(catch_error([&] { g.capture_begin(); }).what(),
                       {"CUDAGraph.capture_begin", "need a CUDA device"}));
  EXPECT_FALSE(g.captured());
  EXPECT_TRUE(contains(catch_error([&] { g.replay(); }).what(), {"nothing was captured"}));
  EXPECT_TRUE(contains(catch_error([&] { g.capture_end(); }).what(), {"no capture is running"}));
}

TEST(Devices, RngStateOfAnAbsentDeviceIsTheCpuGenerators) {
  SKIP_WITH_A_CUDA_DEVICE();
  cuda::manual_seed(5);
  Tensor state = cuda::get_rng_state();
  Tensor a = rand({4}, std::nullopt, TensorOptions().device(Device("cuda")));
  cuda::set_rng_state(state);
  Tensor b = rand({4}, std::nullopt, TensorOptions().device(Device("cuda")));
  EXPECT_EQ(values(a), values(b));
  manual_seed(5);
  EXPECT_EQ(values(rand({4})), values(a));  // the numbers a cpu run draws
  EXPECT_THROW(cuda::set_rng_state(ones({3})), Error);
}

TEST(Devices, CompatMatrixReadsTheDispatchTables) {
  SKIP_WITH_A_CUDA_DEVICE();
  std::map<std::string, std::vector<std::string>> rows;
  for (const auto& r : compat_matrix()) rows[r.op] = r.devices;
  EXPECT_EQ(rows.size(), Dispatcher::singleton().ops().size());
  EXPECT_EQ(rows["aten::mm"], (std::vector<std::string>{"native", "fallback", "fallback",
                                                        "fallback", "native"}));
  EXPECT_EQ(rows["aten::nonzero"][4], "missing");  // its output shape needs the data
  EXPECT_EQ(rows["aten::zeros"][1], "composite");
  EXPECT_EQ(rows["aten::view"][4], "composite");
  const std::string md = compat_matrix_text(true);
  EXPECT_NE(md.find("| `aten::mm` | native | fallback | fallback | fallback | native |"),
            std::string::npos);
}
