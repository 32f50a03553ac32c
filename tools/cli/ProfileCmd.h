// `retorch profile [--output trace.json] [--memory-plot mem.png] -- <command>`: runs a retorch
// program under RETORCH_PROFILE (it prints its kernel table at exit and writes the trace) and,
// when asked, plots the memory timeline the trace recorded.
#pragma once
#include <string>
#include <vector>

namespace retorch::cli {

struct ProfileConfig {
  std::string output = "retorch_profile.json";
  std::string memory_plot;  // a PNG path: profile memory too and plot it
  std::vector<std::string> command;
};

/// Runs the command; returns its exit status.
int run_profile(const ProfileConfig& c);

/// Plots the "CPU memory" counter events of a Chrome trace into png_path; returns the number
/// of points drawn.
size_t plot_trace_memory(const std::string& trace_path, const std::string& png_path);

}  // namespace retorch::cli
