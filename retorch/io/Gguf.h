// GGUF reader: the llama.cpp weights format (metadata key/values + tensors, often block-quantized),
// memory-mapped and validated so that a malformed file raises an Error, never crashes.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch::io {

class MappedFile;

/// GGUF metadata value types (their on-disk ids).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

/// "uint32", "string", "array", ...
const char* gguf_type_name(GgufType t);

/// One metadata value: a number, a bool, a string, or an array of any of these (arrays nest).
class GgufValue {
 public:
  GgufValue() = default;
  /// The value's type (kArray for arrays).
  GgufType type() const { return type_; }
  /// An array's element type.
  GgufType elem_type() const { return elem_type_; }
  /// An array's element count (0 for scalars).
  size_t size() const { return count_; }
  bool is_array() const { return type_ == GgufType::kArray; }
  bool is_string() const { return type_ == GgufType::kString; }
  bool is_bool() const { return type_ == GgufType::kBool; }
  /// True for the eight integer types.
  bool is_integer() const;
  /// True for float32 and float64.
  bool is_float() const { return type_ == GgufType::kFloat32 || type_ == GgufType::kFloat64; }
  /// An integer or bool as int64 (a uint64 above 2^63 - 1 raises).
  int64_t to_int() const;
  /// An unsigned integer as uint64 (negative signed values raise).
  uint64_t to_uint() const;
  /// A float or integer as double.
  double to_float() const;
  /// A bool (any nonzero byte is true).
  bool to_bool() const;
  /// A string's bytes (GGUF does not promise UTF-8).
  const std::string& to_string() const;
  /// An integer (or bool) array's elements as int64.
  std::vector<int64_t> to_int_array() const;
  /// A float or integer array's elements as double.
  std::vector<double> to_float_array() const;
  /// A string array's elements.
  const std::vector<std::string>& to_string_array() const;
  /// Element i of an array as a value of its own.
  GgufValue at(size_t i) const;
  /// "uint32", "string", "array[string; 32000]", ... (for messages).
  std::string describe() const;

 private:
  friend class GgufParser;
  GgufType type_ = GgufType::kUint8;
  GgufType elem_type_ = GgufType::kUint8;
  uint64_t count_ = 0;
  uint64_t bits_ = 0;              // a scalar number or bool: its little-endian bytes
  std::string str_;                // a string
  std::vector<uint8_t> raw_;       // a numeric/bool array: elements packed as in the file
  std::vector<std::string> strs_;  // a string array
  std::vector<GgufValue> items_;   // an array of arrays
};

// Note [GGUF dimension order]
// GGUF lists a tensor's dims innermost first, as ggml's ne[]: a weight that PyTorch stores as
// [out_features, in_features] has ne = [in_features, out_features], and ne[0] is the length of a
// contiguous row (the dim that block quantization runs along). The reader keeps `ne` as stored
// and gives tensors the row-major shape (ne reversed); a block-quantized tensor becomes a uint8
// tensor [rows, row_bytes] with rows = ne[1] * ne[2] * ..., which is the layout quantized_linear
// and dequantize_blocks take (cols = ne[0]).

/// Where a tensor lives in the file and how it is stored.
struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // GGUF order, innermost first (see Note [GGUF dimension order])
  int64_t type = 0;         // ggml type id (0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 12 Q4_K, ...)
  uint64_t offset = 0;      // from the start of the data section
  uint64_t nbytes = 0;

  /// The logical row-major shape (ne reversed).
  std::vector<int64_t> shape() const;
  /// Values per row (ne[0]; 1 for a 0-d tensor).
  int64_t cols() const { return ne.empty() ? 1 : ne[0]; }
  /// Product of the other dims.
  int64_t rows() const;
  /// True unless the type is a plain element type (F32/F16/BF16/F64/I8/I16/I32/I64).
  bool is_quantized() const;
};

/// ggml's name of a type id ("Q4_K"), or "type <id>" for an unknown one.
std::string ggml_type_name(int64_t type);

/// A memory-mapped GGUF (v2/v3, little-endian) file.
class GgufFile {
 public:
  /// Opens and validates `path` (errors name the file and the problem).
  static std::shared_ptr<GgufFile> open(const std::string& path);

  const std::string& path() const;
  /// GGUF format version (2 or 3).
  uint32_t version() const { return version_; }
  /// Data alignment (general.alignment, default 32).
  uint64_t alignment() const { return alignment_; }
  /// File offset of the data section.
  uint64_t data_offset() const { return data_offset_; }

  /// All metadata, by key.
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  /// Metadata keys in file order.
  const std::vector<std::string>& keys() const { return keys_; }
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }
  /// The value of `key` (raises naming the key and file when missing).
  const GgufValue& get(const std::string& key) const;
  /// An integer (or bool) value; `dflt` when the key is missing (raises if no default).
  int64_t get_int(const std::string& key, std::optional<int64_t> dflt = std::nullopt) const;
  /// A float (or integer) value, as get_int.
  double get_float(const std::string& key, std::optional<double> dflt = std::nullopt) const;
  /// A bool value, as get_int.
  bool get_bool(const std::string& key, std::optional<bool> dflt = std::nullopt) const;
  /// A string value, as get_int.
  std::string get_string(const std::string& key,
                         std::optional<std::string> dflt = std::nullopt) const;
  /// A string array (raises when missing or of another type).
  const std::vector<std::string>& get_string_array(const std::string& key) const;
  /// A numeric array as float32 values (raises when missing or of another type).
  std::vector<float> get_float_array(const std::string& key) const;
  /// An integer array as int64 values (raises when missing or of another type).
  std::vector<int64_t> get_int_array(const std::string& key) const;

  /// Tensor infos in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  /// The info of tensor `name`, or nullptr.
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  /// Tensor `name` viewing the mapping (see Note [GGUF dimension order] for its shape/dtype).
  Tensor tensor(const std::string& name) const;
  /// The tensor of `info` (one of tensors()).
  Tensor tensor(const GgufTensorInfo& info) const;

 private:
  friend class GgufParser;
  GgufFile() = default;
  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<std::string> keys_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace retorch::io
