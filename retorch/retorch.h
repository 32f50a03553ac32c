// The umbrella header of retorch's C++ API (like <torch/torch.h>).
#pragma once
#include "retorch/autograd/Engine.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/autograd/Node.h"
#include "retorch/core/Tensor.h"
#include "retorch/core/TensorFactory.h"
#include "retorch/generated/Functions.h"
#include "retorch/data/DataLoader.h"
#include "retorch/data/Mnist.h"
#include "retorch/io/Checkpoint.h"
#include "retorch/nn/nn.h"
#include "retorch/optim/optim.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::cuda {
bool is_available();
int device_count();
}  // namespace retorch::cuda
