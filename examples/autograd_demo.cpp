// The `make demo` job for now: a tiny end-to-end autograd example (y = w * x + b, then a fit).
#include <cstdio>

#include "retorch/retorch.h"

using namespace retorch;

int main() {
  // 1. The seeds' first example: gradients of y = w * x + b.
  Tensor x = tensor({1.0}).requires_grad_();
  Tensor w = tensor({2.0}).requires_grad_();
  Tensor b = tensor({3.0}).requires_grad_();
  Tensor y = w * x + b;
  y.backward();
  std::printf("y = w * x + b = %s\n", y.toString().c_str());
  std::printf("dy/dx = %s  dy/dw = %s  dy/db = %s\n", x.grad().toString().c_str(),
              w.grad().toString().c_str(), b.grad().toString().c_str());

  // 2. Linear regression by gradient descent: learn y = 3x - 2 from noisy samples.
  manual_seed(0);
  Tensor xs = randn({256, 1});
  Tensor ys = xs * 3.0 - 2.0 + randn({256, 1}) * 0.1;
  Tensor W = zeros({1, 1}, requires_grad());
  Tensor B = zeros({1}, requires_grad());
  for (int step = 0; step <= 200; ++step) {
    Tensor pred = linear(xs, W, B);
    Tensor loss = (pred - ys).pow(2).mean();
    loss.backward();
    {
      NoGradGuard no_grad;
      W.sub_(W.grad() * 0.1);
      B.sub_(B.grad() * 0.1);
      W.mutable_grad().zero_();
      B.mutable_grad().zero_();
    }
    if (step % 50 == 0) std::printf("step %3d  loss %.5f\n", step, loss.item<double>());
  }
  std::printf("learned W = %.3f (true 3), B = %.3f (true -2)\n", W.item<double>(), B.item<double>());
  return 0;
}
