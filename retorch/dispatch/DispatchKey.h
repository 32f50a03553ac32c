// DispatchKey: the layers an operator call passes through, highest priority first.
#pragma once
#include <cstdint>
#include <string_view>

namespace retorch {

// The numeric value is the bit index in a DispatchKeySet; a higher value wins.
enum class DispatchKey : uint8_t {
  Undefined = 0,
  CPU = 1,
  CUDA = 2,
  Meta = 3,
  MPS = 4,
  XPU = 5,
  DeviceFallback = 10,
  Autograd = 20,
  Tracer = 30,
  Autocast = 35,
  Profiler = 40,
  // Spare keys above everything, for tests and experiments with boxed fallbacks.
  TestingA = 60,
  TestingB = 61,
  NumKeys = 64,
};

std::string_view dispatch_key_name(DispatchKey k);

}  // namespace retorch
