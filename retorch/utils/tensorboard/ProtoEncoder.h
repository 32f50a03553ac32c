// A minimal protobuf wire-format encoder: just what TensorBoard's Event/Summary messages need.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace retorch::utils::tensorboard {

// Note [Proto3 defaults]: the encoder writes every field it is asked to, even zeros. Callers skip
// fields equal to their proto3 default and write fields in field-number order, as protobuf's own
// serializer does, so records match torch's writer byte for byte (test_tensorboard.py checks).
/// Appends protobuf fields to a byte string (proto3 wire format, fields in call order).
class ProtoEncoder {
 public:
  /// Wire type 0: int32/int64/uint64/bool/enum (negative ints take 10 bytes, as in protobuf).
  void varint_field(int field, uint64_t value);
  /// Wire type 1: a double.
  void double_field(int field, double value);
  /// Wire type 5: a float.
  void float_field(int field, float value);
  /// Wire type 2: a string or bytes.
  void bytes_field(int field, std::string_view bytes);
  /// Wire type 2: an embedded message.
  void message_field(int field, const ProtoEncoder& msg) { bytes_field(field, msg.bytes()); }
  /// Wire type 2: a packed repeated double.
  void packed_doubles_field(int field, const std::vector<double>& values);

  /// The encoded bytes so far.
  const std::string& bytes() const { return buf_; }
  /// Moves the encoded bytes out.
  std::string release() { return std::move(buf_); }

  /// Appends v as a base-128 varint.
  static void append_varint(std::string& out, uint64_t v);

 private:
  void tag(int field, int wire_type) { append_varint(buf_, (uint64_t(field) << 3) | wire_type); }

  std::string buf_;
};

}  // namespace retorch::utils::tensorboard
