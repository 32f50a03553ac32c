// Core tests: dtypes, promotion, Half/BFloat16, Scalar, Device, views, versions, allocator, RNG.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/core/Allocator.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

// ---------------------------------------------------------------- dtypes and promotion

TEST(ScalarTypeTest, SizesAndNames) {
  EXPECT_EQ(element_size(kByte), 1u);
  EXPECT_EQ(element_size(kChar), 1u);
  EXPECT_EQ(element_size(kBool), 1u);
  EXPECT_EQ(element_size(kShort), 2u);
  EXPECT_EQ(element_size(kHalf), 2u);
  EXPECT_EQ(element_size(kBFloat16), 2u);
  EXPECT_EQ(element_size(kInt), 4u);
  EXPECT_EQ(element_size(kFloat), 4u);
  EXPECT_EQ(element_size(kLong), 8u);
  EXPECT_EQ(element_size(kDouble), 8u);
  EXPECT_EQ(dtype_name(kByte), "uint8");
  EXPECT_EQ(dtype_name(kChar), "int8");
  EXPECT_EQ(dtype_name(kShort), "int16");
  EXPECT_EQ(dtype_name(kInt), "int32");
  EXPECT_EQ(dtype_name(kLong), "int64");
  EXPECT_EQ(dtype_name(kHalf), "float16");
  EXPECT_EQ(dtype_name(kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_name(kFloat), "float32");
  EXPECT_EQ(dtype_name(kDouble), "float64");
  EXPECT_EQ(dtype_name(kBool), "bool");
  EXPECT_TRUE(is_floating_type(kBFloat16));
  EXPECT_FALSE(is_floating_type(kLong));
  EXPECT_TRUE(is_integral_type(kBool, true));
  EXPECT_FALSE(is_integral_type(kBool, false));
  EXPECT_EQ(default_dtype(), kFloat);
}

TEST(ScalarTypeTest, PromoteTypesTable) {
  EXPECT_EQ(promote_types(kByte, kChar), kShort);
  EXPECT_EQ(promote_types(kChar, kByte), kShort);
  EXPECT_EQ(promote_types(kInt, kHalf), kHalf);
  EXPECT_EQ(promote_types(kHalf, kBFloat16), kFloat);
  EXPECT_EQ(promote_types(kBFloat16, kHalf), kFloat);
  EXPECT_EQ(promote_types(kBool, kInt), kInt);
  EXPECT_EQ(promote_types(kBool, kByte), kByte);
  EXPECT_EQ(promote_types(kBool, kBool), kBool);
  EXPECT_EQ(promote_types(kByte, kLong), kLong);
  EXPECT_EQ(promote_types(kShort, kInt), kInt);
  EXPECT_EQ(promote_types(kLong, kFloat), kFloat);
  EXPECT_EQ(promote_types(kLong, kBFloat16), kBFloat16);
  EXPECT_EQ(promote_types(kFloat, kDouble), kDouble);
  EXPECT_EQ(promote_types(kHalf, kFloat), kFloat);
  EXPECT_EQ(promote_types(kBFloat16, kDouble), kDouble);
}

TEST(ScalarTypeTest, ResultTypeCategories) {
  // Dimensioned tensors win over 0-dim tensors and wrapped numbers of the same category.
  Tensor i32 = zeros({2}, kInt);
  Tensor u8 = zeros({2}, kByte);
  Tensor f16 = zeros({2}, kHalf);
  Tensor zero_dim_f64 = zeros({}, kDouble);
  Tensor zero_dim_i64 = zeros({}, kLong);
  EXPECT_EQ(result_type({u8, zero_dim_i64}), kByte);
  EXPECT_EQ(result_type({f16, zero_dim_f64}), kHalf);
  // A higher category in a 0-dim tensor still promotes, to the default dtype for wrapped floats.
  EXPECT_EQ(result_type({i32, scalar_to_tensor(Scalar(2.5))}), kFloat);
  EXPECT_EQ(result_type({i32, zero_dim_f64}), kDouble);
  EXPECT_EQ(result_type({i32, scalar_to_tensor(Scalar(int64_t(7)))}), kInt);
  EXPECT_EQ((i32 + 2.5).dtype(), kFloat);
  EXPECT_EQ((u8 + 300).dtype(), kByte);
  EXPECT_EQ((zeros({2}, kBool) + zeros({2}, kBool)).dtype(), kBool);
  EXPECT_EQ((i32 / i32).dtype(), kFloat);  // true division always floats
}

TEST(HalfTest, RoundTrips) {
  EXPECT_EQ(float(Half(1.0f / 3.0f)), 0.333251953125f);
  EXPECT_EQ(float(Half(1.0f)), 1.0f);
  EXPECT_EQ(Half(1.0f).x, 0x3C00);
  EXPECT_EQ(float(Half(65504.0f)), 65504.0f);      // largest finite half
  EXPECT_EQ(float(Half(65519.0f)), 65504.0f);      // rounds down below the halfway point
  EXPECT_TRUE(std::isinf(float(Half(65520.0f))));  // halfway rounds to even = overflow
  EXPECT_EQ(float(Half(-2.0f)), -2.0f);
  EXPECT_EQ(float(Half(5.9604644775390625e-08f)), 5.9604644775390625e-08f);  // smallest subnormal
  EXPECT_EQ(float(Half(1e-9f)), 0.0f);
  EXPECT_TRUE(std::isnan(float(Half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float(Half(2049.0f)), 2048.0f);  // ties to even
  EXPECT_EQ(float(Half(2051.0f)), 2052.0f);
}

TEST(HalfTest, BFloat16RoundTrips) {
  EXPECT_EQ(BFloat16(1.0f).x, 0x3F80);
  EXPECT_EQ(float(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(BFloat16(1.0f / 3.0f)), 0.333984375f);
  EXPECT_EQ(float(BFloat16(-3.0f)), -3.0f);
  EXPECT_EQ(float(BFloat16(257.0f)), 256.0f);  // 8 bits of mantissa, tie to even
  EXPECT_TRUE(std::isnan(float(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HalfTest, TensorCasts) {
  Tensor t = tensor({1.0 / 3.0, 65520.0, -1.0}, kDouble);
  auto h = values(t.to(kHalf));
  EXPECT_EQ(h[0], 0.333251953125);
  EXPECT_TRUE(std::isinf(h[1]) && h[1] > 0);
  EXPECT_EQ(h[2], -1.0);
  auto b = values(t.to(kBFloat16));
  EXPECT_EQ(b[0], 0.333984375);
  EXPECT_EQ(b[2], -1.0);
  EXPECT_EQ(values(tensor({2.7, -2.7}).to(kInt)), (std::vector<double>{2, -2}));  // truncation
  EXPECT_EQ(values(tensor({0.0, 0.5, -1.0}).to(kBool)), (std::vector<double>{0, 1, 1}));
}

TEST(ScalarTest, TagsAndConversions) {
  Scalar d(1.5), l(int64_t(3)), b(true), i(7);
  EXPECT_TRUE(d.is_floating_point());
  EXPECT_EQ(d.type(), kDouble);
  EXPECT_TRUE(l.is_integral(false));
  EXPECT_EQ(l.type(), kLong);
  EXPECT_EQ(i.type(), kLong);
  EXPECT_TRUE(b.is_boolean());
  EXPECT_EQ(b.type(), kBool);
  EXPECT_FALSE(b.is_integral(false));
  EXPECT_TRUE(b.is_integral(true));
  EXPECT_EQ(d.to<int64_t>(), 1);
  EXPECT_EQ(l.to<double>(), 3.0);
  EXPECT_EQ((-l).to<int64_t>(), -3);
  EXPECT_EQ((-l).type(), kLong);
  EXPECT_EQ((-d).to<double>(), -1.5);
  EXPECT_THROW(-b, Error);
  EXPECT_EQ(Scalar(Half(0.5f)).to<double>(), 0.5);
}

TEST(DeviceTest, Parsing) {
  Device c("cuda:1");
  EXPECT_TRUE(c.is_cuda());
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.str(), "cuda:1");
  Device cuda("cuda");
  EXPECT_EQ(cuda.index, -1);
  EXPECT_EQ(cuda.str(), "cuda");
  Device cpu("cpu");
  EXPECT_TRUE(cpu.is_cpu());
  EXPECT_EQ(cpu.str(), "cpu");
  EXPECT_EQ(Device("cuda:0"), Device(kCUDA, 0));
  EXPECT_FALSE(Device("cuda:0") == Device("cuda:1"));
  EXPECT_THROW(Device("tpu"), Error);
  EXPECT_THROW(Device("cuda:x"), Error);
  EXPECT_THROW(Device("cuda:"), Error);
  EXPECT_TRUE(zeros({1}).device().is_cpu());
}

// ---------------------------------------------------------------- views

TEST(ViewTest, ViewAndTransposeAndPermute) {
  Tensor a = arange(6, kFloat);
  Tensor v = a.view({2, 3});
  EXPECT_EQ(storage_ptr(v), storage_ptr(a));
  EXPECT_EQ(shape(v), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(strides(v), (std::vector<int64_t>{3, 1}));
  Tensor inferred = a.view({-1, 2});
  EXPECT_EQ(shape(inferred), (std::vector<int64_t>{3, 2}));

  Tensor t = v.transpose(0, 1);
  EXPECT_EQ(storage_ptr(t), storage_ptr(a));
  EXPECT_EQ(shape(t), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(strides(t), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(values(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));

  Tensor b = arange(24, kFloat).view({2, 3, 4});
  Tensor p = b.permute({2, 0, 1});
  EXPECT_EQ(storage_ptr(p), storage_ptr(b));
  EXPECT_EQ(shape(p), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(strides(p), (std::vector<int64_t>{1, 12, 4}));
  EXPECT_EQ(p.select(0, 1).select(0, 1).select(0, 2).item<double>(), 12 + 8 + 1);
}

TEST(ViewTest, ExpandSelectSliceNarrow) {
  Tensor a = arange(3, kFloat).view({3, 1});
  Tensor e = a.expand({3, 4});
  EXPECT_EQ(storage_ptr(e), storage_ptr(a));
  EXPECT_EQ(strides(e), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values(e.sum(std::vector<int64_t>{1})), (std::vector<double>{0, 4, 8}));
  Tensor e2 = arange(3, kFloat).expand({2, 3});  // new leading dim gets stride 0
  EXPECT_EQ(strides(e2), (std::vector<int64_t>{0, 1}));
  Tensor e3 = a.expand({-1, 2});
  EXPECT_EQ(shape(e3), (std::vector<int64_t>{3, 2}));

  Tensor m = arange(6, kFloat).view({2, 3});
  Tensor s = m.select(1, 1);
  EXPECT_EQ(storage_ptr(s), storage_ptr(m));
  EXPECT_EQ(shape(s), (std::vector<int64_t>{2}));
  EXPECT_EQ(strides(s), (std::vector<int64_t>{3}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(values(m.select(0, -1)), (std::vector<double>{3, 4, 5}));

  Tensor r = arange(10, kFloat);
  Tensor sl = r.slice(0, 1, 8, 3);
  EXPECT_EQ(storage_ptr(sl), storage_ptr(r));
  EXPECT_EQ(sl.storage_offset(), 1);
  EXPECT_EQ(strides(sl), (std::vector<int64_t>{3}));
  EXPECT_EQ(values(sl), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(r.slice(0, -3)), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(values(r.slice(0, 8, 100)), (std::vector<double>{8, 9}));  // end clamps
  EXPECT_EQ(r.slice(0, 5, 2).numel(), 0);

  Tensor g = arange(20, kFloat).view({4, 5});
  Tensor n = g.narrow(1, 2, 2);
  EXPECT_EQ(storage_ptr(n), storage_ptr(g));
  EXPECT_EQ(n.storage_offset(), 2);
  EXPECT_EQ(shape(n), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(strides(n), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(values(n.select(0, 1)), (std::vector<double>{7, 8}));
}

TEST(ViewTest, AsStridedSqueezeUnsqueezeFlatten) {
  Tensor a = arange(9, kFloat);
  Tensor as = a.as_strided({2, 2}, {3, 1}, 1);
  EXPECT_EQ(storage_ptr(as), storage_ptr(a));
  EXPECT_EQ(values(as), (std::vector<double>{1, 2, 4, 5}));

  Tensor b = zeros({1, 3, 1});
  Tensor sq = b.squeeze();
  EXPECT_EQ(shape(sq), (std::vector<int64_t>{3}));
  EXPECT_EQ(storage_ptr(sq), storage_ptr(b));
  EXPECT_EQ(shape(b.squeeze(0)), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(shape(b.squeeze(1)), (std::vector<int64_t>{1, 3, 1}));  // size != 1: no-op
  Tensor us = sq.unsqueeze(0);
  EXPECT_EQ(shape(us), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(shape(sq.unsqueeze(-1)), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(storage_ptr(us), storage_ptr(b));

  Tensor c = arange(24, kFloat).view({2, 3, 4});
  Tensor f = c.flatten();
  EXPECT_EQ(shape(f), (std::vector<int64_t>{24}));
  EXPECT_EQ(storage_ptr(f), storage_ptr(c));
  EXPECT_EQ(shape(c.flatten(1)), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(shape(c.flatten(0, 1)), (std::vector<int64_t>{6, 4}));
}

TEST(ViewTest, WriteThroughViewIsVisibleInBase) {
  Tensor a = zeros({2, 3});
  a.select(0, 1).fill_(7);
  EXPECT_EQ(values(a), (std::vector<double>{0, 0, 0, 7, 7, 7}));
  a.t().select(0, 0).add_(1);  // column 0
  EXPECT_EQ(values(a), (std::vector<double>{1, 0, 0, 8, 7, 7}));
  Tensor flat = a.view({6});
  flat.slice(0, 0, 6, 2).mul_(10);
  EXPECT_EQ(values(a), (std::vector<double>{10, 0, 0, 8, 70, 7}));
  a.narrow(1, 1, 1).copy_(ones({2, 1}) * 5);
  EXPECT_EQ(values(a), (std::vector<double>{10, 5, 0, 8, 5, 7}));
}

TEST(ViewTest, ContiguousCopiesOnlyWhenNeeded) {
  Tensor a = arange(6, kFloat).view({2, 3});
  Tensor same = a.contiguous();
  EXPECT_TRUE(same.is_same(a));
  Tensor t = a.t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(storage_ptr(c), storage_ptr(a));
  EXPECT_EQ(strides(c), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(c), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(ViewTest, ReshapeViewsWhenPossibleCopiesOtherwise) {
  Tensor a = arange(6, kFloat).view({2, 3});
  Tensor r = a.reshape({3, 2});
  EXPECT_EQ(storage_ptr(r), storage_ptr(a));
  Tensor rt = a.t().reshape({6});
  EXPECT_NE(storage_ptr(rt), storage_ptr(a));
  EXPECT_EQ(values(rt), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  // A copy does not write back.
  rt.fill_(-1);
  EXPECT_EQ(values(a), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(ViewTest, ViewOfNonViewableTensorErrors) {
  Tensor t = arange(6, kFloat).view({2, 3}).t();
  Error e = catch_error([&] { t.view({6}); });
  EXPECT_TRUE(contains(e.message(), {"view size is not compatible", "reshape"}));
  // A transposed tensor can still be viewed when the split dims stay contiguous.
  Tensor u = zeros({4, 6}).t();  // sizes (6, 4) strides (1, 6)
  EXPECT_EQ(shape(u.view({2, 3, 4})), (std::vector<int64_t>{2, 3, 4}));
}

TEST(ViewTest, ViewAsAnotherDtypeSharesTheBytes) {
  Tensor a = zeros({2, 4});
  Tensor b = a.view(kByte);  // Tensor::view(ScalarType), PyTorch's view.dtype
  EXPECT_EQ(shape(b), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(storage_ptr(b), storage_ptr(a));
  a.select(0, 1).select(0, 0).fill_(1.0);  // 0x3F800000: bytes 00 00 80 3F
  EXPECT_EQ(b.select(0, 1).slice(0, 0, 4).to(kLong).sum().item<int64_t>(), 0x80 + 0x3F);
  Tensor w = a.view(kDouble);
  EXPECT_EQ(shape(w), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(scalar_type_name(w.dtype()), "Double");
  Error e = catch_error([&] { a.t().view(kShort); });
  EXPECT_TRUE(contains(e.message(), {"self.stride(-1) must be 1 to view Float as Short"}));
}

// ---------------------------------------------------------------- version counter

TEST(VersionCounterTest, InPlaceOpsBumpVersion) {
  Tensor a = zeros({3});
  uint32_t v = a._version();
  a.add_(1);
  EXPECT_EQ(a._version(), v + 1);
  a.copy_(ones({3}));
  EXPECT_EQ(a._version(), v + 2);
  a.fill_(2);
  EXPECT_EQ(a._version(), v + 3);
  a.zero_();
  EXPECT_EQ(a._version(), v + 4);
  a.mul_(3);
  EXPECT_EQ(a._version(), v + 5);
  a += 1;
  EXPECT_EQ(a._version(), v + 6);
  Tensor b = a + 1;  // out-of-place: no bump
  (void)b;
  EXPECT_EQ(a._version(), v + 6);
}

TEST(VersionCounterTest, InPlaceOnViewBumpsBase) {
  Tensor a = zeros({2, 3});
  Tensor view = a.select(0, 0);
  uint32_t v = a._version();
  view.add_(1);
  EXPECT_EQ(a._version(), v + 1);
  EXPECT_EQ(view._version(), a._version());
  a.zero_();
  EXPECT_EQ(view._version(), v + 2);
}

// ---------------------------------------------------------------- allocator

TEST(AllocatorTest, CachingStats) {
  const char* env = std::getenv("RETORCH_CPU_CACHING");
  if (env && std::string(env) == "0") GTEST_SKIP() << "caching disabled by RETORCH_CPU_CACHING=0";
  Allocator* alloc = cpu_allocator();
  constexpr int64_t kN = (1 << 20) + 123;  // a size class unlikely to be cached already
  AllocatorStats s0 = alloc->stats();
  alloc->reset_peak_stats();
  int64_t os_after_free;
  {
    Tensor t = empty({kN}, kFloat);
    AllocatorStats s1 = alloc->stats();
    EXPECT_GE(s1.allocated_bytes - s0.allocated_bytes, kN * 4);
    EXPECT_GE(s1.peak_allocated_bytes, s1.allocated_bytes);
    EXPECT_GE(s1.reserved_bytes, s1.allocated_bytes);
    EXPECT_GT(s1.num_allocs, s0.num_allocs);
  }
  AllocatorStats s2 = alloc->stats();
  EXPECT_EQ(s2.allocated_bytes, s0.allocated_bytes);
  EXPECT_GE(s2.peak_allocated_bytes, s0.allocated_bytes + kN * 4);
  os_after_free = s2.num_os_allocs;
  {
    Tensor t2 = empty({kN}, kFloat);  // same size: served from the cache
    AllocatorStats s3 = alloc->stats();
    EXPECT_EQ(s3.num_os_allocs, os_after_free);
    EXPECT_EQ(s3.num_allocs, s2.num_allocs + 1);
  }
  alloc->reset_peak_stats();
  EXPECT_EQ(alloc->stats().peak_allocated_bytes, alloc->stats().allocated_bytes);
}

TEST(AllocatorTest, DataIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000, 12345}) {
    Tensor t = empty({n}, kByte);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u) << n;
  }
}

TEST(AllocatorTest, LargeBlocksStartOnHugePages) {
  // Note [Huge pages for large blocks]: from 2 MB, blocks start on a 2 MB boundary (so the
  // madvised range is whole huge pages), and stay usable to their last byte.
  for (int64_t n : {int64_t(2) << 20, (int64_t(5) << 20) + 7, int64_t(24) << 20}) {
    Tensor t = empty({n}, kByte);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % (uintptr_t(2) << 20), 0u) << n;
    t.fill_(7);
    EXPECT_EQ(t[n - 1].item<int64_t>(), 7);
    EXPECT_EQ(t.sum().item<int64_t>(), 7 * n);
  }
}

// ---------------------------------------------------------------- generator

TEST(GeneratorTest, ManualSeedReproduces) {
  manual_seed(42);
  Tensor a = randn({100});
  manual_seed(42);
  Tensor b = randn({100});
  EXPECT_EQ(values(a), values(b));
  Tensor c = randn({100});  // the stream moved on
  EXPECT_NE(values(a), values(c));
  manual_seed(43);
  Tensor d = randn({100});
  EXPECT_NE(values(a), values(d));

  Generator g1(7), g2(7);
  EXPECT_EQ(values(rand({50}, g1)), values(rand({50}, g2)));
  EXPECT_EQ(g1.initial_seed(), 7u);
}

TEST(GeneratorTest, StateSaveRestore) {
  Generator g(123);
  auto state = g.get_state();
  Tensor a = randn({20}, g);
  g.set_state(state);
  Tensor b = randn({20}, g);
  EXPECT_EQ(values(a), values(b));
}

TEST(GeneratorTest, Distributions) {
  manual_seed(0);
  Tensor r = rand({20000});
  EXPECT_EQ(r.dtype(), kFloat);
  EXPECT_TRUE((r >= 0).all().item<bool>());
  EXPECT_TRUE((r < 1).all().item<bool>());
  EXPECT_NEAR(r.mean().item<double>(), 0.5, 0.02);

  Tensor n = randn({20000}, std::nullopt, kDouble);
  EXPECT_EQ(n.dtype(), kDouble);
  EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.05);
  EXPECT_NEAR(n.std().item<double>(), 1.0, 0.05);

  Tensor ri = randint(3, 7, {2000});
  EXPECT_EQ(ri.dtype(), kLong);
  auto rv = values(ri);
  for (int k = 3; k < 7; ++k) EXPECT_NE(std::find(rv.begin(), rv.end(), double(k)), rv.end()) << k;
  EXPECT_TRUE(std::all_of(rv.begin(), rv.end(), [](double x) { return x >= 3 && x < 7; }));
  auto r0 = values(randint(5, {1000}));
  EXPECT_TRUE(std::all_of(r0.begin(), r0.end(), [](double x) { return x >= 0 && x < 5; }));

  Tensor perm = randperm(50);
  EXPECT_EQ(perm.dtype(), kLong);
  auto pv = values(perm);
  std::sort(pv.begin(), pv.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(pv[size_t(i)], double(i));

  Tensor probs = tensor({0.0, 1.0, 0.0, 1.0, 1.0});
  EXPECT_EQ(values(bernoulli(probs)), (std::vector<double>{0, 1, 0, 1, 1}));
  EXPECT_EQ(bernoulli(probs).dtype(), kFloat);
  EXPECT_NEAR(bernoulli(full({20000}, 0.3)).mean().item<double>(), 0.3, 0.02);
}

// ---------------------------------------------------------------- printing

TEST(PrintTest, PyTorchFormat) {
  EXPECT_EQ(tensor({1, 2, 3}).toString(), "tensor([1, 2, 3])");
  EXPECT_EQ(tensor({1, 10, 100}).toString(), "tensor([  1,  10, 100])");
  EXPECT_EQ(tensor({1.0, 2.0}).toString(), "tensor([1., 2.])");
  EXPECT_EQ(tensor({1.5, 2.0}).toString(), "tensor([1.5000, 2.0000])");
  EXPECT_EQ(tensor({-1.5, 2.0}).toString(), "tensor([-1.5000,  2.0000])");
  EXPECT_EQ(tensor({true, false}).toString(), "tensor([ True, False])");
  EXPECT_EQ(tensor({1.0, 2.0}, kDouble).toString(), "tensor([1., 2.], dtype=torch.float64)");
  EXPECT_EQ(tensor({1, 2}, kInt).toString(), "tensor([1, 2], dtype=torch.int32)");
  EXPECT_EQ(tensor(3.0).toString(), "tensor(3.)");
  EXPECT_EQ(tensor(7).toString(), "tensor(7)");
  EXPECT_EQ(tensor(std::vector<double>{}).toString(), "tensor([])");
  EXPECT_EQ(zeros({0, 3}).toString(), "tensor([], size=(0, 3))");
  EXPECT_EQ(zeros({0}, kLong).toString(), "tensor([], dtype=torch.int64)");
  EXPECT_EQ(tensor({{1, 2}, {3, 4}}).toString(), "tensor([[1, 2],\n        [3, 4]])");
  EXPECT_EQ(zeros({2, 1, 2}).toString(), "tensor([[[0., 0.]],\n\n        [[0., 0.]]])");
  EXPECT_EQ(tensor({1.0, INFINITY, NAN}).toString(), "tensor([1., inf, nan])");
  EXPECT_EQ(tensor({0.0, 10.0}).toString(), "tensor([ 0., 10.])");
  // Integer-valued floats spanning more than 1000x switch to scientific notation.
  EXPECT_EQ(tensor({1.0, 10000.0}).toString(), "tensor([1.0000e+00, 1.0000e+04])");
  EXPECT_EQ(tensor({1e-5, 1.0}).toString(), "tensor([1.0000e-05, 1.0000e+00])");
}

TEST(PrintTest, AutogradSuffixes) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}, TensorOptions().requires_grad(true));
  EXPECT_EQ(x.toString(), "tensor([[1., 2.],\n        [3., 4.]], requires_grad=True)");
  Tensor y = tensor({1.0, 2.0}, TensorOptions().requires_grad(true)) * 2;
  EXPECT_EQ(y.toString(), "tensor([2., 4.], grad_fn=<MulBackward0>)");
  Tensor z = tensor({1.0}, TensorOptions(kDouble).requires_grad(true));
  EXPECT_EQ(z.toString(), "tensor([1.], dtype=torch.float64, requires_grad=True)");
  EXPECT_EQ(y.detach().toString(), "tensor([2., 4.])");
}

TEST(PrintTest, Summarized) {
  EXPECT_EQ(arange(2000).toString(), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
}
