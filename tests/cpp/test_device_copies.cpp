// The device fallback's copy path (Note [Fallback copies]) on a fake device with its own
// memory: xpu tensors whose bytes are stored scrambled, readable only through the fake
// backend's copy_ kernel, so any kernel that touched them directly would compute garbage.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "retorch/core/TensorImpl.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/device/DeviceFallback.h"
#include "retorch/dispatch/Dispatcher.h"
#include "retorch/optim/optim.h"
#include "retorch/profiler/Profiler.h"
#include "retorch/runtime/LaunchManager.h"
#include "test_helpers.h"

namespace {

using namespace retorch;
using retorch::testing::values;

constexpr unsigned char kScramble = 0x5a;

void scramble(void* p, size_t n) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] ^= kScramble;
}

// Device memory of the fake xpu: host bytes, stored scrambled.
class ScrambledAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    void* p = std::calloc(nbytes ? nbytes : 1, 1);
    scramble(p, nbytes);  // zeros through copy_, garbage when read directly
    return DataPtr(p, nbytes, nullptr, [](void*, void* q, size_t) { std::free(q); },
                   Device(kXPU, 0));
  }
  AllocatorStats stats() const override { return {}; }
};

// A cpu tensor over an unscrambled copy of t's storage, with t's geometry; write_back puts its
// bytes back, scrambled.
struct PlainView {
  Tensor owner, view;
  explicit PlainView(const Tensor& t) {
    const Storage& st = t.impl()->storage();
    owner = make_empty({int64_t(st->nbytes())}, kByte);
    std::memcpy(owner.data_ptr(), st->data(), st->nbytes());
    scramble(owner.data_ptr(), st->nbytes());
    auto impl = make_intrusive<TensorImpl>(owner.impl()->storage(), t.dtype(), Device(kCPU));
    impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
    view = Tensor(std::move(impl));
  }
  void write_back(const Tensor& t) {
    const Storage& st = t.impl()->storage();
    std::memcpy(st->data(), owner.data_ptr(), st->nbytes());
    scramble(st->data(), st->nbytes());
  }
};

// copy_(self, src, non_blocking) for any mix of cpu and fake-xpu tensors: unscrambled views,
// the cpu kernel between them (dtype conversion, broadcasting, strides), then the bytes back.
int g_copies = 0;
void fake_copy(const OperatorHandle&, DispatchKeySet, Stack* stack) {
  ++g_copies;
  Tensor self = (*stack)[stack->size() - 3].to_tensor();
  Tensor src = (*stack)[stack->size() - 2].to_tensor();
  std::optional<PlainView> ps, pd;
  if (src.device().type == kXPU) ps.emplace(src);
  if (self.device().type == kXPU) pd.emplace(self);
  (pd ? pd->view : self).copy_(ps ? ps->view : src);
  if (pd) pd->write_back(self);
  stack->erase(stack->end() - 3, stack->end());
  stack->push_back(IValue(self));
}

// xpu as a backend with its own memory and one kernel, copy_; every other op reaches the
// device fallback, which must copy (Note [Fallback copies]) and runs it on the cpu (on a machine
// with a GPU the default order would run it on cuda).
class FakeDeviceMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    order_ = device_fallback_order();
    set_device_fallback_order({kCPU});
    keys_ = device_key_set(kXPU);
    set_allocator(kXPU, &allocator_);
    set_device_key_set(kXPU, DispatchKeySet(DispatchKey::XPU));
    copy_op().set_kernel(DispatchKey::XPU, make_boxed_kernel(&fake_copy));
    g_copies = 0;
  }
  void TearDown() override {
    copy_op().set_kernel(DispatchKey::XPU, KernelFunction{});
    set_device_key_set(kXPU, keys_);
    set_allocator(kXPU, nullptr);
    set_device_fallback_order(order_);
  }
  static OperatorHandle& copy_op() { return *Dispatcher::singleton().find("copy_"); }
  // The values of an xpu tensor, read through copy_ (as a program would).
  static std::vector<double> read(const Tensor& t) {
    EXPECT_EQ(t.device().type, kXPU);
    return values(t.to(Device(kCPU)));
  }
  ScrambledAllocator allocator_;
  DispatchKeySet keys_;
  std::vector<DeviceType> order_;
};

TEST_F(FakeDeviceMemory, OpsGiveCpuValuesAndResultsLiveInDeviceMemory) {
  const Device xpu(kXPU, 0);
  EXPECT_TRUE(device_has_backend(kXPU));
  Tensor a_cpu = arange(6, TensorOptions(kFloat)).reshape({2, 3});
  Tensor a = a_cpu.to(xpu);
  EXPECT_EQ(a.device(), xpu);
  EXPECT_EQ(a.impl()->storage()->device().type, kXPU) << "device memory, not a host view";
  EXPECT_GT(g_copies, 0);
  EXPECT_EQ(read(a), values(a_cpu));
  // The host does not read device memory: a clear error, not scrambled numbers.
  try {
    (void)a.data_ptr<float>();
    ADD_FAILURE() << "data_ptr of an xpu tensor in device memory did not raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("from the host: its memory is on the device"),
              std::string::npos)
        << e.what();
  }
  Tensor b = (a * 2 + 1).exp().sum(1);  // three routed ops, each copying in and out
  EXPECT_EQ(b.impl()->storage()->device().type, kXPU);
  EXPECT_TRUE(retorch::testing::all_close(b.to(Device(kCPU)), (a_cpu * 2 + 1).exp().sum(1)));
  Tensor z = zeros({4}, TensorOptions(kLong).device(xpu));  // a factory: made on cpu, copied
  EXPECT_EQ(z.impl()->storage()->device().type, kXPU);
  EXPECT_EQ(read(z), (std::vector<double>{0, 0, 0, 0}));
  Tensor m = matmul(a, a.t());  // a transposed (strided) argument
  EXPECT_EQ(read(m), values(matmul(a_cpu, a_cpu.t())));
  Tensor c = cat({a, a_cpu.to(xpu) + 10}, 0);  // a tensor list
  EXPECT_EQ(read(c), values(cat({a_cpu, a_cpu + 10}, 0)));
}

TEST_F(FakeDeviceMemory, WrittenArgumentsAreCopiedBackIntoTheCallersTensors) {
  const Device xpu(kXPU, 0);
  Tensor a = arange(6, TensorOptions(kFloat)).reshape({2, 3}).to(xpu);
  Tensor same = a.add_(1);  // in-place: the result is the caller's tensor, with the new values
  EXPECT_EQ(same.impl(), a.impl());
  EXPECT_EQ(read(a), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  Tensor row = a.select(0, 1);  // a view (no fallback); writing through it reaches a's memory
  row.mul_(10);
  EXPECT_EQ(read(a), (std::vector<double>{1, 2, 3, 40, 50, 60}));
  Tensor col = a.select(1, 0);  // a strided view
  col.zero_();
  EXPECT_EQ(read(a), (std::vector<double>{0, 2, 3, 0, 50, 60}));
  Tensor out = empty({3}, TensorOptions(kFloat).device(xpu));
  Tensor r = add_out(out, a.select(0, 0), a.select(0, 1));  // out=: written, returned as given
  EXPECT_EQ(r.impl(), out.impl());
  EXPECT_EQ(read(out), (std::vector<double>{0, 52, 63}));
  // Read-only arguments are not copied back: a stays as it was.
  Tensor s = a.sum();
  EXPECT_EQ(read(a), (std::vector<double>{0, 2, 3, 0, 50, 60}));
  EXPECT_EQ(read(s), (std::vector<double>{115}));
}

TEST_F(FakeDeviceMemory, AutogradAndCountersSeeTheCopies) {
  const Device xpu(kXPU, 0);
  reset_device_fallback_stats();
  Tensor w = arange(4, TensorOptions(kFloat)).to(xpu).requires_grad_(true);
  Tensor loss = (w * w).sum();
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().device(), xpu);
  EXPECT_EQ(read(w.grad()), (std::vector<double>{0, 2, 4, 6}));
  int64_t copied = 0, moved = 0;
  for (const FallbackStats& st : device_fallback_stats()) {
    copied += st.bytes_copied;
    moved += st.bytes_moved;
  }
  EXPECT_GT(copied, 0);
  EXPECT_EQ(copied >= moved, true) << "every byte handed between the devices was a copy";
}

TEST_F(FakeDeviceMemory, ABackendWithoutCopiesIsAClearError) {
  // Moving device memory takes the device's copy_ kernel; without one the fallback refuses
  // instead of calling itself for the copy.
  Tensor a = ones({3}).to(Device(kXPU, 0));
  copy_op().set_kernel(DispatchKey::XPU, KernelFunction{});
  try {
    Tensor b = a + 1;
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("that device's backend has no copy_ kernel"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(FakeDeviceMemory, OptimizersStepParametersInDeviceMemoryWithTensorOps) {
  // Note [Optimizer steps on device memory]: each optimizer, three steps on a parameter in the
  // fake device's memory, gives the cpu optimizer's values (its fused loops, checked against
  // torch in test_optim.py) through tensor ops on the device, never a host copy of the
  // parameter; its buffers stay in device memory and its step counter on the cpu, as in PyTorch.
  const Device xpu(kXPU, 0);
  using Make = std::function<std::unique_ptr<optim::Optimizer>(Tensor)>;
  auto one = [](Tensor p) { return std::vector<Tensor>{p}; };
  const std::vector<std::pair<const char*, Make>> cases = {
      {"SGD", [&](Tensor p) { return std::make_unique<optim::SGD>(one(p),
                                  optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01)); }},
      {"SGD nesterov maximize", [&](Tensor p) { return std::make_unique<optim::SGD>(one(p),
           optim::SGDOptions(0.05).momentum(0.8).nesterov(true).maximize(true)); }},
      {"SGD dampening", [&](Tensor p) { return std::make_unique<optim::SGD>(one(p),
           optim::SGDOptions(0.05).momentum(0.7).dampening(0.3)); }},
      {"SGD plain", [&](Tensor p) { return std::make_unique<optim::SGD>(one(p),
                                        optim::SGDOptions(0.1)); }},
      {"Adam", [&](Tensor p) { return std::make_unique<optim::Adam>(one(p),
                                   optim::AdamOptions(0.05).amsgrad(true)); }},
      {"Adam L2 maximize", [&](Tensor p) { return std::make_unique<optim::Adam>(one(p),
           optim::AdamOptions(0.02).weight_decay(0.1).maximize(true)); }},
      {"AdamW", [&](Tensor p) { return std::make_unique<optim::AdamW>(one(p)); }},
      {"AdamW amsgrad", [&](Tensor p) { return std::make_unique<optim::AdamW>(one(p),
           optim::AdamWOptions(0.03).weight_decay(0.2).amsgrad(true)); }},
      {"RMSprop", [&](Tensor p) { return std::make_unique<optim::RMSprop>(one(p),
                                      optim::RMSpropOptions(0.01).centered(true).momentum(0.5)); }},
      {"RMSprop plain", [&](Tensor p) { return std::make_unique<optim::RMSprop>(one(p),
           optim::RMSpropOptions(0.01).weight_decay(0.05)); }},
      {"Adagrad", [&](Tensor p) { return std::make_unique<optim::Adagrad>(one(p),
                                      optim::AdagradOptions(0.1)); }},
      {"Adagrad decay", [&](Tensor p) { return std::make_unique<optim::Adagrad>(one(p),
           optim::AdagradOptions(0.1).lr_decay(0.01).weight_decay(0.1)
               .initial_accumulator_value(0.2).maximize(true)); }}};
  for (const auto& [name, make] : cases) {
    SCOPED_TRACE(name);
    Tensor init = arange(6, TensorOptions(kFloat)).reshape({2, 3}) * 0.3 - 0.7;
    Tensor host = init.clone().requires_grad_(true);
    Tensor dev = init.to(xpu).requires_grad_(true);
    auto oh = make(host), od = make(dev);
    for (int step = 0; step < 3; ++step) {
      for (auto [p, o] : {std::pair{host, oh.get()}, std::pair{dev, od.get()}}) {
        o->zero_grad();
        (p * p * p).sum().backward();
        auto launches = std::make_shared<runtime::CountingObserver>();
        runtime::LaunchManager::get().add_observer(launches);
        o->step();
        runtime::LaunchManager::get().remove_observer(launches);
        if (p.impl() == dev.impl()) {
          // Each op of the update reaches the fallback, whose cpu kernel the host copy's fused
          // loop would not call.
          EXPECT_GT(launches->count("cpu::add_"), 0) << "the update ran as tensor ops";
        }
      }
      const std::vector<double> got = values(dev.to(Device(kCPU))), want = values(host);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 2e-6 * (1 + std::abs(want[i]))) << i;
    }
    EXPECT_EQ(dev.impl()->storage()->device().type, kXPU);
    for (const auto& item : od->state(dev).items()) {
      const DeviceType where = item.value.impl()->storage()->device().type;
      EXPECT_EQ(where, item.key == "step" ? kCPU : kXPU) << item.key;
    }
  }
}

}  // namespace

// A device kernel's launch record names the stream it was queued on, the thread's current stream
// of the device (Note [Launch manager]); the profiler's kernel events and trace carry it too.
TEST_F(FakeDeviceMemory, LaunchesAndTheProfilerRecordTheCurrentStream) {
  const Device xpu(kXPU, 0);
  Tensor a = arange(6, TensorOptions(kFloat)).to(xpu);
  Tensor b = a.clone();
  const Stream side = device_api::new_stream(xpu);
  ASSERT_NE(side.id(), 0);
  ASSERT_NE(side.id(), device_api::new_stream(xpu).id()) << "each new stream has its own id";
  auto on_default = std::make_shared<runtime::CountingObserver>();
  auto on_side = std::make_shared<runtime::CountingObserver>();
  runtime::LaunchManager::get().add_observer(on_default);
  b.copy_(a);
  runtime::LaunchManager::get().remove_observer(on_default);
  device_api::set_stream(side);
  EXPECT_EQ(device_api::current_stream(kXPU, -1), side);
  runtime::LaunchManager::get().add_observer(on_side);
  profiler::Profile p;
  b.copy_(a + 1);
  p.stop();
  runtime::LaunchManager::get().remove_observer(on_side);
  device_api::set_stream(device_api::default_stream(kXPU, 0));
  auto streams_of = [](const runtime::CountingObserver& o, const std::string& name) {
    std::vector<int64_t> out;
    for (const auto& r : o.records())
      if (r.name == name) out.push_back(r.stream);
    return out;
  };
  EXPECT_EQ(streams_of(*on_default, "xpu::copy_"), (std::vector<int64_t>{0}));
  const std::vector<int64_t> side_copies = streams_of(*on_side, "xpu::copy_");
  ASSERT_FALSE(side_copies.empty());
  for (int64_t id : side_copies) EXPECT_EQ(id, side.id());
  for (int64_t id : streams_of(*on_side, "cpu::add")) EXPECT_EQ(id, 0) << "cpu kernels: stream 0";
  EXPECT_EQ(read(b), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  int device_kernels = 0;  // xpu::copy_, and the fallback's xpu::add around the cpu kernel
  for (const profiler::Event& e : p.events()) {
    if (e.kind != "kernel") continue;
    const bool on_xpu = e.name.rfind("xpu::", 0) == 0;
    EXPECT_EQ(e.stream, on_xpu ? side.id() : -1) << e.name;
    device_kernels += on_xpu;
  }
  EXPECT_GT(device_kernels, int(side_copies.size()));
  int traced = 0;
  const nlohmann::json trace = nlohmann::json::parse(p.chrome_trace());
  for (const auto& j : trace.at("traceEvents"))
    if (j.value("name", "").rfind("xpu::", 0) == 0) {
      EXPECT_EQ(j.at("args").at("stream"), side.id());
      ++traced;
    } else if (j.value("cat", "") == "kernel") {
      EXPECT_FALSE(j.at("args").contains("stream"));
    }
  EXPECT_EQ(traced, device_kernels);
}
