// `uroce chakra show FILE...` prints Chakra traces node by node;
// `uroce chakra example KIND --ranks N --out PREFIX` writes the example
// training steps (chakra/example_traces.h) as PREFIX.<rank>.et.
#pragma once

#include <CLI/CLI.hpp>

namespace uroce::tools {

void add_chakra_command(CLI::App& app, int& exit_status);

}  // namespace uroce::tools
