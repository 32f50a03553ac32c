// The CUDA backend's runtime layer (Note [CUDA build]): on every machine the device API stays
// truthful and the runtime's queries fail clearly without a GPU; on a GPU machine the
// allocator, copies, streams, events and kernels are checked against host arithmetic.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "retorch/compiler/Compiler.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/device/DeviceFallback.h"
#include "retorch/runtime/LaunchManager.h"
#include "test_helpers.h"

#ifdef RETORCH_HAVE_CUDA
#include "retorch/backend/cuda/BlockPool.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/backend/cuda/CudaRuntime.h"
#endif

namespace {

using namespace retorch;
using retorch::testing::catch_error;
using retorch::testing::contains;

TEST(CudaRuntime, DeviceApiIsTruthfulAndCudaTensorsComputeEitherWay) {
  // With a device, cuda tensors live in its memory; without one, on the host through the
  // fallback. Either way a program gets cpu's values and its tensors say cuda.
  EXPECT_EQ(cuda::is_available(), cuda::device_count() > 0);
  Tensor x = ones({3}).to(Device(kCUDA));
  EXPECT_TRUE(x.device().is_cuda());
  EXPECT_EQ(x.impl()->storage()->device().is_cuda(), cuda::is_available());
  EXPECT_EQ(retorch::testing::values((x + x).to(Device(kCPU))), (std::vector<double>{2, 2, 2}));
}

#ifdef RETORCH_HAVE_CUDA

namespace cb = retorch::cuda_backend;

TEST(CudaRuntime, WithoutADeviceQueriesAnswerZeroAndCallsFailClearly) {
  if (cb::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(cb::unavailable_reason().empty());
  EXPECT_TRUE(contains(catch_error([] { cb::set_device(0); }).what(),
                       {"cuda.set_device: CUDA is not available: ", cb::unavailable_reason()}));
  EXPECT_TRUE(contains(catch_error([] { cb::create_stream(); }).what(), {"cuda.Stream"}));
  EXPECT_TRUE(contains(catch_error([] { cb::synchronize(); }).what(), {"not available"}));
  EXPECT_TRUE(contains(catch_error([] { cuda::get_device_properties(); }).what(),
                       {"cuda.get_device_properties: no cuda device is available"}));
  EXPECT_TRUE(contains(catch_error([] { cuda::mem_get_info(); }).what(), {"mem_get_info"}));
}

// The host side of the op kernels (Note [CUDA op kernels]), which runs without a device.
TEST(CudaOps, VariantsStridesAndTypesAreReadOffTheCall) {
  auto variant = [](const char* name) {
    return cb::variant_of(Dispatcher::singleton().find(name)->schema());
  };
  EXPECT_EQ(variant("add.Tensor"), cb::Variant::kFunctional);
  EXPECT_EQ(variant("add_.Tensor"), cb::Variant::kInplace);
  EXPECT_EQ(variant("add.Tensor_out"), cb::Variant::kOut);
  EXPECT_EQ(variant("exp.out"), cb::Variant::kOut);
  EXPECT_EQ(variant("mm"), cb::Variant::kFunctional);
  const Tensor col = zeros({5, 1});
  EXPECT_EQ(cb::broadcast_strides(col, {3, 5, 4}), (DimVector{0, 1, 0}));
  const Tensor t = zeros({4, 6}).t();
  EXPECT_EQ(cb::broadcast_strides(t, {2, 6, 4}), (DimVector{0, 1, 6}));
  EXPECT_EQ(cb::float_type(kBFloat16), cb::FloatType::kBFloat16);
  EXPECT_FALSE(cb::float_type(kLong).has_value());
}

TEST(CudaBlockPool, SplitsBestFitsAndMergesSegmentsWithoutADevice) {
  // Note [Allocator block splitting], on fake segment addresses.
  using BP = cb::BlockPool;
  EXPECT_EQ(BP::round_request(1), 512u);
  EXPECT_EQ(BP::round_request(1025), 1536u);
  EXPECT_EQ(BP::segment_size(1024), BP::kSmallSegment);
  EXPECT_EQ(BP::segment_size(size_t(3) << 20), BP::kLargeSegment);
  EXPECT_EQ(BP::segment_size((size_t(11) << 20) + 1), size_t(12) << 20);
  std::vector<char> arena(size_t(24) << 20);
  char* base = arena.data();
  BP pool;
  const BP::Key small{0, nullptr, 0, true}, large{0, nullptr, 0, false};
  const BP::Key other_stream{0, base, 0, true};
  EXPECT_EQ(pool.take(small, 1024), nullptr) << "no segment yet";
  pool.add_segment(small, base, BP::kSmallSegment);
  BP::Block* a = pool.take(small, 1024);
  BP::Block* b = pool.take(small, 2048);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->ptr, base);
  EXPECT_EQ(b->ptr, base + 1024);
  EXPECT_EQ(pool.take(other_stream, 512), nullptr) << "blocks stay on their stream";
  pool.give_back(a);
  BP::Block* c = pool.take(small, 512);  // best fit: the freed 1024 bytes, split
  EXPECT_EQ(c->ptr, base);
  EXPECT_EQ(c->size, 512u);
  EXPECT_EQ(pool.free_blocks(), 2u);  // [512 free] and the segment's tail
  EXPECT_TRUE(pool.release_free_segments([](const BP::Key&) { return true; }).empty())
      << "a segment with blocks in use stays";
  pool.give_back(b);
  pool.give_back(pool.allocated_at(base));
  EXPECT_EQ(pool.free_blocks(), 1u) << "all merged into one block";
  EXPECT_EQ(pool.free_bytes(), BP::kSmallSegment);
  // The large pool splits only when more than 1 MiB is left.
  char* lbase = base + BP::kSmallSegment;
  pool.add_segment(large, lbase, BP::kLargeSegment);
  BP::Block* l1 = pool.take(large, size_t(19) << 20);
  EXPECT_EQ(l1->size, size_t(20) << 20) << "1 MiB left: not worth a block";
  pool.give_back(l1);
  BP::Block* l2 = pool.take(large, size_t(3) << 20);
  EXPECT_EQ(l2->size, size_t(3) << 20);
  EXPECT_EQ(pool.take(large, size_t(5) << 20)->ptr, lbase + (size_t(3) << 20));
  // A graph pool's blocks join the stream's pool when the graph goes.
  const BP::Key graph{0, nullptr, 7, true};
  std::vector<char> g(BP::kSmallSegment);
  pool.add_segment(graph, g.data(), g.size());
  BP::Block* gb = pool.take(graph, 512);
  pool.dissolve_pool(7);
  pool.give_back(gb);
  const auto released = pool.release_free_segments(
      [](const BP::Key& k) { return std::get<3>(k); });  // the small pool's whole segments
  ASSERT_EQ(released.size(), 2u);
  for (const auto& [ptr, bytes, key] : released) {
    EXPECT_EQ(bytes, BP::kSmallSegment);
    EXPECT_EQ(std::get<2>(key), 0) << "the graph's segment is the stream's now";
  }
  EXPECT_EQ(pool.allocated_at(lbase)->size, size_t(3) << 20);
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cb::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cb::unavailable_reason();
  }
};

TEST_F(CudaDevice, PropertiesAndFreeMemoryDescribeTheDevice) {
  const DeviceProperties p = cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 8);  // this build's oldest target, sm_80
  EXPECT_GT(p.multi_processor_count, 0);
  EXPECT_GT(p.l2_cache_size, 0);
  const auto [free, total] = cuda::mem_get_info();
  EXPECT_EQ(total, p.total_memory);
  EXPECT_GT(free, 0);
  EXPECT_LE(free, total);
  EXPECT_TRUE(contains(catch_error([] { cuda::get_device_properties(99); }).what(),
                       {"invalid device ordinal 99"}));
}

std::vector<float> to_host(const float* d, size_t n, cb::StreamHandle s = nullptr) {
  std::vector<float> h(n);
  cb::copy_async(h.data(), d, n * sizeof(float), cb::CopyKind::kDeviceToHost, s);
  cb::synchronize_stream(s);
  return h;
}

TEST_F(CudaDevice, AllocatorCachesBlocksPerStreamAndCountsBytes) {
  // Note [Allocator block splitting] on the device: blocks carved from segments, reused on
  // their own stream only, segments returned by empty_cache once wholly free.
  Allocator* a = cb::caching_allocator();
  a->empty_cache();
  cb::StreamHandle s = cb::create_stream(), s2 = cb::create_stream();  // no segments yet
  const AllocatorStats before = a->stats();
  auto grew = [&](int64_t AllocatorStats::*field) { return a->stats().*field - before.*field; };
  char* first = static_cast<char*>(cb::raw_alloc(1000, s));  // 1024 bytes of a 2 MiB segment
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(grew(&AllocatorStats::allocated_bytes), 1024);
  EXPECT_EQ(grew(&AllocatorStats::reserved_bytes), int64_t(cb::BlockPool::kSmallSegment));
  char* second = static_cast<char*>(cb::raw_alloc(1000, s));
  EXPECT_EQ(second, first + 1024) << "carved from the same segment";
  EXPECT_EQ(grew(&AllocatorStats::num_os_allocs), 1);
  cb::raw_free(first);
  EXPECT_EQ(cb::raw_alloc(512, s), first) << "the freed block, split";
  void* other = cb::raw_alloc(1024, s2);  // a block freed on one stream stays on it
  EXPECT_NE(other, first + 512);
  EXPECT_EQ(grew(&AllocatorStats::num_os_allocs), 2);
  char* big = static_cast<char*>(cb::raw_alloc(size_t(3) << 20, s));  // a 20 MiB segment
  char* big2 = static_cast<char*>(cb::raw_alloc(size_t(5) << 20, s));
  EXPECT_EQ(big2, big + (size_t(3) << 20)) << "the rest of the large segment";
  EXPECT_EQ(grew(&AllocatorStats::reserved_bytes),
            int64_t(2 * cb::BlockPool::kSmallSegment + cb::BlockPool::kLargeSegment));
  for (void* p : {static_cast<void*>(first), static_cast<void*>(second), other,
                  static_cast<void*>(big), static_cast<void*>(big2)})
    cb::raw_free(p);
  EXPECT_EQ(grew(&AllocatorStats::allocated_bytes), 0);
  cb::synchronize_stream(s);
  cb::synchronize_stream(s2);
  a->empty_cache();
  EXPECT_EQ(grew(&AllocatorStats::reserved_bytes), 0) << "every segment merged whole, released";
  EXPECT_GE(a->stats().peak_allocated_bytes, before.allocated_bytes + (8 << 20));
  cb::destroy_stream(s);
  cb::destroy_stream(s2);
}

TEST_F(CudaDevice, CopiesAndKernelsMatchTheHost) {
  const int64_t n = 100003;  // not a multiple of the block size
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) a[size_t(i)] = float(i % 97) * 0.5f, b[size_t(i)] = float(i % 13);
  cb::StreamHandle s = cb::create_stream();
  auto* da = static_cast<float*>(cb::raw_alloc(n * sizeof(float), s));
  auto* db = static_cast<float*>(cb::raw_alloc(n * sizeof(float), s));
  auto* dout = static_cast<float*>(cb::raw_alloc(n * sizeof(float), s));
  cb::copy_async(da, a.data(), n * sizeof(float), cb::CopyKind::kHostToDevice, s);
  cb::copy_async(db, b.data(), n * sizeof(float), cb::CopyKind::kHostToDevice, s);
  cb::add(da, db, -2.0f, dout, n, s);
  std::vector<float> got = to_host(dout, size_t(n), s);
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(got[size_t(i)], a[size_t(i)] - 2 * b[size_t(i)]);
  cb::fill(dout, 3.25f, n, s);
  cb::copy_async(db, dout, n * sizeof(float), cb::CopyKind::kDeviceToDevice, s);
  got = to_host(db, size_t(n), s);
  EXPECT_EQ(got.front(), 3.25f);
  EXPECT_EQ(got.back(), 3.25f);
  // The transpose of da's first 15 floats as a 5 x 3 matrix, made contiguous (3 x 5).
  const int64_t sizes[2] = {3, 5}, strides[2] = {1, 3};
  cb::gather_strided(da, sizes, strides, 2, dout, s);
  got = to_host(dout, 15, s);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(got[size_t(i * 5 + j)], a[size_t(j * 3 + i)]);
  for (float* p : {da, db, dout}) cb::raw_free(p);
  cb::destroy_stream(s);
}

TEST_F(CudaDevice, StreamsAndEventsOrderAndTimeWork) {
  cb::StreamHandle s1 = cb::create_stream(), s2 = cb::create_stream(-1);
  cb::EventHandle start = cb::create_event(true), end = cb::create_event(true);
  cb::EventHandle done = cb::create_event(false);
  const int64_t n = 1 << 24;
  auto* d = static_cast<float*>(cb::raw_alloc(n * sizeof(float), s1));
  cb::record_event(start, s1);
  cb::fill(d, 1.0f, n, s1);
  cb::record_event(end, s1);
  cb::record_event(done, s1);
  // s2 adds d to itself only after s1's fill (a cross-stream wait, not a host wait).
  cb::stream_wait_event(s2, done);
  cb::add(d, d, 1.0f, d, n, s2);
  cb::synchronize_stream(s2);
  EXPECT_TRUE(cb::query_stream(s1));
  EXPECT_TRUE(cb::query_event(end));
  EXPECT_GE(cb::elapsed_ms(start, end), 0.0f);
  std::vector<float> got = to_host(d, size_t(n), s2);
  EXPECT_EQ(got[0], 2.0f);
  EXPECT_EQ(got[size_t(n - 1)], 2.0f);
  // Timing needs timing events.
  EXPECT_TRUE(contains(catch_error([&] { cb::elapsed_ms(done, end); }).what(),
                       {"CUDA error in cudaEventElapsedTime"}));
  cb::raw_free(d);
  for (cb::EventHandle e : {start, end, done}) cb::destroy_event(e);
  cb::destroy_stream(s1);
  cb::destroy_stream(s2);
  cb::synchronize();
}

TEST_F(CudaDevice, TensorsLiveInDeviceMemoryAndOpsRunThroughCopies) {
  // Note [CUDA tensors]: copies are the backend's kernels; other ops take the fallback's copies.
  const Device gpu(kCUDA, int8_t(cb::current_device()));
  cuda::empty_cache();
  const int64_t reserved_before = cuda::memory_reserved();
  const int64_t before = cuda::memory_allocated();
  Tensor a_cpu = arange(12, TensorOptions(kFloat)).reshape({3, 4});
  Tensor a = a_cpu.to(gpu);
  EXPECT_TRUE(a.impl()->storage()->device().is_cuda());
  EXPECT_GE(cuda::memory_allocated() - before, 48);
  EXPECT_EQ(retorch::testing::values(a.to(Device(kCPU))), retorch::testing::values(a_cpu));
  // Strided and converting copies both ways.
  EXPECT_EQ(retorch::testing::values(a.t().to(Device(kCPU))),
            retorch::testing::values(a_cpu.t()));
  EXPECT_EQ(retorch::testing::values(a_cpu.t().to(gpu).to(Device(kCPU))),
            retorch::testing::values(a_cpu.t()));
  Tensor d = a.to(kDouble);
  EXPECT_EQ(d.dtype(), kDouble);
  EXPECT_TRUE(d.device().is_cuda());
  // Routed ops, in-place writes through a view, results in device memory.
  Tensor m = matmul(a, a.t()) + 1;
  EXPECT_TRUE(m.impl()->storage()->device().is_cuda());
  EXPECT_TRUE(retorch::testing::all_close(m.to(Device(kCPU)), matmul(a_cpu, a_cpu.t()) + 1));
  a.select(0, 1).mul_(10);
  EXPECT_EQ(retorch::testing::values(a.to(Device(kCPU))[1]),
            (std::vector<double>{40, 50, 60, 70}));
  // Autograd on the device.
  Tensor w = ones({4}, TensorOptions(kFloat).device(gpu)).requires_grad_(true);
  (a_cpu.to(gpu) * w).sum().backward();
  EXPECT_TRUE(w.grad().device().is_cuda());
  EXPECT_EQ(retorch::testing::values(w.grad().to(Device(kCPU))),
            (std::vector<double>{12, 15, 18, 21}));
  a = Tensor(), d = Tensor(), m = Tensor();
  cuda::empty_cache();  // what is left: the small segment that w and its gradient share
  EXPECT_LE(cuda::memory_reserved(), reserved_before + int64_t(cb::BlockPool::kSmallSegment));
}

TEST_F(CudaDevice, CompiledKernelsRunOnTheDevice) {
  // Note [Generated CUDA kernels]: NVRTC builds the CUDA emitter's source for this device.
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = (x[0] * 2 + x[1]).tanh() + x[0].relu();
    return std::vector<Tensor>{y, softmax(y, -1)};
  };
  std::vector<Tensor> host = {randn({300, 70}), randn({70, 300}).t()};
  std::vector<Tensor> dev = {host[0].to(Device(kCUDA)), host[1].to(Device(kCUDA))};
  auto f = compile(fn);
  std::vector<Tensor> got = f(dev), want = fn(host);
  EXPECT_NE(f.last().source.find("__global__"), std::string::npos);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].device().is_cuda());
    std::vector<double> g = retorch::testing::values(got[i].to(Device(kCPU)));
    std::vector<double> w = retorch::testing::values(want[i]);
    ASSERT_EQ(g.size(), w.size());
    for (size_t j = 0; j < g.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-5 + 1e-5 * std::abs(w[j]));
  }
}

TEST_F(CudaDevice, PoolStreamsCarryTheOpsCopiesAndLaunchRecordsOfTheirThread) {
  // Note [CUDA streams]: a pool of 32 streams per priority class, handed out round robin.
  const int dev = cb::current_device();
  const int64_t first = cb::pool_stream(dev, 0);
  EXPECT_GE(first, 1);
  for (int i = 1; i < cb::kStreamsPerClass; ++i) EXPECT_NE(cb::pool_stream(dev, 0), first);
  EXPECT_EQ(cb::pool_stream(dev, 0), first);
  EXPECT_GT(cb::pool_stream(dev, -1), cb::kStreamsPerClass);
  EXPECT_TRUE(contains(catch_error([&] { cb::stream_handle(dev, 1000); }).what(),
                       {"unknown stream id 1000"}));
  const Device gpu(kCUDA, int8_t(dev));
  Tensor x = arange(1 << 20, TensorOptions(kFloat)).to(gpu);
  const Stream side = device_api::new_stream(gpu);
  side.wait_stream(cuda::current_stream());  // x is ready before side's work reads it
  device_api::set_stream(side);
  EXPECT_EQ(cb::current_stream(), cb::stream_handle(dev, side.id()));
  auto launches = std::make_shared<runtime::CountingObserver>();
  runtime::LaunchManager::get().add_observer(launches);
  Tensor id = eye(1024, std::nullopt, TensorOptions(kFloat).device(gpu));
  Tensor y = matmul((x * 2 + 1).reshape({1024, 1024}), id);
  Tensor host = y.to(Device(kCPU));  // waits for the side stream
  runtime::LaunchManager::get().remove_observer(launches);
  device_api::set_stream(cuda::default_stream());
  EXPECT_EQ(cb::current_stream(), nullptr);
  EXPECT_TRUE(retorch::testing::all_close(host, (arange(1 << 20, TensorOptions(kFloat)) * 2 + 1)
                                                    .reshape({1024, 1024})));
  int on_device = 0;
  for (const runtime::LaunchRecord& r : launches->records())
    if (r.device.is_cuda()) {
      EXPECT_EQ(r.stream, side.id()) << r.name;
      ++on_device;
    }
  EXPECT_GE(on_device, 3);  // mul, add, mm (and eye's kernels)
}

TEST_F(CudaDevice, RecordStreamKeepsABlockUntilTheOtherStreamPassesItsFree) {
  const int dev = cb::current_device();
  cb::StreamHandle s1 = cb::stream_handle(dev, cb::pool_stream(dev, 0));
  cb::StreamHandle s2 = cb::stream_handle(dev, cb::pool_stream(dev, 0));
  const size_t bytes = size_t(3) << 20;
  void* p = cb::raw_alloc(bytes, s1);
  const int64_t n = int64_t(1) << 28;  // a GiB of floats filled 100 times: tens of ms on s2
  auto* busy = static_cast<float*>(cb::raw_alloc(size_t(n) * sizeof(float), s2));
  for (int i = 0; i < 100; ++i) cb::fill(busy, float(i), n, s2);
  cb::record_stream(p, s2);
  cb::raw_free(p);
  void* q = cb::raw_alloc(bytes, s1);
  const bool s2_was_busy = !cb::query_stream(s2);
  cb::synchronize_stream(s2);
  void* r = cb::raw_alloc(bytes, s1);
  EXPECT_EQ(r, p) << "the block returns to s1 once s2 has passed the free";
  for (void* ptr : {q, r, static_cast<void*>(busy)}) cb::raw_free(ptr);
  if (!s2_was_busy) GTEST_SKIP() << "s2 finished before the reuse check";
  EXPECT_NE(q, p) << "reused while s2 may still have been using it";
}

TEST_F(CudaDevice, IndexKernelsSortsAndNonzeroGiveTheCpuResults) {
  // Note [CUDA index ops]: each op on cuda tensors gives the cpu kernel's result, on the device
  // (none of them reaches the fallback).
  std::vector<float> xs(60);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = float(int(k * 7 % 11) - 5);  // ties and zeros
  const Tensor x = tensor(xs).reshape({3, 4, 5});
  const Tensor d = x.to(Device(kCUDA, 0));
  const Tensor idx = tensor(std::vector<int64_t>{2, 0, 2, 1});
  const Tensor di = idx.to(Device(kCUDA, 0));
  reset_device_fallback_stats();
  auto same = [](const Tensor& got, const Tensor& want) {
    EXPECT_EQ(got.device().type, kCUDA);
    EXPECT_TRUE(retorch::testing::all_close(got.to(Device(kCPU)), want, 0, 0));
  };
  auto [v, i] = sort(d, std::optional<bool>(true), 1, true);
  auto [cv, ci] = sort(x, std::optional<bool>(true), 1, true);
  same(v, cv);
  same(i, ci);
  same(index_select(d, 2, di), index_select(x, 2, idx));
  std::vector<int64_t> gs(60);
  for (size_t k = 0; k < gs.size(); ++k) gs[k] = int64_t(k * 5 % 3);
  const Tensor gi = tensor(gs).reshape({3, 4, 5});
  same(gather(d, 0, gi.to(Device(kCUDA, 0))), gather(x, 0, gi));
  same(scatter_add(d, 0, gi.to(Device(kCUDA, 0)), d), scatter_add(x, 0, gi, x));
  same(index_put(d, {std::optional<Tensor>(di)}, ones({4, 4, 5}).to(Device(kCUDA, 0)), true),
       index_put(x, {std::optional<Tensor>(idx)}, ones({4, 4, 5}), true));
  same(nonzero(d), nonzero(x));
  same(index(d, {std::nullopt, std::optional<Tensor>(di)}),
       index(x, {std::nullopt, std::optional<Tensor>(idx)}));
  EXPECT_TRUE(device_fallback_stats().empty());
}

#endif  // RETORCH_HAVE_CUDA

}  // namespace
