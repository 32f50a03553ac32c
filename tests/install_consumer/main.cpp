// Uses the installed retorch: a tiny forward/backward whose gradient is known exactly.
#include <cstdio>

#include "retorch/retorch.h"

int main() {
  using namespace retorch;
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  (x * x).sum().backward();
  double g = x.grad()[2].item<double>();
  std::printf("grad %.1f\n", g);
  return g == 6.0 ? 0 : 1;
}
