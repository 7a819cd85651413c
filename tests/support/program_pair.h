// Test helper: an unmodified server program in the background and its
// client, each a shell command (with its own environment), the client run
// again while it fails to reach a server that is not up yet.
#pragma once

#include <string>

namespace uroce::testing {

struct PairResult {
  int server_exit = -1;
  int client_exit = -1;
  std::string output;  // the server's, "@@", then the client's
};

// not_up_yet: a grep pattern in the client's output that means the server
// was not listening yet; the client is run at most 100 times, 0.1 s apart.
PairResult run_program_pair(const std::string& server, const std::string& client, const std::string& not_up_yet);

}  // namespace uroce::testing
