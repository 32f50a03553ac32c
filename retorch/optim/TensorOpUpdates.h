// The optimizers' updates written as tensor ops, for parameters in a device's own memory: each
// op runs where the tensors live (Note [Optimizer steps on device memory] in Optimizer.cpp).
#pragma once
#include "retorch/optim/Optimizer.h"

namespace retorch::optim::detail {

/// One update of param from grad, with the optimizer's options and state, op by op in the order
/// of PyTorch's single-tensor implementations (and of the fused host loops, which replay them).
void sgd_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                    OptimizerParamState& state);
void adam_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                     OptimizerParamState& state, bool decoupled);
void rmsprop_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                        OptimizerParamState& state);
void adagrad_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                        OptimizerParamState& state);

}  // namespace retorch::optim::detail
