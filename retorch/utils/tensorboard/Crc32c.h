// CRC32C (Castagnoli), the checksum that frames TFRecord / TensorBoard event files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace retorch::utils::tensorboard {

/// Extends crc (0 to start) over n bytes; uses SSE4.2 crc32 instructions when the CPU has them.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
/// The table-driven path alone (the reference the hardware path is tested against).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n);
/// CRC32C of a whole buffer.
inline uint32_t crc32c(std::string_view s) {
  return crc32c_extend(0, s.data(), s.size());
}

// Note [Masked CRC]: a CRC stored next to the data it covers is itself data a later CRC may cover;
// masking keeps "CRC of a string containing its own CRC" from degenerating (TensorFlow's rule).
/// TFRecord's masked CRC: rotate right by 15 and add a constant.
inline uint32_t mask_crc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
/// Inverse of mask_crc.
inline uint32_t unmask_crc(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}
/// mask_crc(crc32c(s)).
inline uint32_t masked_crc32c(std::string_view s) {
  return mask_crc(crc32c(s));
}

}  // namespace retorch::utils::tensorboard
