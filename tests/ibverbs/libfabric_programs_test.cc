// libfabric, unchanged (Debian's libfabric-bin 1.17), on uroce through
// `uroce run`: fi_info's verbs provider lists uroce0 (MSG and DGRAM
// domains, and RDM through ofi_rxm), and fi_pingpong passes with its data
// checks (-c) between two processes, on RDM endpoints ("verbs;ofi_rxm",
// which connects through rdma_cm after binding "localhost") and on MSG
// endpoints ("verbs"), through shared memory and over the wire; and though
// fi_pingpong never closes its device, no inbox is left in /dev/shm.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <tuple>

#include "tests/support/program_environment.h"
#include "tests/support/program_pair.h"
#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::installed;
using testing::uroce_run;
using testing::run_shell;
using testing::RunResult;

TEST(Libfabric, FiInfoListsTheDeviceInTheVerbsProvider) {
  if (!installed("fi_info")) GTEST_SKIP() << "libfabric-bin is not installed";
  RunResult info = run_shell(uroce_run("127.0.9.200", false) + "timeout 60 fi_info -p verbs 2>&1");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("domain: uroce0\n    version: 117.0\n    type: FI_EP_MSG\n"), std::string::npos)
      << info.output;
  EXPECT_NE(info.output.find("domain: uroce0-dgram\n    version: 117.0\n    type: FI_EP_DGRAM\n"), std::string::npos)
      << info.output;
  EXPECT_NE(info.output.find("provider: verbs;ofi_rxm\n    fabric: IB-0xfe80000000000000\n    domain: uroce0\n"),
            std::string::npos)
      << info.output;
}

struct PingpongCase {
  int id;
  std::string name;
  std::string provider;
  std::string endpoint;
};

void PrintTo(const PingpongCase& test, std::ostream* out) { *out << test.name; }

class FiPingpong : public ::testing::TestWithParam<std::tuple<PingpongCase, bool>> {};

TEST_P(FiPingpong, PassesWithDataChecks) {
  if (!installed("fi_pingpong")) GTEST_SKIP() << "libfabric-bin is not installed";
  const auto& [test, wire] = GetParam();
  int slot = 2 * test.id + (wire ? 1 : 0);
  std::string server = "127.0.9." + std::to_string(210 + 2 * slot);
  std::string client = "127.0.9." + std::to_string(211 + 2 * slot);
  std::string options = " -p \"" + test.provider + "\" -e " + test.endpoint + " -I 100 -c";
  std::string port = std::to_string(47600 + slot);  // the control connection's
  // The client retries until the server's control socket is up.
  testing::PairResult run = testing::run_program_pair(
      uroce_run(server, wire) + "timeout 120 fi_pingpong" + options + " -B " + port,
      uroce_run(client, wire) + "timeout 120 fi_pingpong" + options + " -P " + port + " " + server,
      "Connection refused");
  EXPECT_EQ(run.server_exit, 0) << run.output;
  EXPECT_EQ(run.client_exit, 0) << run.output;
  // Every size from 64 B to 1 MiB, on both sides.
  std::regex largest("\n1m +100 +=100 ");
  EXPECT_EQ(std::distance(std::sregex_iterator(run.output.begin(), run.output.end(), largest), std::sregex_iterator()), 2)
      << run.output;
  // fi_pingpong exits without closing its device: the exit handler still
  // removes each side's intra-host inbox (/dev/shm/uroce.<netns>.<gid>.<port>).
  for (const std::string& address : {server, client}) {
    char gid_tail[16];
    std::snprintf(gid_tail, sizeof gid_tail, "ffff7f0009%02x", std::stoi(address.substr(address.rfind('.') + 1)));
    RunResult left = run_shell(std::string("ls /dev/shm/ | grep '") + gid_tail + ".4791' || true");
    EXPECT_EQ(left.output, "") << "left in /dev/shm by " << address;
  }
}

const PingpongCase kCases[] = {
    {0, "RdmOverRxm", "verbs;ofi_rxm", "rdm"},
    {1, "Msg", "verbs", "msg"},
};

INSTANTIATE_TEST_SUITE_P(Endpoints, FiPingpong, ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<PingpongCase, bool>>& param_info) {
                           return std::get<0>(param_info.param).name + (std::get<1>(param_info.param) ? "Wire" : "SharedMemory");
                         });

}  // namespace
}  // namespace uroce
