// Autocast (torch.autocast): the Autocast key's kernels run listed ops in a lower-precision dtype or
// in float32, per device type, while a thread has autocast on.
#pragma once
#include <cstdint>

#include "retorch/core/Device.h"
#include "retorch/core/ScalarType.h"
#include "retorch/dispatch/Dispatcher.h"

namespace retorch {

/// What autocast does to an op's floating-point tensors (ops.yaml `autocast:`; PyTorch's
/// CastPolicy): nothing, cast to the autocast dtype, cast to float32, pass dtype=float32 when the
/// op's optional dtype is unset, cast all to the widest of them, or refuse to run (an op whose
/// backward is unsafe in the lower-precision dtype).
enum class AutocastPolicy : uint8_t {
  kNone,
  kLowerPrecision,
  kFloat32,
  kFloat32OptDtype,
  kPromote,
  kBanned,
};

namespace autocast {
/// Whether autocast is on, on this thread, for ops whose tensors are on device type t.
bool is_enabled(DeviceType t);
/// Turns autocast on or off for device type t (cpu or cuda) on this thread.
void set_enabled(DeviceType t, bool enabled);
/// The lower-precision dtype of device type t (bfloat16 for cpu, float16 for cuda by default).
ScalarType get_dtype(DeviceType t);
/// Sets the lower-precision dtype of t: float16 or bfloat16.
void set_dtype(DeviceType t, ScalarType dtype);
/// Whether casts of float32 leaf weights are reused within an autocast region (default true).
bool is_cache_enabled();
void set_cache_enabled(bool enabled);
/// Drops the cached casts (torch.clear_autocast_cache; autocast's outermost exit calls it).
void clear_cache();
/// This thread's autocast settings (on/off and dtype of cpu and cuda) as one number, for
/// caches of code traced under them (the compiler's guards).
uint32_t state_key();
/// Counts nested autocast regions; returns the new depth.
int increment_nesting();
int decrement_nesting();

/// Autocast on for one device type while alive, the previous state restored after
/// (torch.autocast in C++).
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType t, ScalarType dtype, bool enabled = true,
                         bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType type_;
  bool prev_enabled_;
  ScalarType prev_dtype_;
  bool prev_cache_;
};
}  // namespace autocast

/// The Autocast kernel of an op with these policies for cpu and cuda tensors; dtype_arg is the
/// position of its optional dtype argument (-1 if none). Written into the generated registrations.
KernelFunction make_autocast_kernel(AutocastPolicy cpu, AutocastPolicy cuda, int dtype_arg);

}  // namespace retorch
