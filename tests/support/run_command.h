// Test helper: run the `uroce` binary as a user would and collect its output.
#pragma once

#include <string>

namespace uroce::testing {

struct RunResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs `uroce ARGUMENTS` through the shell; exit_code is -1 if it did not exit normally.
RunResult run_uroce(const std::string& arguments);

}  // namespace uroce::testing
