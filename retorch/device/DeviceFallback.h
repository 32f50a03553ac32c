// Device routing: the DeviceFallback policy, its per-op counters and the compatibility matrix.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "retorch/core/Device.h"

namespace retorch {

/// What an op on a device without a kernel for it does (RETORCH_DEVICE_FALLBACK):
/// auto runs it on the executing device silently, warn does so and warns once per op, error
/// raises naming the op and device, off leaves the dispatcher's "no kernel" error.
enum class FallbackPolicy { kAuto, kWarn, kError, kOff };
/// Where a routed op's results live: on the device the program asked for (x.device still says
/// cuda; the default), or on the device that ran the op.
enum class FallbackPlacement { kRequested, kExecuting };

void set_device_fallback(FallbackPolicy policy);
/// Parses "auto", "warn", "error", "off" (an error names the choices).
void set_device_fallback(const std::string& policy);
FallbackPolicy device_fallback();
std::string device_fallback_name(FallbackPolicy policy);
void set_device_fallback_placement(FallbackPlacement placement);
FallbackPlacement device_fallback_placement();
/// The devices tried in order for a routed op (default cuda, mps, cpu); cpu is always last.
void set_device_fallback_order(const std::vector<DeviceType>& order);
std::vector<DeviceType> device_fallback_order();

/// Whether a device type runs kernels here (cpu always; cuda with its backend and a device).
bool device_has_backend(DeviceType type);

/// Counters of one op's fallbacks from one device to another.
struct FallbackStats {
  std::string op;         // "aten::mm"
  Device from, to;        // asked device, executing device
  int64_t calls = 0;      // fallbacks taken
  int64_t bytes_moved = 0;   // bytes of tensors handed between the devices (both ways)
  int64_t bytes_copied = 0;  // of those, bytes really copied (0 when memory is shared)
  int64_t move_ns = 0;       // time spent moving arguments and results
};
/// Every op's counters, most calls first.
std::vector<FallbackStats> device_fallback_stats();
void reset_device_fallback_stats();
/// The counters as a table (what `retorch devices --report` and RETORCH_DEVICE_REPORT=1 print).
std::string device_fallback_report();

/// Receives the once-per-op warnings of the warn policy (default: stderr). The Python module
/// installs one that raises a UserWarning.
using FallbackWarningHandler = void (*)(const std::string& message);
void set_fallback_warning_handler(FallbackWarningHandler handler);

/// One row of the compatibility matrix: how each device type runs the op.
struct CompatRow {
  std::string op;                    // "aten::add.Tensor"
  std::vector<std::string> devices;  // per device type: "native", "composite", "fallback", "missing"
};
/// The matrix over every registered op, for cpu, cuda, mps, xpu and meta (in that order).
std::vector<CompatRow> compat_matrix();
/// The matrix as a Markdown document (docs/devices.md) or as a plain table.
std::string compat_matrix_text(bool markdown);

}  // namespace retorch
