// The device compatibility matrix, read from the dispatch tables: for each op and device type,
// whether a native kernel, the composite, the device fallback or nothing runs it.
#include <sstream>

#include "retorch/device/DeviceFallback.h"
#include "retorch/dispatch/Dispatcher.h"

namespace retorch {

namespace {
constexpr DeviceType kMatrixTypes[] = {kCPU, kCUDA, kMPS, kXPU, kMeta};
constexpr DispatchKey kMatrixKeys[] = {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::MPS,
                                       DispatchKey::XPU, DispatchKey::Meta};

std::string how_runs(const OperatorHandle& op, size_t i) {
  if (op.device_independent()) return "composite";
  const DeviceType t = kMatrixTypes[i];
  // A native kernel counts only where the device has a backend; elsewhere the fallback runs it.
  const bool native = op.has_kernel(kMatrixKeys[i]);
  if (native && (t == kMeta || device_has_backend(t))) return "native";
  if (t == kMeta) return "missing";
  const bool runs_somewhere = op.has_kernel(DispatchKey::CPU) ||
                              (device_has_backend(kCUDA) && op.has_kernel(DispatchKey::CUDA));
  return runs_somewhere ? "fallback" : "missing";
}
}  // namespace

std::vector<CompatRow> compat_matrix() {
  std::vector<CompatRow> rows;
  for (const OperatorHandle* op : Dispatcher::singleton().ops()) {
    CompatRow r;
    r.op = op->qualified_name();
    for (size_t i = 0; i < std::size(kMatrixTypes); ++i) r.devices.push_back(how_runs(*op, i));
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string compat_matrix_text(bool markdown) {
  const std::vector<CompatRow> rows = compat_matrix();
  std::ostringstream os;
  size_t counts[std::size(kMatrixTypes)][4] = {};
  auto slot = [](const std::string& s) {
    return s == "native" ? 0 : s == "composite" ? 1 : s == "fallback" ? 2 : 3;
  };
  for (const auto& r : rows)
    for (size_t i = 0; i < r.devices.size(); ++i) ++counts[i][slot(r.devices[i])];
  if (markdown) {
    os << "# Devices: what runs where\n\n"
       << "Generated from the dispatch tables by `retorch devices --matrix --markdown` (a test "
          "fails when this file is stale). For each op and device type: **native** (a kernel "
          "for the device), **composite** (built from other ops, so it runs wherever they do), "
          "**fallback** (no kernel here: the device fallback runs it on the first available "
          "device of the order cuda → mps → cpu and hands the results back, see "
          "`RETORCH_DEVICE_FALLBACK`), or **missing**.\n\n"
          "This build: cuda "
       << (device_has_backend(kCUDA) ? "has its backend" : "has no backend (fallback to cpu)")
       << "; mps and xpu have no backend; meta runs only the ops with a meta kernel.\n\n";
    os << "| device | native | composite | fallback | missing |\n|---|---|---|---|---|\n";
    for (size_t i = 0; i < std::size(kMatrixTypes); ++i)
      os << "| " << device_type_name(kMatrixTypes[i]) << " | " << counts[i][0] << " | "
         << counts[i][1] << " | " << counts[i][2] << " | " << counts[i][3] << " |\n";
    os << "\n| op | cpu | cuda | mps | xpu | meta |\n|---|---|---|---|---|---|\n";
    for (const auto& r : rows) {
      os << "| `" << r.op << "` |";
      for (const auto& d : r.devices) os << " " << d << " |";
      os << "\n";
    }
    return os.str();
  }
  size_t w = 2;
  for (const auto& r : rows) w = std::max(w, r.op.size());
  auto pad = [](const std::string& s, size_t n) { return s + std::string(n > s.size() ? n - s.size() : 0, ' '); };
  os << pad("op", w) << "  " << pad("cpu", 10) << pad("cuda", 10) << pad("mps", 10)
     << pad("xpu", 10) << "meta\n";
  for (const auto& r : rows) {
    os << pad(r.op, w) << "  ";
    for (size_t i = 0; i < r.devices.size(); ++i)
      os << (i + 1 < r.devices.size() ? pad(r.devices[i], 10) : r.devices[i]);
    os << "\n";
  }
  os << "\n" << rows.size() << " ops:";
  for (size_t i = 0; i < std::size(kMatrixTypes); ++i)
    os << " " << device_type_name(kMatrixTypes[i]) << " " << counts[i][0] << " native/"
       << counts[i][1] << " composite/" << counts[i][2] << " fallback/" << counts[i][3]
       << " missing;";
  os << "\n";
  return os.str();
}

}  // namespace retorch
