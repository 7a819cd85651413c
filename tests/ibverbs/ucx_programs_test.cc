// UCX, unchanged (Debian's ucx-utils 1.13), on uroce through `uroce run`:
// ucx_info lists uroce0 with the rc_verbs and ud_verbs transports (UCX reads
// /dev/infiniband and sysfs, which the preloaded sysfs view provides), and
// ucx_perftest's tag_bw, tag_lat and ucp_put_bw pass between two processes
// with UCX_TLS=rc_verbs,ud_verbs (RC carries the data; UD is UCX's wire-up
// transport) and with ud_verbs alone, through shared memory and over the
// wire. uroce's counters show that the bytes went through the device.
#include <gtest/gtest.h>

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

TEST(Ucx, UcxInfoListsTheDeviceWithRcAndUdVerbs) {
  if (!installed("ucx_info")) GTEST_SKIP() << "ucx-utils is not installed";
  RunResult info = run_shell(uroce_run("127.0.9.150", false) + "timeout 60 ucx_info -d 2>&1");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("# Memory domain: uroce0\n#     Component: ib\n"), std::string::npos) << info.output;
  EXPECT_TRUE(std::regex_search(info.output, std::regex("Transport: rc_verbs\n#         Device: uroce0:1\n")))
      << info.output;
  EXPECT_TRUE(std::regex_search(info.output, std::regex("Transport: ud_verbs\n#         Device: uroce0:1\n")))
      << info.output;
}

struct PerftestCase {
  int id;  // picks the addresses and the TCP port, apart from every other test's
  std::string name;
  std::string transports;  // UCX_TLS
  std::string test;        // ucx_perftest's -t and size options
};

void PrintTo(const PerftestCase& test, std::ostream* out) { *out << test.name; }

class UcxPerftest : public ::testing::TestWithParam<std::tuple<PerftestCase, bool>> {};

// Both ucx_perftest processes on their own uroce device; the client retries
// until the server's TCP exchange is up.
testing::PairResult run_perftest(const PerftestCase& test, bool wire, int slot) {
  std::string server = "127.0.9." + std::to_string(160 + 2 * slot);
  std::string client = "127.0.9." + std::to_string(161 + 2 * slot);
  std::string port = std::to_string(13500 + slot);
  std::string ucx = "UCX_TLS=" + test.transports + " UCX_NET_DEVICES=uroce0:1 UROCE_STATS=1 ";
  return testing::run_program_pair(ucx + uroce_run(server, wire) + "timeout 120 ucx_perftest -p " + port,
                                   ucx + uroce_run(client, wire) + "timeout 120 ucx_perftest -p " + port +
                                       " 127.0.0.1 -t " + test.test,
                                   "Connection refused");
}

TEST_P(UcxPerftest, PassesBetweenTwoProcesses) {
  if (!installed("ucx_perftest")) GTEST_SKIP() << "ucx-utils is not installed";
  const auto& [test, wire] = GetParam();
  testing::PairResult run = run_perftest(test, wire, 2 * test.id + (wire ? 1 : 0));
  EXPECT_EQ(run.server_exit, 0) << run.output;
  EXPECT_EQ(run.client_exit, 0) << run.output;
  EXPECT_NE(run.output.find("\nFinal:"), std::string::npos) << run.output;
  // Each side's device moved the traffic: at least one packet a message.
  std::smatch counters;
  std::regex sent("uroce: uroce0: packets sent ([0-9]+) received ([0-9]+)");
  int sides = 0;
  for (auto it = std::sregex_iterator(run.output.begin(), run.output.end(), sent); it != std::sregex_iterator(); ++it) {
    EXPECT_GE(std::stoul((*it)[1]) + std::stoul((*it)[2]), 1000u) << run.output;
    ++sides;
  }
  EXPECT_EQ(sides, 2) << run.output;
}

const PerftestCase kCases[] = {
    {0, "RcTagBw", "rc_verbs,ud_verbs", "tag_bw -n 10000"},
    {1, "RcTagBwRendezvous", "rc_verbs,ud_verbs", "tag_bw -s 1048576 -n 200"},
    {2, "RcTagLat", "rc_verbs,ud_verbs", "tag_lat -n 10000"},
    {3, "RcPutBw", "rc_verbs,ud_verbs", "ucp_put_bw -s 65536 -n 2000"},
    {4, "UdTagBw", "ud_verbs", "tag_bw -n 10000"},
    {5, "UdTagBwRendezvous", "ud_verbs", "tag_bw -s 1048576 -n 200"},
    {6, "UdTagLat", "ud_verbs", "tag_lat -n 10000"},
    {7, "UdPutBw", "ud_verbs", "ucp_put_bw -s 65536 -n 2000"},
};

INSTANTIATE_TEST_SUITE_P(Transports, UcxPerftest, ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<PerftestCase, bool>>& param_info) {
                           return std::get<0>(param_info.param).name + (std::get<1>(param_info.param) ? "Wire" : "SharedMemory");
                         });

}  // namespace
}  // namespace uroce
