// safetensors read/write: the weights format of the ecosystem (header JSON + raw little-endian data).
#pragma once
#include <map>
#include <string>

#include "retorch/core/Tensor.h"
#include "retorch/nn/OrderedDict.h"

namespace retorch::io {

/// The free-form string map stored under "__metadata__".
using Metadata = std::map<std::string, std::string>;

/// A loaded file: tensors in header order plus the metadata map.
struct SafetensorsFile {
  OrderedDict<Tensor> tensors{"tensor"};
  Metadata metadata;
};

/// Writes tensors (copied to contiguous CPU memory) and metadata atomically to `path`.
void save_safetensors(const std::string& path, const OrderedDict<Tensor>& tensors,
                      const Metadata& metadata = {});
/// Reads tensors; they view a copy-on-write memory map of the file where alignment allows.
OrderedDict<Tensor> load_safetensors(const std::string& path);
/// Reads tensors and the "__metadata__" map.
SafetensorsFile load_safetensors_file(const std::string& path);
/// The bytes of the safetensors file that save_safetensors would write.
std::string save_safetensors_bytes(const OrderedDict<Tensor>& tensors,
                                   const Metadata& metadata = {});
/// Parses a whole safetensors file held in memory (tensors are copied out); `name` labels errors.
SafetensorsFile load_safetensors_bytes(const uint8_t* data, size_t size, const std::string& name);
/// Reads only the "__metadata__" map (the header is still fully validated).
Metadata load_safetensors_metadata(const std::string& path);

/// The safetensors dtype name of t ("F32", "BF16", "BOOL", ...).
std::string safetensors_dtype_name(ScalarType t);

/// Saves a state dict (safetensors format).
void save(const OrderedDict<Tensor>& tensors, const std::string& path);
/// Loads a state dict saved by save().
OrderedDict<Tensor> load(const std::string& path);

}  // namespace retorch::io
