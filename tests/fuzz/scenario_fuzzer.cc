// libFuzzer target: scenario TOML files as `uroce sim run` reads them. A bad
// file gets an error message, never a crash, a hang or an allocation beyond
// libFuzzer's memory limit.
#include <cstdint>
#include <string>

#include "sim/scenario_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto scenario = uroce::sim::parse_scenario(std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml");
  if (!scenario && scenario.error().empty()) __builtin_trap();  // an error always says why
  return 0;
}
