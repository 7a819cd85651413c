// `uroce perf TEST --bind ADDR [SERVER]`: perftest's eight tests (write, read,
// send and atomic; bandwidth and latency) between two uroce devices. Without
// SERVER it waits as the server; with it, it connects as the client. Both
// print perftest's table; --verify checks every byte.
#pragma once

#include <CLI/CLI.hpp>

#include "tools/uroce/perf_options.h"

namespace uroce::tools {

void add_perf_command(CLI::App& app, int& exit_status);
int run_perf(const PerfOptions& options);

}  // namespace uroce::tools
