// Protobuf wire-format primitives: varints, length-delimited fields, little-endian fixed64/32.
#include "retorch/utils/tensorboard/ProtoEncoder.h"

#include <cstring>

namespace retorch::utils::tensorboard {

namespace {

template <typename T>
void append_le(std::string& out, T value) {
  // Fixed-width fields are little-endian on the wire; x86 and arm64 are too, so copy the bytes.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "big-endian hosts need a byte swap");
  char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  out.append(b, sizeof(T));
}

}  // namespace

void ProtoEncoder::append_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

void ProtoEncoder::varint_field(int field, uint64_t value) {
  tag(field, 0);
  append_varint(buf_, value);
}

void ProtoEncoder::double_field(int field, double value) {
  tag(field, 1);
  append_le(buf_, value);
}

void ProtoEncoder::float_field(int field, float value) {
  tag(field, 5);
  append_le(buf_, value);
}

void ProtoEncoder::bytes_field(int field, std::string_view bytes) {
  tag(field, 2);
  append_varint(buf_, bytes.size());
  buf_.append(bytes.data(), bytes.size());
}

void ProtoEncoder::packed_doubles_field(int field, const std::vector<double>& values) {
  tag(field, 2);
  append_varint(buf_, values.size() * sizeof(double));
  for (double v : values) append_le(buf_, v);
}

}  // namespace retorch::utils::tensorboard
