// Test helpers: run the `uroce` binary (or any shell command) as a user would
// and collect its output.
#pragma once

#include <string>

namespace uroce::testing {

struct RunResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs a shell command; exit_code is -1 if it did not exit normally.
RunResult run_shell(const std::string& command);

// The built `uroce` binary, and `uroce ARGUMENTS` run through the shell.
std::string uroce_binary();
RunResult run_uroce(const std::string& arguments);

}  // namespace uroce::testing
