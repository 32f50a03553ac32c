// The launch manager: every backend kernel call is a launch observers see (counts, names,
// shapes, durations); a capture replays the same kernels on the same buffers without dispatch.
#include <gtest/gtest.h>

#include "retorch/dispatch/Dispatcher.h"
#include "retorch/profiler/Profiler.h"
#include "retorch/retorch.h"
#include "retorch/runtime/LaunchManager.h"

using namespace retorch;
using runtime::CountingObserver;
using runtime::LaunchManager;

namespace {

class TimingObserver : public runtime::LaunchObserver {
 public:
  void after(const runtime::LaunchRecord& r, int64_t ns) override {
    names.push_back(r.name);
    durations.push_back(ns);
  }
  std::vector<std::string> names;
  std::vector<int64_t> durations;
};

TEST(LaunchManager, ObserversSeeEveryKernelLaunch) {
  Tensor a = randn({4, 5}), b = randn({5, 6}), c = randn({6, 3});
  auto counter = std::make_shared<CountingObserver>();
  auto timer = std::make_shared<TimingObserver>();
  EXPECT_EQ(detail::g_launch_hook.load(), nullptr);  // unobserved: the dispatcher's fast path
  LaunchManager::get().add_observer(counter);
  LaunchManager::get().add_observer(timer);
  EXPECT_NE(detail::g_launch_hook.load(), nullptr);
  Tensor x = mm(a, b), y = mm(x, c), z = mm(a, b);
  Tensor s = add(x, z), t = add(s, s);
  LaunchManager::get().remove_observer(counter);
  LaunchManager::get().remove_observer(timer);
  EXPECT_EQ(detail::g_launch_hook.load(), nullptr);
  Tensor u = mm(a, b);  // not seen
  EXPECT_EQ(counter->count("cpu::mm"), 3);
  EXPECT_EQ(counter->count("cpu::add"), 2);
  std::vector<runtime::LaunchRecord> mms;
  for (const runtime::LaunchRecord& r : counter->records())
    if (r.name == "cpu::mm") mms.push_back(r);
  ASSERT_EQ(mms.size(), 3u);
  EXPECT_EQ(mms[0].op, "aten::mm");
  EXPECT_TRUE(mms[0].device.is_cpu());
  EXPECT_EQ(mms[1].shapes, (std::vector<std::vector<int64_t>>{{4, 6}, {6, 3}}));
  EXPECT_EQ(mms[0].arg_bytes, (4 * 5 + 5 * 6) * 4);
  EXPECT_EQ(mms[0].range, 30);  // the largest argument or result: [5, 6]
  EXPECT_EQ(timer->names.size(), size_t(counter->total()));
  for (int64_t ns : timer->durations) EXPECT_GE(ns, 0);
}

TEST(LaunchManager, CaptureReplaysOnTheSameBuffersWithoutDispatch) {
  Tensor x = randn({8, 16}), w = randn({16, 4}), b = randn({4});
  Tensor y, z;
  runtime::LaunchGraph g = LaunchManager::get().capture([&] {
    y = (mm(x, w) + b).relu();
    z = y.sum({1}) * 2;
  });
  std::vector<std::string> names;
  for (const runtime::LaunchRecord& r : g.records()) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu::mm", "cpu::add", "cpu::relu", "cpu::sum",
                                             "cpu::mul"}));
  EXPECT_EQ(detail::g_launch_hook.load(), nullptr);
  // New input values in the captured buffer; replay recomputes into the captured outputs.
  x.copy_(randn({8, 16}));
  b.fill_(0.25);
  Tensor want_y = (mm(x, w) + b).relu(), want_z = want_y.sum({1}) * 2;
  EXPECT_FALSE(allclose(y, want_y));
  profiler::Profile p;  // sees every op dispatched: replay dispatches none of the captured ones
  g.replay();
  p.stop();
  for (const profiler::Event& e : p.events())
    for (const char* op : {"aten::mm", "aten::add", "aten::relu", "aten::sum", "aten::mul"})
      EXPECT_NE(e.name, op) << p.table();
  EXPECT_TRUE(allclose(y, want_y, 1e-6, 1e-6));
  EXPECT_TRUE(allclose(z, want_z, 1e-5, 1e-5));
  EXPECT_THROW(LaunchManager::get().capture([] {
    LaunchManager::get().capture([] {});
  }), Error);
  EXPECT_EQ(detail::g_launch_hook.load(), nullptr);  // a failed capture uninstalls the hook
}

TEST(LaunchManager, ReplayWritesOutFormsIntoTheCapturedBuffers) {
  // add, mul and relu have direct kernels (Note [Direct replay]; relu has no out= overload):
  // replay hands each the captured result as `out`, so nothing is allocated and the results
  // keep their memory.
  Tensor a = randn({16}), b = randn({16}), y, z;
  runtime::LaunchGraph g = LaunchManager::get().capture([&] {
    y = (a + b) * a;
    z = y.relu();
  });
  ASSERT_EQ(g.size(), 3u);
  const void* y_data = y.data_ptr();
  const void* z_data = z.data_ptr();
  a.copy_(randn({16}));
  b.fill_(-0.5);
  Tensor want_y = (a + b) * a, want_z = want_y.relu();
  const int64_t allocs = cpu_allocator()->stats().num_allocs;
  g.replay();
  EXPECT_EQ(cpu_allocator()->stats().num_allocs - allocs, 0);
  EXPECT_EQ(y.data_ptr(), y_data);
  EXPECT_EQ(z.data_ptr(), z_data);
  EXPECT_TRUE(allclose(y, want_y, 1e-6, 1e-6));
  EXPECT_TRUE(allclose(z, want_z, 1e-6, 1e-6));
  // An in-place op (its result is its input's memory) replays in place, once per replay.
  Tensor c = zeros({4, 4}), d = full({4, 4}, 0.5);
  runtime::LaunchGraph h = LaunchManager::get().capture([&] { c.add_(d); });
  ASSERT_EQ(h.size(), 1u);
  h.replay();
  h.replay();
  EXPECT_TRUE(allclose(c, full({4, 4}, 1.5)));
}

TEST(LaunchManager, ProfilerRecordsKernelsInsideTheirOps) {
  Tensor a = randn({32, 32});
  profiler::Profile p;
  Tensor b = (mm(a, a) + a).tanh();
  p.stop();
  int kernels = 0;
  for (const profiler::Event& e : p.events()) {
    if (e.kind != "kernel") continue;
    ++kernels;
    EXPECT_EQ(e.name.rfind("cpu::", 0), 0u) << e.name;
    EXPECT_GE(e.depth, 1) << e.name << " runs inside its op";
  }
  EXPECT_GE(kernels, 3);
  std::string by_kernel = p.kernel_summary(), by_op = p.kernel_summary(-1, true);
  EXPECT_NE(by_kernel.find("cpu::mm"), std::string::npos) << by_kernel;
  EXPECT_NE(by_op.find("aten::tanh"), std::string::npos) << by_op;
  EXPECT_EQ(by_op.find("cpu::"), std::string::npos) << by_op;
}

}  // namespace
