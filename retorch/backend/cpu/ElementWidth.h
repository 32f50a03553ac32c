// Element moves by width: kernels that copy elements without looking at them pick an unsigned
// type of the element's size.
#pragma once
#include <cstdint>

#include "retorch/core/Error.h"

namespace retorch::cpu {

/// Calls f(U()) with the unsigned type U of `bytes` size (1, 2, 4 or 8): the element type only
/// sets the width of the move. Raises for other sizes, naming op.
template <typename F>
void by_width(int64_t bytes, const char* op, const F& f) {
  switch (bytes) {
    case 1: f(uint8_t()); break;
    case 2: f(uint16_t()); break;
    case 4: f(uint32_t()); break;
    case 8: f(uint64_t()); break;
    default: RT_ERROR(op, ": unsupported element size ", bytes);
  }
}

}  // namespace retorch::cpu
