// `retorch profile [--output trace.json] [--memory-plot mem.png] -- <command>`: runs a retorch
// program under RETORCH_PROFILE (it prints its kernel table at exit and writes the trace) and,
// when asked, plots the memory timeline the trace recorded.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace retorch::cli {

struct ProfileConfig {
  std::string output = "retorch_profile.json";
  std::string memory_plot;  // a PNG path: profile memory too and plot it
  std::vector<std::string> command;
};

/// Runs the command; returns its exit status.
int run_profile(const ProfileConfig& c);

/// Plots the memory counter tracks of a Chrome trace: "CPU memory" into png_path, a device's
/// own memory ("cuda:0 memory") beside it (mem.png -> mem.cuda0.png); returns each file written
/// and the points drawn in it.
std::vector<std::pair<std::string, size_t>> plot_trace_memory(const std::string& trace_path,
                                                              const std::string& png_path);

}  // namespace retorch::cli
