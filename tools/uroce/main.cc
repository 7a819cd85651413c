// The `uroce` command line: one subcommand per tool. Exit status: 0 on success,
// 1 when a command fails, 2 for a usage error.
#include <CLI/CLI.hpp>

#include "tools/uroce/chakra_command.h"
#include "tools/uroce/decode_command.h"
#include "tools/uroce/perf_command.h"
#include "tools/uroce/run_command.h"
#include "tools/uroce/sim_command.h"

int main(int argc, char** argv) {
  CLI::App app{"uroce: software RoCEv2 (soft RNIC, wire tools, fabric simulator)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "uroce 0.1.0");
  int exit_status = 0;
  uroce::tools::add_chakra_command(app, exit_status);
  uroce::tools::add_decode_command(app, exit_status);
  uroce::tools::add_perf_command(app, exit_status);
  uroce::tools::add_run_command(app, exit_status);
  uroce::tools::add_sim_command(app, exit_status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  return exit_status;
}
