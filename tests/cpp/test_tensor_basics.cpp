// Tensor basics: factories and dtype inference, promotion in ops, split/unbind views, contiguity.
#include <gtest/gtest.h>

#include <cmath>

#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

TEST(FactoryTest, DtypeInference) {
  EXPECT_EQ(tensor({1, 2}).dtype(), kLong);
  EXPECT_EQ(tensor({1.0, 2.0}).dtype(), kFloat);
  EXPECT_EQ(tensor({1.0, 2}).dtype(), kFloat);  // mixed ints and floats: float
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor(3.0).dim(), 0);
  EXPECT_EQ(tensor({{1, 2, 3}, {4, 5, 6}}).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(tensor({{1, 2}, {3}}), Error);  // ragged
  EXPECT_EQ(zeros({2}).dtype(), kFloat);
  EXPECT_EQ(arange(5).dtype(), kLong);
  EXPECT_EQ(arange(5.0).dtype(), kFloat);
  EXPECT_EQ(full({2}, 7).dtype(), kLong);  // full infers from the fill value, like PyTorch
  EXPECT_EQ(full({2}, 7.5).dtype(), kFloat);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
}

TEST(FactoryTest, Values) {
  EXPECT_EQ(values(arange(0.0, 1.0, 0.25)), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(values(arange(5, 0, -2)), (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(arange(0.0, 1.0, 0.3).numel(), 4);  // ceil((end - start) / step)
  EXPECT_EQ(values(linspace(0, 1, 5)), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(linspace(0, 1, 5).dtype(), kFloat);
  EXPECT_EQ(values(eye(2, 3)), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(values(full({3}, 2.5)), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(values(ones_like(zeros({2}, kInt))), (std::vector<double>{1, 1}));
  EXPECT_EQ(ones_like(zeros({2}, kInt)).dtype(), kInt);
  Tensor z = zeros({2, 3}, TensorOptions(kDouble).requires_grad(true));
  EXPECT_TRUE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  EXPECT_EQ(z.dtype(), kDouble);
}

TEST(FactoryTest, DefaultDtype) {
  set_default_dtype(kDouble);
  Tensor a = tensor({1.5});
  Tensor b = zeros({1});
  Tensor c = tensor({1.5}, kFloat);
  std::string sa = a.toString(), sc = c.toString();
  ScalarType wrapped = (tensor({1, 2}) * 1.5).dtype();
  set_default_dtype(kFloat);
  EXPECT_EQ(a.dtype(), kDouble);
  EXPECT_EQ(b.dtype(), kDouble);
  EXPECT_EQ(sa, "tensor([1.5000])");
  EXPECT_EQ(sc, "tensor([1.5000], dtype=torch.float32)");
  EXPECT_EQ(wrapped, kDouble);  // int tensor * Python float -> default dtype
  EXPECT_THROW(set_default_dtype(kLong), Error);
}

TEST(OpsSemanticsTest, Promotion) {
  EXPECT_EQ(exp(tensor({0, 1})).dtype(), kFloat);  // integer inputs to float ops give float
  EXPECT_EQ(sqrt(tensor({true})).dtype(), kFloat);
  EXPECT_EQ((tensor({1, 2}) < tensor({2.0, 1.0})).dtype(), kBool);
  EXPECT_EQ(values(tensor({1, 2}) < tensor({2.0, 1.0})), (std::vector<double>{1, 0}));
  EXPECT_EQ((zeros({2}, kHalf) + zeros({2}, kBFloat16)).dtype(), kFloat);
  EXPECT_EQ((zeros({2}, kByte) + zeros({2}, kChar)).dtype(), kShort);
  EXPECT_EQ((zeros({2}, kHalf) * 2.5).dtype(), kHalf);
  EXPECT_EQ((zeros({2}, kInt) + zeros({}, kLong)).dtype(), kInt);
  EXPECT_EQ(tensor({1, 2, 3}).sum().dtype(), kLong);  // integer sums accumulate in int64
  EXPECT_EQ(tensor({true, true, false}).sum().item<int64_t>(), 2);
  EXPECT_EQ(zeros({2}, kByte).sum().dtype(), kLong);
  EXPECT_EQ(values(tensor({250}, kByte) + tensor({10}, kByte)), (std::vector<double>{4}));
}

TEST(OpsSemanticsTest, IntegerDivisionModes) {
  Tensor a = tensor({7, -7});
  Tensor b = tensor({2, 2});
  EXPECT_EQ(values(div(a, b)), (std::vector<double>{3.5, -3.5}));
  EXPECT_EQ(values(div(a, b, std::string_view("trunc"))), (std::vector<double>{3, -3}));
  EXPECT_EQ(values(div(a, b, std::string_view("floor"))), (std::vector<double>{3, -4}));
  EXPECT_EQ(div(a, b, std::string_view("floor")).dtype(), kLong);
  EXPECT_EQ(values(remainder(a, b)), (std::vector<double>{1, 1}));  // sign of divisor
  EXPECT_EQ(values(fmod(a, b)), (std::vector<double>{1, -1}));      // sign of dividend
  EXPECT_EQ(values(remainder(tensor({5.5, -5.5}), 2.0)), (std::vector<double>{1.5, 0.5}));
  Error e = catch_error([] { pow(tensor({2, 3}), -1); });
  EXPECT_TRUE(contains(e.message(), {"Integers to negative integer powers are not allowed"}));
  EXPECT_EQ(values(pow(tensor({2, 3}), 2)), (std::vector<double>{4, 9}));
}

TEST(OpsSemanticsTest, Reductions) {
  Tensor m = tensor({{1.0, 5.0, 3.0}, {4.0, 2.0, 6.0}});
  EXPECT_EQ(values(m.sum(std::vector<int64_t>{0})), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(shape(m.sum(std::vector<int64_t>{1}, true)), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(m.mean(std::vector<int64_t>{-1})), (std::vector<double>{3, 4}));
  auto [vals, idx] = max(m, 1);
  EXPECT_EQ(values(vals), (std::vector<double>{5, 6}));
  EXPECT_EQ(values(idx), (std::vector<double>{1, 2}));
  EXPECT_EQ(idx.dtype(), kLong);
  EXPECT_EQ(argmax(m).item<int64_t>(), 5);  // flattened index
  Tensor d = tensor({1.0, 2.0, 3.0, 4.0}, kDouble);
  EXPECT_DOUBLE_EQ(d.var().item<double>(), 5.0 / 3.0);  // unbiased by default
  EXPECT_DOUBLE_EQ(d.var(std::nullopt, std::optional<int64_t>(0)).item<double>(), 1.25);
  EXPECT_NEAR(tensor({1.0, 2.0}).logsumexp({0}).item<double>(),
              std::log(std::exp(1.0) + std::exp(2.0)), 1e-6);
  EXPECT_EQ(zeros({0}).sum().item<double>(), 0.0);
  EXPECT_TRUE(std::isnan(zeros({0}).mean().item<double>()));
  EXPECT_EQ(ones({0}).prod().item<double>(), 1.0);
}

TEST(ViewTest, SplitChunkUnbindAreViews) {
  Tensor a = arange(10, kFloat);
  auto parts = a.split(4);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].numel(), 2);
  EXPECT_EQ(parts[1].storage_offset(), 4);
  EXPECT_EQ(storage_ptr(parts[1]), storage_ptr(a));
  auto chunks = a.chunk(3);
  ASSERT_EQ(chunks.size(), 3u);  // ceil(10 / 3) = 4 per chunk: 4, 4, 2
  EXPECT_EQ(chunks[0].numel(), 4);
  EXPECT_EQ(chunks[2].numel(), 2);
  auto sws = a.split_with_sizes({3, 7});
  EXPECT_EQ(values(sws[0]), (std::vector<double>{0, 1, 2}));
  Tensor m = arange(6, kFloat).view({2, 3});
  auto cols = m.unbind(1);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(values(cols[1]), (std::vector<double>{1, 4}));
  cols[1].fill_(0);
  EXPECT_EQ(values(m), (std::vector<double>{0, 0, 2, 3, 0, 5}));
  EXPECT_THROW(a.split_with_sizes({3, 3}), Error);  // sizes must add up
}

TEST(ViewTest, ContiguityRules) {
  // Strides of size-1 dims do not matter, like PyTorch.
  Tensor t = zeros({1, 3}).t();  // sizes (3, 1), strides (1, 3)
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(zeros({0, 3}).t().is_contiguous());  // empty tensors are contiguous
  Tensor e = zeros({3, 1}).expand({3, 4});
  EXPECT_FALSE(e.is_contiguous());
  Tensor c = e.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(strides(c), (std::vector<int64_t>{4, 1}));
  EXPECT_FALSE(arange(10, kFloat).slice(0, 0, 10, 2).is_contiguous());
  EXPECT_TRUE(zeros({2, 3}).select(0, 1).is_contiguous());
  EXPECT_FALSE(zeros({2, 3}).select(1, 1).is_contiguous());
}

TEST(ViewTest, NestedViewOffsetsAccumulate) {
  Tensor a = arange(20, kFloat).view({4, 5});
  Tensor v = a.narrow(0, 1, 3).narrow(1, 2, 3).select(0, 1);  // row 2, cols 2..4
  EXPECT_EQ(v.storage_offset(), 12);
  EXPECT_EQ(values(v), (std::vector<double>{12, 13, 14}));
  Tensor w = a.t().slice(0, 1, 5, 2).select(1, 3);  // a[3, 1::2]
  EXPECT_EQ(values(w), (std::vector<double>{16, 18}));
  Tensor d = a.detach();
  EXPECT_EQ(storage_ptr(d), storage_ptr(a));
  d.select(0, 0).fill_(-1);
  EXPECT_EQ(a.select(0, 0).sum().item<double>(), -5.0);
  EXPECT_EQ(d._version(), a._version());  // detach shares the version counter
}

TEST(DeviceTest, CpuIndexIsKept) {
  // torch.device("cpu:0").index == 0
  EXPECT_EQ(Device("cpu:0").index, 0);
  EXPECT_EQ(Device("cpu:0").str(), "cpu:0");
  EXPECT_EQ(Device("cpu").index, -1);
}

TEST(ErrorTest, UndefinedTensorArgumentsError) {
  Tensor undefined;
  EXPECT_FALSE(undefined.defined());
  EXPECT_THROW(add(undefined, ones({1})), Error);
  EXPECT_THROW(add(ones({1}), undefined), Error);
  EXPECT_EQ(undefined.toString(), "tensor(undefined)");
  // Like libtorch: an op whose only tensor argument is undefined raises.
  Error e = catch_error([&] { undefined.sum(); });
  EXPECT_TRUE(contains(e.message(), {"undefined"}));
}

TEST(CopyTest, CopyBroadcastsSourceToSelf) {
  Tensor a = zeros({2, 3});
  a.copy_(tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(values(a), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  Tensor t = zeros({3, 2}).t();  // non-contiguous destination
  t.copy_(tensor({{1.0}, {2.0}}));
  EXPECT_EQ(values(t), (std::vector<double>{1, 1, 1, 2, 2, 2}));
  Tensor i = zeros({2, 2}, kInt);
  i.copy_(tensor({1.7}));  // dtype conversion truncates toward zero
  EXPECT_EQ(values(i), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_THROW(zeros({2, 3}).copy_(zeros({4})), Error);
  EXPECT_THROW(zeros({3}).copy_(zeros({2, 3})), Error);  // self is never broadcast
}

TEST(CopyTest, FillAndZeroOnNonContiguousViews) {
  Tensor base = ones({3, 2});
  Tensor t = base.t();
  t.fill_(5);
  EXPECT_EQ(values(base), (std::vector<double>{5, 5, 5, 5, 5, 5}));
  base.select(1, 0).zero_();
  EXPECT_EQ(values(base), (std::vector<double>{0, 5, 0, 5, 0, 5}));
  Tensor r = arange(10, kFloat);
  r.slice(0, 0, 10, 3).fill_(-1);
  EXPECT_EQ(values(r), (std::vector<double>{-1, 1, 2, -1, 4, 5, -1, 7, 8, -1}));
  Tensor h = zeros({4}, kHalf);
  h.slice(0, 1, 4, 2).fill_(0.5);
  EXPECT_EQ(values(h), (std::vector<double>{0, 0.5, 0, 0.5}));
}

TEST(ErrorTest, ExcludedBackendGivesNoKernelError) {
  Tensor a = ones({2});
  Error e = catch_error([&] {
    ExcludeDispatchKeyGuard no_cpu(DispatchKeySet(DispatchKey::CPU));
    add(a, a);
  });
  EXPECT_EQ(e.kind(), ErrorKind::kNotImplemented);
  EXPECT_TRUE(contains(e.message(), {"Could not run 'aten::add.Tensor'"}));
}

// See Note [OptionalIntArrayRef]: int literals and braced lists for optional dims stay valid
// for the whole call (under ASan a dangling ArrayRef here is a stack-use-after-scope).
TEST(TensorBasics, OptionalDimsFromIntLiterals) {
  Tensor x = arange(Scalar(6), TensorOptions(kFloat)).reshape({2, 3});
  EXPECT_EQ(values(x.sum({1})), (std::vector<double>{3, 12}));
  EXPECT_EQ(values(x.sum({0, 1})), (std::vector<double>{15}));
  EXPECT_EQ(values(x.mean(1, true)), (std::vector<double>{1, 4}));
  EXPECT_EQ(values(sum(x, 0)), (std::vector<double>{3, 5, 7}));
}

// ---------------------------------------------------------------- memory formats

TEST(MemoryFormatTest, ChannelsLastStridesAndChecks) {
  Tensor x = randn({2, 3, 4, 5});
  EXPECT_EQ(x.suggest_memory_format(), MemoryFormat::Contiguous);
  Tensor y = x.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_EQ(y.strides(), IntArrayRef({60, 1, 15, 3}));
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_FALSE(y.is_contiguous());
  EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(y.contiguous(MemoryFormat::ChannelsLast).is_same(y));
  EXPECT_TRUE(allclose(y, x));
  EXPECT_EQ(y.clone(MemoryFormat::Preserve).strides(), y.strides());
  EXPECT_TRUE(y.contiguous().is_contiguous());
  // Size-1 dims: a contiguous N111 or C=1 tensor is both layouts and suggests NCHW.
  Tensor c1 = randn({2, 1, 4, 4});
  EXPECT_TRUE(c1.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(c1.suggest_memory_format(), MemoryFormat::Contiguous);
  EXPECT_EQ(empty({2, 3, 4, 5}, TensorOptions(), MemoryFormat::ChannelsLast).strides(),
            IntArrayRef({60, 1, 15, 3}));
  EXPECT_THROW(randn({2, 3, 4}).contiguous(MemoryFormat::ChannelsLast), Error);
  EXPECT_FALSE(randn({2, 3, 4}).is_contiguous(MemoryFormat::ChannelsLast));
}

TEST(MemoryFormatTest, KernelsKeepChannelsLastAndGradientsFlow) {
  Tensor x = randn({2, 3, 6, 6}).contiguous(MemoryFormat::ChannelsLast).set_requires_grad(true);
  Tensor r = relu(x);
  EXPECT_TRUE(r.is_contiguous(MemoryFormat::ChannelsLast));
  Tensor p = max_pool2d(r, {2});
  EXPECT_TRUE(p.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(allclose(p, max_pool2d(r.contiguous(), {2})));
  p.sum().backward();
  EXPECT_TRUE(x.grad().is_contiguous(MemoryFormat::ChannelsLast));
  Tensor leaf = randn({2, 3, 4, 4}).set_requires_grad(true);
  (leaf.contiguous(MemoryFormat::ChannelsLast) * 3).sum().backward();
  EXPECT_TRUE(allclose(leaf.grad(), full({2, 3, 4, 4}, 3.0)));
}
