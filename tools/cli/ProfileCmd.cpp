// `retorch profile`: the command under RETORCH_PROFILE, and the memory timeline of its trace.
#include "tools/cli/ProfileCmd.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "retorch/core/Error.h"
#include "tools/cli/Plot.h"

namespace retorch::cli {

namespace {

// One counter track of a trace, drawn as steps (memory holds its value until the next event).
size_t plot_track(const std::string& title, const std::string& png_path,
                  const std::vector<double>& t, const std::vector<double>& allocated,
                  const std::vector<double>& reserved) {
  // Thinned to at most 4000 points, keeping each window's largest allocated value.
  const size_t n = t.size(), step = n / 4000 + 1;
  std::vector<double> tt, aa, rr;
  for (size_t i = 0; i < n; i += step) {
    size_t best = i;
    for (size_t j = i; j < std::min(n, i + step); ++j)
      if (allocated[j] > allocated[best]) best = j;
    tt.push_back(t[best]);
    aa.push_back(allocated[best]);
    rr.push_back(reserved[best]);
  }
  std::vector<double> st, sa, sr;
  for (size_t i = 0; i < tt.size(); ++i) {
    if (i > 0) {
      st.push_back(tt[i]);
      sa.push_back(aa[i - 1]);
      sr.push_back(rr[i - 1]);
    }
    st.push_back(tt[i]);
    sa.push_back(aa[i]);
    sr.push_back(rr[i]);
  }
  plot_memory_timeline(png_path, title, st, sa, sr);
  return tt.size();
}

// mem.png for the cpu, mem.cuda0.png for cuda:0.
std::string device_plot_path(const std::string& png_path, const std::string& device) {
  std::string tag;
  for (char ch : device)
    if (ch != ':') tag += ch;
  const size_t dot = png_path.rfind('.'), slash = png_path.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return has_ext ? png_path.substr(0, dot) + "." + tag + png_path.substr(dot)
                 : png_path + "." + tag + ".png";
}

}  // namespace

std::vector<std::pair<std::string, size_t>> plot_trace_memory(const std::string& trace_path,
                                                              const std::string& png_path) {
  std::ifstream f(trace_path, std::ios::binary);
  RT_CHECK(f.good(), "profile: cannot read the trace '", trace_path, "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    RT_ERROR("profile: the trace '", trace_path, "' is not JSON: ", e.what());
  }
  // One track per allocator: "CPU memory", and "cuda:0 memory" for a device's own memory.
  struct Track {
    std::vector<double> t, allocated, reserved;
  };
  std::map<std::string, Track> tracks;
  tracks["CPU memory"];  // the cpu's plot is written even when the program allocated nothing
  const std::string suffix = " memory";
  for (const auto& e : doc.value("traceEvents", nlohmann::json::array())) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") != "C" || name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    Track& tr = tracks[name];
    tr.t.push_back(e.at("ts").get<double>() / 1e3);
    tr.allocated.push_back(e.at("args").at("allocated").get<double>() / (1024.0 * 1024));
    tr.reserved.push_back(e.at("args").at("reserved").get<double>() / (1024.0 * 1024));
  }
  std::vector<std::pair<std::string, size_t>> written;
  for (const auto& [name, tr] : tracks) {
    const std::string device = name.substr(0, name.size() - suffix.size());
    const std::string path = device == "CPU" ? png_path : device_plot_path(png_path, device);
    written.emplace_back(path, plot_track(name + " (" + trace_path + ")", path, tr.t,
                                          tr.allocated, tr.reserved));
  }
  return written;
}

int run_profile(const ProfileConfig& c) {
  RT_CHECK(!c.command.empty(), "profile: no command given (retorch profile -- <command>)");
  // The child profiles itself (Note [RETORCH_PROFILE]).
  ::setenv("RETORCH_PROFILE", c.output.c_str(), 1);
  if (!c.memory_plot.empty()) ::setenv("RETORCH_PROFILE_MEMORY", "1", 1);
  std::vector<std::string> cmd = c.command;
  std::vector<char*> args;
  for (std::string& a : cmd) args.push_back(a.data());
  args.push_back(nullptr);
  if (c.memory_plot.empty()) {  // nothing to do afterwards: become the command
    ::execvp(args[0], args.data());
    RT_ERROR("profile: cannot run '", cmd[0], "': ", std::strerror(errno));
  }
  pid_t pid = ::fork();
  RT_CHECK(pid >= 0, "profile: fork failed: ", std::strerror(errno));
  if (pid == 0) {
    ::execvp(args[0], args.data());
    std::cerr << "retorch: error: profile: cannot run '" << cmd[0] << "': " << std::strerror(errno)
              << "\n";
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == 127) return code;
  for (const auto& [path, points] : plot_trace_memory(c.output, c.memory_plot))
    std::cerr << "memory timeline: " << path << " (" << points << " points)\n";
  return code;
}

}  // namespace retorch::cli
