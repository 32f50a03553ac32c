// Grad modes: GradMode (no_grad / enable_grad), InferenceMode and anomaly detection.
#pragma once

namespace retorch {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Disables gradient recording for a scope (torch.no_grad).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Sets grad mode for a scope (torch.set_grad_enabled / enable_grad).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

/// Inference mode: no graph is recorded and no version bookkeeping is needed.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  static bool is_enabled();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  bool prev_grad_;
  bool prev_inference_;
};

/// Anomaly detection: backward checks every gradient for NaN and names the forward op.
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_); }

 private:
  bool prev_;
};

}  // namespace retorch
