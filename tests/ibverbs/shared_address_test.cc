// Two unmodified programs on one device address, as processes share a NIC's
// GIDs on a RoCE host: the second device to open an address that a live
// uroce device holds takes a member's inbox beside it (runtime/port_opening.cc)
// and draws its QPNs from a sixteenth of its own, so that each datagram
// reaches the member its destination QPN names, and the CM's MADs reach
// every member (port/local_port.h). The oracles are the programs: the
// pingpongs on GID 0 and GID 1 (RC, UD), perftest, and rping through
// rdma_cm. From another host (a second network namespace over a veth pair)
// every member is reached too: the holder of the address's socket forwards
// what is for another member's QPN into its inbox, and QP 1's to all. With
// the intra-host path off, the second device cannot share and says why.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/support/program_environment.h"
#include "tests/support/program_pair.h"
#include "tests/support/run_command.h"
#include "tests/support/veth_pair.h"

namespace uroce {
namespace {

using testing::installed;

// ctest runs each test in a network namespace of its own (tests/support/isolated.sh).
const std::string kAddress = "127.0.0.1";

std::string on_the_address(const std::string& command, bool wire = false) {
  return "env LD_LIBRARY_PATH=" + std::string(UROCE_IBVERBS_DIR) + " " + testing::sanitizer_environment() +
         "UROCE_ADDRESS=" + kAddress + (wire ? " UROCE_WIRE=1" : "") + " timeout 60 stdbuf -oL " + command;
}

testing::PairResult run_on_one_address(const std::string& server, const std::string& client) {
  // The client finds no server yet: the pingpongs and perftest cannot
  // connect their TCP exchange, rping's REQ is rejected.
  return testing::run_program_pair(on_the_address(server), on_the_address(client),
                                   "Couldn't connect to\\|Unable to connect\\|REJECTED");
}

struct SharedCase {
  std::string name;
  std::string server;
  std::string client;
  std::string expected;  // in the client's output
};

void PrintTo(const SharedCase& test, std::ostream* out) { *out << test.name; }

class SharedAddress : public ::testing::TestWithParam<SharedCase> {};

TEST_P(SharedAddress, TwoProcessesOnOneAddressTalk) {
  const SharedCase& test = GetParam();
  std::string program = test.server.substr(0, test.server.find(' '));
  if (!installed(program)) GTEST_SKIP() << program << " is not installed";
  testing::PairResult pair = run_on_one_address(test.server, test.client);
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  std::size_t split = pair.output.find("@@");
  ASSERT_NE(split, std::string::npos) << pair.output;
  EXPECT_NE(pair.output.substr(split).find(test.expected), std::string::npos) << pair.output;
}

INSTANTIATE_TEST_SUITE_P(
    Programs, SharedAddress,
    ::testing::Values(
        SharedCase{"RcPingpongOnGid0", "ibv_rc_pingpong -g 0 -n 100 -c -p 18601",
                   "ibv_rc_pingpong -g 0 -n 100 -c -p 18601 127.0.0.1", "100 iters in"},
        SharedCase{"UdPingpongOnGid1", "ibv_ud_pingpong -g 1 -n 100 -p 18602",
                   "ibv_ud_pingpong -g 1 -n 100 -p 18602 127.0.0.1", "100 iters in"},
        SharedCase{"WriteBandwidth", "ib_write_bw -s 65536 -n 200 -p 18603", "ib_write_bw -s 65536 -n 200 -p 18603 127.0.0.1",
                   "65536      200"},
        SharedCase{"RpingThroughRdmaCm", "rping -s -a 127.0.0.1 -p 18604 -v -C 5",
                   "rping -c -a 127.0.0.1 -p 18604 -v -C 5", "ping data: rdma-ping-4"}),
    [](const ::testing::TestParamInfo<SharedCase>& param_info) { return param_info.param.name; });

// Without the intra-host path a device has nothing to receive through but
// the address's socket, which the first holds: the second's first PD fails,
// and uroce says why.
TEST(SharedAddressOnTheWire, IsRefusedWithAClearError) {
  if (!installed("ibv_rc_pingpong")) GTEST_SKIP() << "ibverbs-utils is not installed";
  testing::PairResult pair =
      testing::run_program_pair(on_the_address("ibv_rc_pingpong -g 1 -n 100 -p 18605"),
                                // The server's device is open once it listens.
                                // The client's own exit status is kept; the server, left waiting, is ended.
                                "( for i in $(seq 100); do ss -ltn | grep -q \":18605 \" && break; sleep 0.1; done; " +
                                    on_the_address("ibv_rc_pingpong -g 1 -n 100 -p 18605 127.0.0.1", /*wire=*/true) +
                                    "; status=$?; pkill -f '^ibv_rc_pingpong -g 1 -n 100 -p 18605$'; exit $status )",
                                "Couldn't connect to");
  EXPECT_EQ(pair.client_exit, 1) << pair.output;  // the pingpong's own failure, not the timeout's 124
  EXPECT_NE(pair.output.find("Couldn't allocate PD"), std::string::npos) << pair.output;
  EXPECT_NE(pair.output.find("cannot bind 127.0.0.1 port 4791: bind: Address already in use"), std::string::npos)
      << pair.output;
}

// In the server's namespace a pingpong server holds the address and a
// second server of each kind shares it; the clients run in the client's
// namespace, as on another host. Each line of the script's output is one
// client's exit status and name.
TEST(SharedAddressFromAnotherHost, EveryMemberIsReached) {
  if (auto why = testing::VethPair::unavailable()) GTEST_SKIP() << *why;
  if (!installed("ibv_rc_pingpong") || !installed("rping")) GTEST_SKIP() << "ibverbs-utils or rdmacm-utils is not installed";
  testing::VethPair veth("10.79.30");
  ASSERT_EQ(veth.error(), "");
  const std::string address = veth.server().address;
  auto on = [&](const testing::VethPair::Side& side, const std::string& command) {
    return "ip netns exec " + side.ns + " env LD_LIBRARY_PATH=" + std::string(UROCE_IBVERBS_DIR) + " " +
           testing::sanitizer_environment() + "UROCE_ADDRESS=" + side.address + " timeout 60 " + command;
  };
  auto listening = [&](int port) {
    return "for i in $(seq 300); do ip netns exec " + veth.server().ns + " ss -ltn | grep -q ':" +
           std::to_string(port) + " ' && break; sleep 0.1; done; ";
  };
  std::string script =
      "dir=$(mktemp -d); " +
      on(veth.server(), "ibv_rc_pingpong -n 100 -c -p 18611") + " > $dir/holder 2>&1 & " + listening(18611) +
      on(veth.server(), "ibv_rc_pingpong -n 100 -c -p 18612") + " > $dir/rc 2>&1 & " + listening(18612) +
      on(veth.server(), "ibv_ud_pingpong -n 100 -p 18613") + " > $dir/ud 2>&1 & " + listening(18613) +
      on(veth.server(), "rping -s -a " + address + " -p 18614 -v -C 5") + " > $dir/rping 2>&1 & sleep 1; " +
      on(veth.client(), "ibv_rc_pingpong -n 100 -c -p 18612 " + address) + " > $dir/rc_client 2>&1; echo \"$? rc\"; " +
      on(veth.client(), "ibv_ud_pingpong -n 100 -p 18613 " + address) + " > $dir/ud_client 2>&1; echo \"$? ud\"; " +
      on(veth.client(), "rping -c -a " + address + " -p 18614 -v -C 5") + " > $dir/rping_client 2>&1; echo \"$? rping\"; " +
      on(veth.client(), "ibv_rc_pingpong -n 100 -c -p 18611 " + address) + " > $dir/holder_client 2>&1; echo \"$? holder\"; " +
      "wait; for f in $dir/*; do echo \"== $f\"; cat $f; done; rm -rf $dir";
  testing::RunResult run =
      testing::run_shell("bash -c '" + std::regex_replace(script, std::regex("'"), "'\\''") + "'");
  for (const char* client : {"rc", "ud", "rping", "holder"}) {
    EXPECT_NE(("\n" + run.output).find(std::string("\n0 ") + client + "\n"), std::string::npos) << client << ":\n"
                                                                                                 << run.output;
  }
  EXPECT_NE(run.output.find("ping data: rdma-ping-4"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace uroce
