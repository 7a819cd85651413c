// Reading a scenario's [chakra] table: where the traces are, which host
// each rank runs on, the process groups, and the collectives' algorithm.
#pragma once

#include <toml++/toml.h>

#include <filesystem>

#include "sim/scenario.h"

namespace uroce::sim {

// Reads the traces too (a relative path is from base_dir, the scenario
// file's directory). Throws ScenarioError naming the key or the file. The
// topology must be read first.
void chakra_from(const toml::table& table, Scenario& scenario, const std::filesystem::path& base_dir);

}  // namespace uroce::sim
