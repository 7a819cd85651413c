// Installed programs and the sanitizer runtime they need (program_environment.h).
#include "tests/support/program_environment.h"

#include "tests/support/run_command.h"

namespace uroce::testing {

bool installed(const std::string& program) { return run_shell("command -v " + program).exit_code == 0; }

std::string sanitizer_environment() {
#if defined(__SANITIZE_ADDRESS__)
  static const std::string environment = [] {
    std::string path = run_shell("gcc -print-file-name=libasan.so").output;
    return "LD_PRELOAD=" + path.substr(0, path.find('\n')) + " ASAN_OPTIONS=detect_leaks=0 ";
  }();
  return environment;
#else
  return "";
#endif
}

std::string uroce_run(const std::string& address, bool wire) {
  return sanitizer_environment() + uroce_binary() + " run --address " + address + (wire ? " --wire" : "") + " -- ";
}

}  // namespace uroce::testing
