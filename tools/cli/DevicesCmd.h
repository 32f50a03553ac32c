// `retorch devices [--matrix [--markdown]] [--report -- <command>]`: the devices and how each
// routes, the op compatibility matrix, or a command run with RETORCH_DEVICE_REPORT=1.
#pragma once
#include <string>
#include <vector>

namespace retorch::cli {

struct DevicesConfig {
  bool matrix = false;
  bool markdown = false;
  bool report = false;
  std::vector<std::string> command;  // with --report
};

/// Prints what was asked (or runs the command); returns the exit status.
int run_devices(const DevicesConfig& c);

}  // namespace retorch::cli
