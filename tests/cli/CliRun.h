// Runs a shell command for the CLI tests: its exit code (-1 when it died of a signal) and its
// stdout and stderr together.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

namespace retorch::cli_test {

inline std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, out};
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace retorch::cli_test
