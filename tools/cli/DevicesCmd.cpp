// `retorch devices`: device availability and routing, the compatibility matrix, fallback reports.
#include "tools/cli/DevicesCmd.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "retorch/core/Error.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/device/DeviceFallback.h"

namespace retorch::cli {

int run_devices(const DevicesConfig& c) {
  if (c.report) {
    RT_CHECK(!c.command.empty(), "devices --report: no command given "
                                 "(retorch devices --report -- <command>)");
    // The child prints its fallback counters at exit (RETORCH_DEVICE_REPORT in DeviceFallback.cpp).
    ::setenv("RETORCH_DEVICE_REPORT", "1", 1);
    std::vector<std::string> cmd = c.command;
    std::vector<char*> args;
    for (std::string& a : cmd) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    RT_ERROR("devices: cannot run '", cmd[0], "': ", std::strerror(errno));
  }
  if (c.matrix) {
    std::cout << compat_matrix_text(c.markdown);
    return 0;
  }
  std::cout << "device  available  count  runs ops on\n";
  for (DeviceType t : {kCPU, kCUDA, kMPS, kXPU, kMeta}) {
    std::string route;
    if (t == kMeta) route = "shapes only (no data)";
    else if (device_has_backend(t)) route = std::string(device_type_name(t)) + " (native)";
    else route = "the device fallback (first available of the order)";
    std::string name(device_type_name(t));
    std::cout << name << std::string(8 - name.size(), ' ')
              << (device_available(t) ? "yes        " : "no         ") << device_count(t)
              << "      " << route << "\n";
  }
  std::cout << "fallback policy: " << device_fallback_name(device_fallback())
            << " (RETORCH_DEVICE_FALLBACK=auto|warn|error|off); order:";
  for (DeviceType t : device_fallback_order()) std::cout << " " << device_type_name(t);
  std::cout << "\n";
  return 0;
}

}  // namespace retorch::cli
