// Smoke test: an op and a backward pass run end to end.
#include <gtest/gtest.h>

#include "retorch/retorch.h"

using namespace retorch;

TEST(Smoke, AddAndBackward) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor b = (a * a).sum();
  b.backward();
  EXPECT_DOUBLE_EQ(b.item<double>(), 14.0);
  EXPECT_DOUBLE_EQ(a.grad()[2].item<double>(), 6.0);
}
