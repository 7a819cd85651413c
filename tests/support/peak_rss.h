// Test helper: the process's peak resident set size so far (VmHWM), in KiB,
// for tests that bound what a flood may make uroce allocate.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

namespace uroce::testing {

inline long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

}  // namespace uroce::testing
