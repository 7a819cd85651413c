// Reading a scenario's [chakra] table: where the traces are, which host
// each rank runs on, the process groups, and the collectives' algorithm.
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <string>

#include "sim/scenario.h"

namespace uroce::sim {

// Adds one job, read from the table at `where` ("chakra" or "chakra[i]"),
// traces included (a relative path is from base_dir, the scenario file's
// directory). Throws ScenarioError naming the key or the file. The
// topology must be read first.
void chakra_from(const toml::table& table, const std::string& where, Scenario& scenario,
                 const std::filesystem::path& base_dir);

}  // namespace uroce::sim
