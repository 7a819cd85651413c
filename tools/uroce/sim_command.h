// `uroce sim run SCENARIO.toml --out DIR [--seed N]`: runs a fabric
// simulation and writes summary.json and flows.csv into DIR.
#pragma once

#include <CLI/CLI.hpp>

namespace uroce::tools {

void add_sim_command(CLI::App& app, int& exit_status);

}  // namespace uroce::tools
