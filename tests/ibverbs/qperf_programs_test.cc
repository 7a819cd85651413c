// qperf, unchanged (Debian's qperf 0.4.11), on uroce through `uroce run`:
// rc_bw, rc_lat, rc_rdma_write_bw and ud_lat from one client process
// against a qperf server (which forks a child per test), connecting by
// qperf's own exchange and by rdma_cm (-cm1), through shared memory and
// over the wire. Each test must report its figure.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <tuple>

#include "tests/support/program_environment.h"
#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::installed;
using testing::uroce_run;
using testing::run_shell;
using testing::RunResult;

class Qperf : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(Qperf, ReportsEveryTestsFigure) {
  if (!installed("qperf")) GTEST_SKIP() << "qperf is not installed";
  const auto& [connection_manager, wire] = GetParam();
  int slot = (connection_manager ? 2 : 0) + (wire ? 1 : 0);
  std::string server = "127.0.9." + std::to_string(230 + 2 * slot);
  std::string client = "127.0.9." + std::to_string(231 + 2 * slot);
  std::string port = std::to_string(19770 + slot);
  // The server runs until the client is done; the client retries until the server listens.
  std::string script = uroce_run(server, wire) + "timeout 120 qperf -lp " + port + " > /dev/null 2>&1 & pid=$!; " +
                       "for i in $(seq 100); do out=$(" + uroce_run(client, wire) + "timeout 100 qperf -lp " + port +
                       " " + server + " -t 1" + (connection_manager ? " -cm1" : "") +
                       " rc_bw rc_lat rc_rdma_write_bw ud_lat 2>&1); client=$?; "
                       "echo \"$out\" | grep -q \"failed to connect\" || break; sleep 0.1; done; "
                       "kill $pid; echo \"$out\"; echo \"exit $client\"";
  RunResult run = run_shell("bash -c '" + std::regex_replace(script, std::regex("'"), "'\\''") + "'");
  EXPECT_NE(run.output.find("exit 0\n"), std::string::npos) << run.output;
  for (const char* figure : {"rc_bw:\n    bw  = ", "rc_lat:\n    latency  = ", "rc_rdma_write_bw:\n    bw  = ",
                             "ud_lat:\n    latency  = "}) {
    EXPECT_NE(run.output.find(figure), std::string::npos) << figure << " in\n" << run.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Connections, Qperf, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool>>& param_info) {
                           return std::string(std::get<0>(param_info.param) ? "RdmaCm" : "OwnExchange") +
                                  (std::get<1>(param_info.param) ? "Wire" : "SharedMemory");
                         });

}  // namespace
}  // namespace uroce
