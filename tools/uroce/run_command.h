// `uroce run`: starts an unmodified RDMA program on uroce's libibverbs.
#pragma once

#include <CLI/CLI.hpp>

namespace uroce::tools {

void add_run_command(CLI::App& app, int& exit_status);

}  // namespace uroce::tools
