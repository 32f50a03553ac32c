// Device: a device type (cpu, cuda, mps, xpu, meta) plus an optional index.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace retorch {

// Meta tensors have shapes and dtypes but no data. MPS and XPU have no backend in retorch:
// tensors on them (and on cuda without a CUDA backend) run through the device fallback
// (Note [Device routing] in retorch/device/DeviceFallback.cpp).
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, MPS = 2, XPU = 3, Meta = 4 };
constexpr int kNumDeviceTypes = 5;
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kMPS = DeviceType::MPS;
constexpr DeviceType kXPU = DeviceType::XPU;
constexpr DeviceType kMeta = DeviceType::Meta;

struct Device {
  DeviceType type = kCPU;
  int8_t index = -1;

  Device() = default;
  Device(DeviceType t, int8_t i = -1) : type(t), index(i) {}
  /// Parses "cpu", "cuda", "cuda:1", "mps", "xpu:0", "meta".
  Device(std::string_view spec);
  Device(const char* spec) : Device(std::string_view(spec)) {}
  Device(const std::string& spec) : Device(std::string_view(spec)) {}

  bool is_cpu() const { return type == kCPU; }
  bool is_cuda() const { return type == kCUDA; }
  bool is_meta() const { return type == kMeta; }
  /// Whether tensors on this device type carry a device index (cuda, mps, xpu).
  bool has_index() const { return type == kCUDA || type == kMPS || type == kXPU; }
  /// The device a tensor lives on when asked for this one: the thread's current device when
  /// no index is given on indexed types, no index on cpu and meta (as PyTorch reports them).
  Device canonical() const;
  bool operator==(const Device& o) const {
    return type == o.type && index == o.index;
  }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;
};

std::ostream& operator<<(std::ostream& os, const Device& d);
std::string_view device_type_name(DeviceType t);

/// The calling thread's current device index of a type (0 until set_current_device_index).
int8_t current_device_index(DeviceType t);
void set_current_device_index(DeviceType t, int8_t index);

}  // namespace retorch
