// Error tests: bad inputs raise retorch::Error of the right kind with PyTorch-like messages.
#include <gtest/gtest.h>

#include <cmath>

#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

TEST(ErrorTest, BroadcastShapeMismatchNamesBothSizes) {
  Error e = catch_error([] { add(zeros({2, 3}), zeros({2, 4})); });
  EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
  EXPECT_TRUE(contains(
      e.message(), {"size of tensor a (3)", "size of tensor b (4)", "non-singleton dimension 1"}));
  Error e2 = catch_error([] { zeros({3}) * zeros({2}); });
  EXPECT_TRUE(contains(e2.message(), {"(3)", "(2)"}));
}

TEST(ErrorTest, MatmulShapeMismatch) {
  Error e = catch_error([] { mm(zeros({2, 3}), zeros({4, 5})); });
  EXPECT_TRUE(contains(e.message(), {"cannot be multiplied", "2x3", "4x5"}));
  Error e2 = catch_error([] { matmul(zeros({2, 3}), zeros({4, 5})); });
  EXPECT_TRUE(contains(e2.message(), {"cannot be multiplied"}));
  Error e3 = catch_error([] { mm(zeros({2, 3, 4}), zeros({4, 5})); });
  EXPECT_TRUE(e3.message().find("matrix") != std::string::npos ||
              e3.message().find("2D") != std::string::npos)
      << e3.message();
  Error e4 = catch_error([] { bmm(zeros({2, 2, 3}), zeros({3, 3, 4})); });
  EXPECT_EQ(e4.kind(), ErrorKind::kRuntime);
  Error e5 = catch_error([] { dot(zeros({3}), zeros({4})); });
  EXPECT_TRUE(contains(e5.message(), {"3", "4"}));
}

TEST(ErrorTest, DimensionOutOfRange) {
  Tensor t = zeros({2, 3});
  Error e = catch_error([&] { t.sum(std::vector<int64_t>{2}); });
  EXPECT_EQ(e.kind(), ErrorKind::kIndex);
  EXPECT_TRUE(contains(e.message(), {"Dimension out of range", "[-2, 1]", "2"}));
  Error e2 = catch_error([&] { t.transpose(0, -3); });
  EXPECT_EQ(e2.kind(), ErrorKind::kIndex);
  EXPECT_TRUE(contains(e2.message(), {"Dimension out of range"}));
  Error e3 = catch_error([&] { t.softmax(5); });
  EXPECT_EQ(e3.kind(), ErrorKind::kIndex);
  Error e4 = catch_error([&] { t.unsqueeze(4); });  // valid range for unsqueeze is [-3, 2]
  EXPECT_EQ(e4.kind(), ErrorKind::kIndex);
  EXPECT_TRUE(contains(e4.message(), {"[-3, 2]"}));
  EXPECT_EQ(retorch::testing::shape(t.unsqueeze(2)), (std::vector<int64_t>{2, 3, 1}));
}

TEST(ErrorTest, IndexSelectOutOfRange) {
  Tensor t = zeros({3, 2});
  Error e = catch_error([&] { index_select(t, 0, tensor({0, 3})); });
  EXPECT_EQ(e.kind(), ErrorKind::kIndex);
  EXPECT_TRUE(contains(e.message(), {"out of range"}));
  Error e2 = catch_error([&] { index_select(t, 0, tensor({-1})); });  // no negative indices
  EXPECT_EQ(e2.kind(), ErrorKind::kIndex);
  Error e3 = catch_error([&] { index_select(t, 0, tensor({0.0})); });  // float index
  EXPECT_TRUE(contains(e3.message(), {"index"}));
}

TEST(ErrorTest, SelectOutOfRange) {
  Tensor t = zeros({3});
  Error e = catch_error([&] { t.select(0, 3); });
  EXPECT_EQ(e.kind(), ErrorKind::kIndex);
  EXPECT_TRUE(contains(e.message(), {"out of range", "3"}));
  Error e2 = catch_error([&] { t.select(0, -4); });
  EXPECT_EQ(e2.kind(), ErrorKind::kIndex);
  EXPECT_EQ(t.select(0, -3).dim(), 0);
  Error e3 = catch_error([&] { t[5]; });
  EXPECT_EQ(e3.kind(), ErrorKind::kIndex);
  Error e4 = catch_error([&] { zeros({}).select(0, 0); });
  EXPECT_EQ(e4.kind(), ErrorKind::kIndex);
}

TEST(ErrorTest, GatherWithWrongNdim) {
  Tensor t = zeros({2, 3});
  Error e = catch_error([&] { gather(t, 1, tensor({0, 1})); });
  EXPECT_TRUE(contains(e.message(), {"same number of dimensions"}));
  Error e2 = catch_error([&] { gather(t, 1, tensor({{0, 5}})); });
  EXPECT_EQ(e2.kind(), ErrorKind::kRuntime);
  EXPECT_TRUE(contains(e2.message(), {"index 5 is out of bounds for dimension 1 with size 3"}));
  // Unlike index_select's wrapping of dims, gather takes no negative indices.
  Error e3 = catch_error([&] { gather(t, 1, tensor({{-1}})); });
  EXPECT_TRUE(contains(e3.message(), {"index -1 is out of bounds"}));
  Error e4 = catch_error([&] { scatter(t, 0, tensor({{2}}), 1.0); });
  EXPECT_TRUE(contains(e4.message(), {"index 2 is out of bounds for dimension 0 with size 2"}));
}

TEST(ErrorTest, CatWithMismatchedShapes) {
  Error e = catch_error([] { cat({zeros({2, 3}), zeros({2, 4})}, 0); });
  EXPECT_TRUE(contains(e.message(), {"Sizes of tensors must match except in dimension 0",
                                     "Expected size 3 but got size 4", "tensor number 1"}));
  Error e2 = catch_error([] { cat({zeros({2, 3}), zeros({3})}, 0); });
  EXPECT_EQ(e2.kind(), ErrorKind::kRuntime);
  Error e3 = catch_error([] { cat(std::vector<Tensor>{}, 0); });
  EXPECT_EQ(e3.kind(), ErrorKind::kRuntime);
  Error e4 = catch_error([] { stack({zeros({2}), zeros({3})}); });
  EXPECT_TRUE(contains(e4.message(), {"stack expects each tensor to be equal size"}));
}

TEST(ErrorTest, ViewWithWrongNumel) {
  Tensor t = zeros({2, 3});
  Error e = catch_error([&] { t.view({5}); });
  EXPECT_TRUE(contains(e.message(), {"shape '[5]' is invalid for input of size 6"}));
  Error e2 = catch_error([&] { t.reshape({-1, -1}); });
  EXPECT_TRUE(contains(e2.message(), {"only one dimension can be inferred"}));
  Error e3 = catch_error([&] { t.view({4, -1}); });
  EXPECT_TRUE(contains(e3.message(), {"shape '[4, -1]' is invalid for input of size 6"}));
}

TEST(ErrorTest, ExpandToIncompatibleShape) {
  Tensor t = zeros({3});
  Error e = catch_error([&] { t.expand({2, 4}); });
  EXPECT_TRUE(contains(e.message(), {"expanded size of the tensor (4)", "existing size (3)",
                                     "non-singleton dimension 1"}));
  Error e2 = catch_error([&] { zeros({2, 3}).expand({3}); });
  EXPECT_TRUE(contains(e2.message(),
                       {"number of sizes provided (1)", "number of dimensions in the tensor (2)"}));
}

TEST(ErrorTest, BoolSubtractionAndNegation) {
  Tensor b = tensor({true, false});
  Error e = catch_error([&] { sub(b, b); });
  EXPECT_TRUE(contains(e.message(), {"Subtraction, the `-` operator, with two bool tensors"}));
  Error e2 = catch_error([&] { neg(b); });
  EXPECT_TRUE(contains(e2.message(), {"Negation, the `-` operator, on a bool tensor"}));
}

TEST(ErrorTest, IntegerDivisionByZero) {
  Tensor a = tensor({5, 7});
  Tensor z = tensor({1, 0});
  Error e = catch_error([&] { div(a, z, std::string_view("trunc")); });
  EXPECT_TRUE(contains(e.message(), {"ZeroDivisionError"}));
  Error e2 = catch_error([&] { div(a, z, std::string_view("floor")); });
  EXPECT_TRUE(contains(e2.message(), {"ZeroDivisionError"}));
  Error e3 = catch_error([&] { remainder(a, z); });
  EXPECT_TRUE(contains(e3.message(), {"ZeroDivisionError"}));
  // True division promotes to float and gives inf, like PyTorch.
  Tensor q = div(a, z);
  EXPECT_EQ(q.dtype(), kFloat);
  EXPECT_TRUE(std::isinf(retorch::testing::values(q)[1]));
  Error e4 = catch_error([&] { div(a, z, std::string_view("round")); });
  EXPECT_TRUE(contains(e4.message(), {"rounding_mode"}));
}

TEST(ErrorTest, FloatAlphaWithIntegerTensors) {
  Tensor a = tensor({1, 2});
  Error e = catch_error([&] { add(a, a, 1.5); });
  // PyTorch: "For integral input tensors, argument alpha must not be a floating point number."
  EXPECT_TRUE(contains(e.message(), {"integral input tensors, argument alpha must not be a "
                                     "floating point number"}));
  Error e2 = catch_error([&] { sub(a, a, 0.5); });
  EXPECT_TRUE(contains(e2.message(), {"alpha"}));
  Error e3 = catch_error([&] { add(a, a, true); });  // a bool alpha needs a bool result
  EXPECT_TRUE(contains(e3.message(), {"alpha only supported for Boolean results"}));
  // An integral alpha is fine for bool and integer tensors.
  Tensor b = tensor({true, false});
  EXPECT_EQ(add(b, b, 2).dtype(), kBool);
  EXPECT_EQ(retorch::testing::values(add(a, a, 3)), (std::vector<double>{4, 8}));
}

TEST(ErrorTest, InPlaceResultCannotBeCastBack) {
  Tensor i = tensor({1, 2});
  Error e = catch_error([&] { i.add_(tensor({0.5, 0.5})); });
  // PyTorch names dtypes "Float"/"Long" here; retorch writes float32/int64.
  EXPECT_TRUE(contains(e.message(), {"can't be cast to the desired output type"}));
  Error e2 = catch_error([&] { zeros({3}).add_(zeros({2, 3})); });  // self can't broadcast
  EXPECT_EQ(e2.kind(), ErrorKind::kRuntime);
}

TEST(ErrorTest, MeanOfIntegerTensor) {
  Error e = catch_error([] { tensor({1, 2, 3}).mean(); });
  EXPECT_TRUE(contains(e.message(), {"mean(): could not infer output dtype",
                                     "Input dtype must be either a floating point"}));
  // An explicit floating dtype makes it work.
  EXPECT_DOUBLE_EQ(tensor({1, 2, 3}).mean(kDouble).item<double>(), 2.0);
}

TEST(ErrorTest, ItemOfMultiElementTensor) {
  Error e = catch_error([] { zeros({2}).item(); });
  EXPECT_TRUE(contains(e.message(), {"a Tensor with 2 elements cannot be converted to Scalar"}));
  Error e2 = catch_error([] { zeros({0}).item(); });
  EXPECT_TRUE(contains(e2.message(), {"a Tensor with 0 elements cannot be converted to Scalar"}));
  EXPECT_EQ(zeros({1, 1}).item<double>(), 0.0);
}

TEST(ErrorTest, FactoryAndMiscBadInputs) {
  Error e = catch_error([] { zeros({-1}); });
  EXPECT_TRUE(contains(e.message(), {"negative dimension -1"}));
  Error e2 = catch_error([] { arange(0, 10, 0); });
  EXPECT_TRUE(contains(e2.message(), {"step must be nonzero"}));
  Error e3 = catch_error([] { zeros({2}).data_ptr<int64_t>(); });
  EXPECT_EQ(e3.kind(), ErrorKind::kType);
  Error e4 = catch_error([] { zeros({2, 3}).permute({0}); });
  EXPECT_TRUE(contains(e4.message(), {"permute", "2", "1"}));
  Error e5 = catch_error([] { zeros({2, 3}).permute({0, 0}); });
  EXPECT_TRUE(contains(e5.message(), {"permute"}));
  Error e6 = catch_error([] { zeros({4}).narrow(0, 2, 3); });
  EXPECT_TRUE(contains(e6.message(), {"start (2) + length (3) exceeds dimension size (4)"}));
  Error e7 = catch_error([] { zeros({4}).slice(0, 0, 4, 0); });
  EXPECT_TRUE(contains(e7.message(), {"slice step must be positive"}));
  Error e8 = catch_error([] { randperm(-1); });
  EXPECT_EQ(e8.kind(), ErrorKind::kRuntime);
}

TEST(ErrorTest, ViewOfFreedStorage) {
  // A view keeps its storage alive, but the storage itself can shrink under it (as with
  // untyped_storage().resize_(0) in PyTorch): using the view must raise, not read freed memory.
  Tensor base = arange(12, TensorOptions(kFloat));
  Tensor view = base.narrow(0, 4, 8);
  base.impl()->storage()->resize(0);
  Error e = catch_error([&] { view.sum(); });
  EXPECT_TRUE(contains(e.message(), {"storage", "8"}));
  Error e2 = catch_error([&] { view.add_(1); });
  EXPECT_TRUE(contains(e2.message(), {"storage"}));
}
