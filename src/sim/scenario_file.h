// Scenario files: TOML in, Scenario out. Unknown keys, wrong types and
// impossible values are errors that name the key, never silently ignored.
// The format is documented in docs/simulator/README.md.
#pragma once

#include <string>

#include "uroce/expected.h"
#include "sim/scenario.h"

namespace uroce::sim {

Expected<Scenario, std::string> parse_scenario(const std::string& toml_text, const std::string& source_name);
Expected<Scenario, std::string> load_scenario(const std::string& path);

}  // namespace uroce::sim
