// RETORCH_PROFILE=path.json: any program linked with retorch profiles itself from load to exit,
// then writes the Chrome trace to the path and prints the kernel summary to stderr.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "retorch/dispatch/Dispatcher.h"
#include "retorch/profiler/Profiler.h"

namespace retorch::profiler {

namespace {

// Note [RETORCH_PROFILE]
// RETORCH_PROFILE_MEMORY=1 records memory too. A static object of the library: constructed when
// the library loads (before main, or at
// `import retorch`), it arranges for a profile to start when the dispatcher is first built (on
// the thread of the program's first op) if RETORCH_PROFILE names a file; destroyed at exit, it
// stops the profile, writes the trace and prints the kernel summary. `retorch profile --
// <command>` sets the variable and runs the command.
struct EnvProfile {
  EnvProfile() {
    const char* path = std::getenv("RETORCH_PROFILE");
    if (path == nullptr || *path == '\0') return;
    path_ = path;
    // The profile starts once the dispatcher is built (Note [Dispatcher ready hook]).
    Dispatcher::set_ready_hook(&EnvProfile::start);
  }
  static void start();
  ~EnvProfile() {
    if (!profile_) return;
    try {
      profile_->stop();
      profile_->export_chrome_trace(path_);
      std::cerr << "\nretorch profile (RETORCH_PROFILE=" << path_ << "): kernels\n"
                << profile_->kernel_summary(30) << "trace: " << path_ << "\n";
    } catch (const std::exception& e) {
      std::fprintf(stderr, "RETORCH_PROFILE: %s\n", e.what());
    }
  }
  std::string path_;
  std::unique_ptr<Profile> profile_;
};

EnvProfile env_profile;

void EnvProfile::start() {
  try {
    ProfilerOptions o;
    const char* memory = std::getenv("RETORCH_PROFILE_MEMORY");
    o.profile_memory = memory != nullptr && *memory != '\0' && std::string(memory) != "0";
    env_profile.profile_ = std::make_unique<Profile>(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "RETORCH_PROFILE: not profiling: %s\n", e.what());
  }
}

}  // namespace

}  // namespace retorch::profiler
