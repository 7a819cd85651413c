// run_program_pair: one bash script, so that the server is reaped and its
// output kept even when the client fails.
#include "tests/support/program_pair.h"

#include <regex>
#include <sstream>

#include "tests/support/run_command.h"

namespace uroce::testing {

PairResult run_program_pair(const std::string& server, const std::string& client, const std::string& not_up_yet) {
  std::string script = "dir=$(mktemp -d); " + server + " > $dir/server 2>&1 & pid=$!; " +
                       "for i in $(seq 100); do " + client + " > $dir/client 2>&1; client=$?; " +
                       "grep -q \"" + not_up_yet + "\" $dir/client || break; sleep 0.1; done; " +
                       "wait $pid; echo \"$? $client\"; cat $dir/server; echo @@; cat $dir/client; rm -rf $dir";
  RunResult run = run_shell("bash -c '" + std::regex_replace(script, std::regex("'"), "'\\''") + "'");
  PairResult pair;
  std::istringstream(run.output) >> pair.server_exit >> pair.client_exit;
  pair.output = run.output;
  return pair;
}

}  // namespace uroce::testing
