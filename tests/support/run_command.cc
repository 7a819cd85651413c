// run_shell / run_uroce: popen a command (the built binary is UROCE_BINARY)
// with stderr folded into stdout.
#include "tests/support/run_command.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

namespace uroce::testing {

std::string uroce_binary() { return UROCE_BINARY; }

RunResult run_uroce(const std::string& arguments) { return run_shell(uroce_binary() + " " + arguments); }

RunResult run_shell(const std::string& shell_command) {
  std::string command = "{ " + shell_command + "; } 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace uroce::testing
