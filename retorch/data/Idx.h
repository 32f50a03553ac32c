// IDX files (the MNIST family's format), plain or gzip-compressed.
#pragma once
#include <string>

#include "retorch/core/Tensor.h"

namespace retorch::data {

/// Reads an IDX file (plain or .gz, detected from the content) into a tensor of its dims.
/// Element types: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64.
Tensor read_idx(const std::string& path);

}  // namespace retorch::data
