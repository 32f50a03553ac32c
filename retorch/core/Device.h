// Device: a device type (cpu, cuda) plus an optional index.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace retorch {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

struct Device {
  DeviceType type = kCPU;
  int8_t index = -1;

  Device() = default;
  Device(DeviceType t, int8_t i = -1) : type(t), index(i) {}
  /// Parses "cpu", "cuda", "cuda:1".
  Device(std::string_view spec);
  Device(const char* spec) : Device(std::string_view(spec)) {}
  Device(const std::string& spec) : Device(std::string_view(spec)) {}

  bool is_cpu() const { return type == kCPU; }
  bool is_cuda() const { return type == kCUDA; }
  bool operator==(const Device& o) const {
    return type == o.type && index == o.index;
  }
  std::string str() const;
};

std::ostream& operator<<(std::ostream& os, const Device& d);
std::string_view device_type_name(DeviceType t);

}  // namespace retorch
