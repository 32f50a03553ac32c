// The profiler: a known program yields exactly its ops with counts and shapes; record_function
// ranges nest; the Chrome trace parses and is well formed; statistics and tables.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "retorch/core/MemoryObserver.h"
#include "retorch/profiler/Profiler.h"
#include "retorch/retorch.h"

using namespace retorch;
namespace prof = retorch::profiler;

namespace {

// The ops the program itself called (depth 0); what their kernels call through the dispatcher
// nests inside them, as in PyTorch's profiler.
std::map<std::string, int64_t> top_level_counts(const prof::Profile& p) {
  std::map<std::string, int64_t> c;
  for (const prof::Event& e : p.events())
    if (e.depth == 0) ++c[e.name];
  return c;
}

TEST(Profiler, KnownProgramYieldsItsOpsCountsAndShapes) {
  Tensor a = randn({4, 5}), b = randn({5, 6}), c = randn({6, 3});
  prof::ProfilerOptions o;
  o.record_shapes = true;
  prof::Profile p(o);
  Tensor x = mm(a, b), y = mm(x, c), z = mm(a, b);
  Tensor s = add(x, z);
  Tensor t = add(s, 1.5);
  p.stop();
  std::map<std::string, int64_t> want = {{"aten::mm", 3}, {"aten::add", 2}};
  EXPECT_EQ(top_level_counts(p), want);
  std::map<std::string, int64_t> all;
  for (const prof::EventStats& st : p.key_averages()) all[st.name] = st.count;
  EXPECT_EQ(all["aten::mm"], 3);
  EXPECT_EQ(all["aten::add"], 2);
  std::vector<prof::EventStats> by_shape = p.key_averages(true);
  std::map<std::pair<std::string, std::string>, int64_t> shapes;
  for (const prof::EventStats& st : by_shape) shapes[{st.name, st.shapes}] = st.count;
  EXPECT_EQ((shapes[{"aten::mm", "[[4, 5], [5, 6]]"}]), 2);
  EXPECT_EQ((shapes[{"aten::mm", "[[4, 6], [6, 3]]"}]), 1);
  EXPECT_EQ((shapes[{"aten::add", "[[4, 6], [4, 6], []]"}]), 1);
  // After stop nothing more is recorded.
  const size_t n = p.events().size();
  Tensor u = mm(a, b);
  EXPECT_EQ(p.events().size(), n);
}

TEST(Profiler, RecordFunctionRangesNestAndSelfTimesAddUp) {
  Tensor a = randn({64, 64});
  prof::Profile p;
  {
    prof::RecordFunction outer("outer");
    {
      prof::RecordFunction inner("inner");
      Tensor b = mm(a, a);
    }
    Tensor c = mm(a, a) + a;
  }
  p.stop();
  std::vector<prof::Event> ev = p.events();
  std::map<std::string, prof::Event> by;
  for (const prof::Event& e : ev) by[e.name] = e;
  ASSERT_TRUE(by.count("outer") && by.count("inner"));
  EXPECT_EQ(by["outer"].depth, 0);
  EXPECT_EQ(by["inner"].depth, 1);
  EXPECT_EQ(by["outer"].kind, "user_annotation");
  EXPECT_LE(by["outer"].start_ns, by["inner"].start_ns);
  EXPECT_GE(by["outer"].end_ns, by["inner"].end_ns);
  int64_t self_sum = 0;
  for (const prof::Event& e : ev) {
    EXPECT_GE(e.self_ns, 0) << e.name;
    EXPECT_LE(e.self_ns, e.duration_ns()) << e.name;
    self_sum += e.self_ns;
  }
  // Self times partition the outermost range: no time is counted twice.
  EXPECT_EQ(self_sum, by["outer"].duration_ns());
}

TEST(Profiler, ChromeTraceParsesAndIsWellFormed) {
  Tensor a = randn({32, 32});
  prof::Profile p(prof::ProfilerOptions{true});
  {
    prof::RecordFunction r("step");
    for (int i = 0; i < 3; ++i) a = (a.matmul(a) * 0.01).relu();
  }
  p.stop();
  nlohmann::json doc = nlohmann::json::parse(p.chrome_trace());
  const auto& events = doc.at("traceEvents");
  ASSERT_EQ(events.size(), p.events().size());
  std::vector<std::pair<double, double>> spans;
  for (const auto& e : events) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    EXPECT_TRUE(e.at("name").is_string());
    spans.emplace_back(e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>());
  }
  // On one thread, any two events are disjoint or one contains the other.
  for (size_t i = 0; i < spans.size(); ++i)
    for (size_t j = 0; j < spans.size(); ++j) {
      auto [a0, a1] = spans[i];
      auto [b0, b1] = spans[j];
      bool disjoint = a1 <= b0 || b1 <= a0, nested = (a0 <= b0 && b1 <= a1) || (b0 <= a0 && a1 <= b1);
      EXPECT_TRUE(disjoint || nested) << i << " " << j;
    }
}

TEST(Profiler, StatisticsAndUnits) {
  EXPECT_DOUBLE_EQ(prof::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(prof::median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(prof::median({}), 0);
  EXPECT_NEAR(prof::stddev({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_DOUBLE_EQ(prof::stddev({5}), 0);
  EXPECT_EQ(prof::format_time(850), "850 ns");
  EXPECT_EQ(prof::format_time(12345), "12.345 μs");
  EXPECT_EQ(prof::format_time(3.21e6), "3.210 ms");
  EXPECT_EQ(prof::format_time(1.5e9), "1.500 s");
}

TEST(Profiler, TablesAndErrors) {
  Tensor a = randn({16, 16});
  prof::Profile p;
  for (int i = 0; i < 4; ++i) a = mm(a, a).tanh();
  EXPECT_THROW(prof::Profile second, Error);  // one at a time
  p.stop();
  std::string t = p.table("cpu_time_total", 1);
  for (const char* col : {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                          "CPU time avg", "# of Calls", "Self CPU time total: "})
    EXPECT_NE(t.find(col), std::string::npos) << col << " in\n" << t;
  EXPECT_EQ(t.find("aten::tanh") == std::string::npos || t.find("aten::mm") == std::string::npos,
            true) << "row_limit 1 prints one row:\n" << t;
  std::string k = p.kernel_summary();
  for (const char* col : {"Time %", "Total Time", "Instances", "Avg", "Med", "Min", "Max",
                          "StdDev", "Name", "cpu::mm", "cpu::tanh"})
    EXPECT_NE(k.find(col), std::string::npos) << col << " in\n" << k;
  try {
    p.table("bogus");
    FAIL() << "an unknown sort key must raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("self_cpu_time_total"), std::string::npos);
  }
  prof::Profile again;  // the first one stopped: a new one may start
  EXPECT_TRUE(again.active());
}

TEST(Profiler, ScheduleRecordsActiveStepsOnly) {
  Tensor a = randn({8, 8});
  prof::ProfilerOptions o;
  o.schedule = prof::Schedule{1, 1, 2, 1};  // wait 1, warmup 1, active 2, one cycle
  prof::Profile p(o);
  std::vector<bool> ready;
  for (int step = 0; step < 6; ++step) {
    for (int i = 0; i <= step; ++i) a = mm(a, a).tanh();  // step N runs N + 1 mms
    ready.push_back(p.step());
  }
  EXPECT_EQ(ready, (std::vector<bool>{false, false, false, true, false, false}));
  EXPECT_FALSE(p.stop());
  // Steps 2 and 3 were active: 3 + 4 mms, each step a "ProfilerStep#N" range.
  std::map<std::string, int64_t> c;
  for (const prof::Event& e : p.events()) ++c[e.name];
  EXPECT_EQ(c["aten::mm"], 7);
  EXPECT_EQ(c["ProfilerStep#2"], 1);
  EXPECT_EQ(c["ProfilerStep#3"], 1);
  EXPECT_EQ(c.count("ProfilerStep#1"), 0u);  // warmup: discarded
  prof::ProfilerOptions bad;
  bad.schedule = prof::Schedule{0, 0, 0, 0};
  EXPECT_THROW(prof::Profile q(bad), Error);
}

TEST(Profiler, TraceMergesIdenticalEventsCapsItsSizeAndExportsCsv) {
  Tensor a = randn({4, 4});
  prof::Profile p;
  for (int i = 0; i < 50; ++i) a = a * 1.0;  // 50 identical consecutive muls
  Tensor b = a.exp();
  p.stop();
  auto names = [](const nlohmann::json& doc) {
    std::map<std::string, int64_t> c;
    for (const auto& e : doc.at("traceEvents")) ++c[e.at("name").get<std::string>()];
    return c;
  };
  nlohmann::json full = nlohmann::json::parse(p.chrome_trace());
  EXPECT_EQ(names(full)["aten::mul"], 50);
  nlohmann::json merged = nlohmann::json::parse(p.chrome_trace({true, 0}));
  EXPECT_EQ(names(merged)["aten::mul"], 1);
  EXPECT_EQ(names(merged)["aten::exp"], 1);
  for (const auto& e : merged.at("traceEvents"))
    if (e.at("name") == "aten::mul") EXPECT_EQ(e.at("args").at("count"), 50);
  nlohmann::json capped = nlohmann::json::parse(p.chrome_trace({false, 10}));
  const auto& ev = capped.at("traceEvents");
  ASSERT_EQ(ev.size(), 11u);  // 10 events and the note
  EXPECT_NE(ev.back().at("name").get<std::string>().find("trace truncated"), std::string::npos);
  std::string csv = p.table_csv();
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "Name,Self CPU %,Self CPU (us),CPU total %,CPU total (us),CPU time avg (us),# of Calls");
  EXPECT_NE(csv.find("\"aten::mul\","), std::string::npos) << csv;
  EXPECT_NE(csv.find(",50\n"), std::string::npos) << csv;
}

TEST(Profiler, MemoryTimelineAndPerOpBytes) {
  Tensor a = randn({256, 256});  // 256 KiB
  prof::ProfilerOptions o;
  o.profile_memory = true;
  prof::Profile p(o);
  Tensor b = mm(a, a);
  Tensor c = b + 1;
  b = Tensor();  // freed
  p.stop();
  std::vector<prof::MemoryRecord> mem = p.memory_events();
  ASSERT_GE(mem.size(), 3u);
  bool freed = false;
  for (size_t i = 1; i < mem.size(); ++i) {
    EXPECT_GE(mem[i].ts_ns, mem[i - 1].ts_ns);
    EXPECT_LE(mem[i].allocated_bytes, mem[i].reserved_bytes);
    freed |= mem[i].bytes <= -256 * 256 * 4;
  }
  EXPECT_TRUE(freed) << "b's buffer going back to the allocator is an event";
  int64_t mm_mem = -1;
  for (const prof::Event& e : p.events())
    if (e.name == "aten::mm") mm_mem = e.mem_bytes;
  EXPECT_GE(mm_mem, 256 * 256 * 4);  // its output (at least; size classes round up)
  std::string t = p.table();
  EXPECT_NE(t.find("CPU Mem"), std::string::npos) << t;
  EXPECT_NE(t.find("Self CPU Mem"), std::string::npos) << t;
  nlohmann::json doc = nlohmann::json::parse(p.chrome_trace());
  int counters = 0;
  for (const auto& e : doc.at("traceEvents")) counters += e.at("ph") == "C";
  EXPECT_EQ(size_t(counters), mem.size());
  std::string summary = prof::memory_summary();
  for (const char* row : {"Allocated memory", "Reserved memory", "Allocations", "Peak Usage"})
    EXPECT_NE(summary.find(row), std::string::npos) << row << " in\n" << summary;
  EXPECT_EQ(prof::format_bytes(512), "512 b");
  EXPECT_EQ(prof::format_bytes(1536), "1.50 Kb");
  EXPECT_EQ(prof::format_bytes(-3 * 1024 * 1024), "-3.00 Mb");
}

TEST(Profiler, DeviceMemoryGetsItsOwnCounterTrack) {
  // A device's own allocator (the CUDA caching allocator) reports through report_memory_event;
  // its events keep their device and become a "cuda:0 memory" counter beside "CPU memory".
  prof::ProfilerOptions o;
  o.profile_memory = true;
  prof::Profile p(o);
  Tensor host = ones({1024});
  report_memory_event(MemoryEvent{Device(kCUDA, 0), 1 << 20, 1 << 20, 2 << 20});
  report_memory_event(MemoryEvent{Device(kCUDA, 0), -(1 << 20), 0, 2 << 20});
  p.stop();
  std::vector<prof::MemoryRecord> device, cpu;
  for (const prof::MemoryRecord& m : p.memory_events())
    (m.device.is_cpu() ? cpu : device).push_back(m);
  ASSERT_EQ(device.size(), 2u);
  EXPECT_EQ(device[0].device, Device(kCUDA, 0));
  EXPECT_EQ(device[0].bytes, 1 << 20);
  EXPECT_EQ(device[1].allocated_bytes, 0);
  EXPECT_EQ(device[1].reserved_bytes, 2 << 20);
  EXPECT_FALSE(cpu.empty()) << "the host tensor's allocation";
  std::map<std::string, int> tracks;
  const nlohmann::json doc = nlohmann::json::parse(p.chrome_trace());
  for (const auto& e : doc.at("traceEvents"))
    if (e.at("ph") == "C") ++tracks[e.at("name").get<std::string>()];
  EXPECT_EQ(tracks["cuda:0 memory"], 2);
  EXPECT_EQ(size_t(tracks["CPU memory"]), cpu.size());
  report_memory_event(MemoryEvent{Device(kCUDA, 0), 64, 64, 64});  // no profile: nobody sees it
  EXPECT_EQ(p.memory_events().size(), device.size() + cpu.size());
}

}  // namespace

namespace {
// Kept out of line so that it is a frame of its own in the recorded stack.
__attribute__((noinline)) Tensor user_step_for_stack_test(const Tensor& a) {
  Tensor r = a.mul(2);
  asm volatile("" ::: "memory");  // not a tail call
  return r;
}
}  // namespace

TEST(Profiler, WithStackRecordsTheCppCallersFrames) {
  // Note [Native call stacks]: without a Python stack provider, ops called by C++ code carry
  // the C++ frames outside libretorch, innermost first.
  Tensor a = randn({3});
  prof::ProfilerOptions o;
  o.with_stack = true;
  prof::Profile p(o);
  Tensor b = user_step_for_stack_test(a);
  p.stop();
  const std::vector<prof::Event> events = p.events();
  const prof::Event* mul = nullptr;
  for (const prof::Event& e : events)
    if (e.name == "aten::mul" && e.depth == 0) mul = &e;
  ASSERT_NE(mul, nullptr);
  ASSERT_FALSE(mul->stack.empty());
  EXPECT_NE(mul->stack[0].find("user_step_for_stack_test"), std::string::npos) << mul->stack[0];
  bool body = false;
  for (const std::string& f : mul->stack) {
    body |= f.find("WithStackRecordsTheCppCallersFrames") != std::string::npos;
    EXPECT_EQ(f.find("retorch::Dispatcher"), std::string::npos) << f;
    EXPECT_EQ(f.find("profiler_fallback"), std::string::npos) << f;
  }
  EXPECT_TRUE(body) << "the test body is a frame below the helper";
  // Without with_stack nothing is recorded.
  prof::Profile q;
  Tensor c = user_step_for_stack_test(a);
  q.stop();
  for (const prof::Event& e : q.events()) EXPECT_TRUE(e.stack.empty());
}
