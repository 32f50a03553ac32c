// nn::summary: a per-layer table (output shape, parameters) with totals and memory estimates.
#pragma once
#include <string>
#include <vector>

#include "retorch/nn/Module.h"

namespace retorch::nn {

/// One row of a summary: a leaf module, in call order.
struct SummaryRow {
  std::string layer;  // "Conv2d-1": type and its running index
  std::vector<int64_t> output_shape;
  int64_t params = 0;
};

/// The rows and totals of a model run once on zeros of input_shape.
struct ModelSummary {
  std::vector<SummaryRow> rows;
  int64_t total_params = 0, trainable_params = 0;
  double input_mb = 0, activations_mb = 0, params_mb = 0;
  /// The table, like Keras/Paddle summaries: layer, output shape, params, then totals.
  std::string to_string() const;
};

/// Runs model (eval mode, no grad) on zeros(input_shape) on the model's device and tabulates
/// its leaf layers (on meta, a dry run). The model's training mode is restored afterwards.
ModelSummary summary(Module& model, const std::vector<int64_t>& input_shape,
                     ScalarType dtype = kFloat);

}  // namespace retorch::nn
