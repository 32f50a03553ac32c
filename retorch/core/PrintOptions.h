// Tensor printing options (torch.set_printoptions): precision, summarizing threshold, edge
// items, line width and forced scientific notation; read by Tensor::toString.
#pragma once
#include <cstdint>
#include <optional>

namespace retorch {

struct PrintOptions {
  int precision = 4;          // digits after the point
  int64_t threshold = 1000;   // more elements than this print summarized
  int64_t edgeitems = 3;      // items kept at each end of a summarized dim
  int linewidth = 80;         // characters per line before wrapping
  std::optional<bool> sci_mode;  // unset: chosen from the values, as PyTorch does
};

PrintOptions print_options();
void set_print_options(const PrintOptions& options);

}  // namespace retorch
