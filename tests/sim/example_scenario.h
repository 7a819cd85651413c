// A shipped example scenario (examples/NAME), loaded as `uroce sim run`
// would; throws when it does not load.
#pragma once

#include <stdexcept>
#include <string>

#include "sim/scenario_file.h"

namespace uroce::sim {

inline Scenario example(const std::string& name) {
  auto scenario = load_scenario(std::string(UROCE_EXAMPLES_DIR) + "/" + name);
  if (!scenario) throw std::runtime_error(scenario.error());
  return *scenario;
}

}  // namespace uroce::sim
