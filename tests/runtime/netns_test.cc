// uroce between two network namespaces joined by a veth pair, which the test
// creates and removes: `uroce perf` server and client as two processes, each
// in its own namespace, with every byte verified; then with nftables in both
// namespaces dropping a random 5% of UDP 4791 packets (numgen random), where
// transfers must still complete, verified, and the counters show the
// recovery (and selective repeat resends far less than go-back-N). The same
// tests between raw Ethernet ports, and between a raw port and a UDP port.
// And one process whose devices were opened in the two namespaces by
// threads that entered them, then driven from a thread in neither: every
// socket a device opens later must still be in its own namespace.
// Needs root, iproute2 and nftables; skipped without them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "port/port.h"
#include "tests/support/run_command.h"
#include "tests/support/test_network.h"
#include "tests/support/veth_pair.h"
#include "uroce/device.h"

namespace uroce {
namespace {

using testing::RunResult;
using testing::run_shell;

class TwoNamespaces : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = testing::VethPair::unavailable()) GTEST_SKIP() << *reason;
    pair_ = std::make_unique<testing::VethPair>("10.79.0");
    ASSERT_EQ(pair_->error(), "");
  }

  // Drops a random share of the UDP 4791 packets arriving in a namespace.
  void drop_randomly(const testing::VethPair::Side& side, int percent) {
    std::string why = pair_->drop_arriving(side, percent);
    if (why == "nftables is not installed") GTEST_SKIP() << why;
    ASSERT_EQ(why, "");
  }

  // Runs `uroce perf` as server (10.79.0.1) and client (10.79.0.2), each
  // with its own extra flags (--interface for the raw port); returns {server, client}.
  std::pair<RunResult, RunResult> perf(const std::string& test, const std::string& flags,
                                       const std::string& server_flags = "", const std::string& client_flags = "") {
    std::string common = " perf " + test + " -p 19201 --timeout 30 " + flags;
    const testing::VethPair::Side& s = pair_->server();
    const testing::VethPair::Side& c = pair_->client();
    auto server = std::async(std::launch::async, [&] {
      return run_shell("ip netns exec " + s.ns + " " + testing::uroce_binary() + common + " --bind " + s.address + " " +
                       server_flags);
    });
    RunResult client = run_shell("ip netns exec " + c.ns + " " + testing::uroce_binary() + common + " --bind " +
                                 c.address + " " + client_flags + " " + s.address);
    return {server.get(), client};
  }

  static std::uint64_t retransmitted(const std::string& output) {
    std::smatch match;
    if (!std::regex_search(output, match, std::regex("retransmitted (\\d+)"))) return 0;
    return std::stoull(match[1]);
  }

  std::unique_ptr<testing::VethPair> pair_;
};

TEST_F(TwoNamespaces, EveryTestVerifiedAcrossAVethPair) {
  for (const char* test : {"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "send_lat"}) {
    auto [server, client] = perf(test, "-n 200 --verify");
    EXPECT_EQ(client.exit_code, 0) << test << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << test << "\n" << server.output;
    EXPECT_NE(client.output.find("ICRC errors 0"), std::string::npos) << client.output;
  }
}

// Raw Ethernet ports on both ends of the veth: whole frames, every ICRC
// verified; the kernel, which also holds both addresses, stays silent (no
// ICMP port-unreachable for the RoCE packets it sees).
TEST_F(TwoNamespaces, EveryTestVerifiedBetweenRawPorts) {
  std::string server_raw = "--interface " + pair_->server().interface;
  std::string client_raw = "--interface " + pair_->client().interface;
  for (const char* test : {"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat"}) {
    auto [server, client] = perf(test, "-n 200 --verify", server_raw, client_raw);
    EXPECT_EQ(client.exit_code, 0) << test << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << test << "\n" << server.output;
    EXPECT_NE(client.output.find("ICRC errors 0"), std::string::npos) << client.output;
  }
  for (const std::string& ns : {pair_->server().ns, pair_->client().ns}) {
    RunResult icmp = run_shell("ip netns exec " + ns + " nstat -az IcmpOutDestUnreachs");
    EXPECT_NE(icmp.output.find("IcmpOutDestUnreachs"), std::string::npos) << icmp.output;
    EXPECT_TRUE(std::regex_search(icmp.output, std::regex("IcmpOutDestUnreachs +0 "))) << icmp.output;
  }
}

// A raw port and a UDP port speak the same wire format, either way round.
TEST_F(TwoNamespaces, RawPortAndUdpPortInteroperate) {
  std::string server_raw = "--interface " + pair_->server().interface;
  std::string client_raw = "--interface " + pair_->client().interface;
  for (const char* test : {"write_bw", "read_bw", "send_lat"}) {
    auto [server, client] = perf(test, "-n 200 --verify", server_raw, "");
    EXPECT_EQ(client.exit_code, 0) << test << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << test << "\n" << server.output;
    auto [server2, client2] = perf(test, "-n 200 --verify", "", client_raw);
    EXPECT_EQ(client2.exit_code, 0) << test << "\n" << client2.output;
    EXPECT_EQ(server2.exit_code, 0) << test << "\n" << server2.output;
  }
}

TEST_F(TwoNamespaces, RandomLossIsRecoveredWithEveryByteVerified) {
  drop_randomly(pair_->server(), 5);
  drop_randomly(pair_->client(), 5);
  for (const char* test : {"write_bw", "read_bw", "send_bw"}) {
    auto [server, client] = perf(test, "-s 65536 -n 100 --verify");
    EXPECT_EQ(client.exit_code, 0) << test << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << test << "\n" << server.output;
    EXPECT_GT(retransmitted(client.output), 0u) << client.output;
  }
}

// The same lossy path with selective repeat: only what was lost is sent again.
TEST_F(TwoNamespaces, SelectiveRepeatResendsFarLessUnderTheSameLoss) {
  drop_randomly(pair_->server(), 5);
  drop_randomly(pair_->client(), 5);
  auto [gbn_server, go_back_n] = perf("write_bw", "-s 65536 -n 100 --verify");
  auto [sr_server, selective] = perf("write_bw", "-s 65536 -n 100 --verify --selective-repeat");
  ASSERT_EQ(go_back_n.exit_code, 0) << go_back_n.output;
  ASSERT_EQ(selective.exit_code, 0) << selective.output;
  EXPECT_GT(retransmitted(selective.output), 0u);
  EXPECT_LT(retransmitted(selective.output) * 5, retransmitted(go_back_n.output))
      << go_back_n.output << "\n" << selective.output;
}

// Multipath on a real wire: nftables in the server's namespace drops every
// request whose UDP source port is a multiple of 4, as a failed link
// drops what ECMP hashes into it. A QP spraying over 16 EVs loses the
// packets of 4 of them, retires those EVs (and no other) and finishes,
// every byte verified, with no timeout; each packet it resent is one it
// found lost; the server placed the packets behind each gap on arrival.
TEST_F(TwoNamespaces, MultipathRetiresTheEvsOfADeadPathOnARealWire) {
  if (run_shell("command -v nft").exit_code != 0) GTEST_SKIP() << "nftables is not installed";
  std::string rules =
      "table inet uroce_paths {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
      "  udp dport 4791 udp sport >= 49152 udp sport & 3 == 0 drop\n }\n}\n";
  RunResult filter = run_shell("printf '" + rules + "' | ip netns exec " + pair_->server().ns + " nft -f -");
  ASSERT_EQ(filter.exit_code, 0) << filter.output;
  auto [server, client] = perf("write_bw", "-s 65536 -n 200 --verify --selective-repeat --multipath 16");
  ASSERT_EQ(client.exit_code, 0) << client.output;
  ASSERT_EQ(server.exit_code, 0) << server.output;
  // Only the 4 dead EVs are ever retired: once at first, again after each
  // lost probe; none comes back.
  std::smatch match;
  ASSERT_TRUE(std::regex_search(client.output, match,
                                std::regex("lost (\\d+), EVs retired (\\d+), probes (\\d+), restored (\\d+)")))
      << client.output;
  EXPECT_EQ(std::stoull(match[2]), 4 + std::stoull(match[3])) << client.output;
  EXPECT_EQ(std::stoull(match[4]), 0u) << client.output;
  EXPECT_EQ(std::stoull(match[1]), retransmitted(client.output)) << client.output;
  EXPECT_NE(client.output.find("timeouts 0"), std::string::npos) << client.output;
  EXPECT_GT(retransmitted(client.output), 0u);
  // Direct placement on the wire: the packets behind each lost one went to
  // memory as they came, and --verify found every byte right.
  ASSERT_TRUE(std::regex_search(server.output, match, std::regex("held out of order (\\d+), placed on arrival (\\d+)")))
      << server.output;
  EXPECT_GT(std::stoull(match[2]), 0u) << server.output;
}

// A device's sockets for new UDP source ports open on first use. Opened from
// the thread that sends, they landed in that thread's namespace, could not
// bind the device's address, and every datagram was a send error (2048 of
// them here, and RETRY_EXC_ERR). The intra-host path likewise named a
// device's inbox after the process's first thread's namespace, not the
// device's: two namespaces must never meet through shared memory.
TEST_F(TwoNamespaces, ADeviceOpenedInANamespaceWorksFromAThreadElsewhere) {
  std::vector<std::uint8_t> source(256 << 10), target(256 << 10, 0);
  auto open_in = [](const testing::VethPair::Side& side) {
    return testing::in_namespace(side.ns, [&]() -> std::unique_ptr<Device> {
      DeviceConfig config;
      config.address = side.address;
      config.progress_thread = false;  // this test's thread, in neither namespace, drives both
      auto device = Device::open(config);
      if (!device) ADD_FAILURE() << device.error();
      return device ? std::move(*device) : nullptr;
    });
  };
  std::unique_ptr<Device> a = open_in(pair_->client());
  std::unique_ptr<Device> b = open_in(pair_->server());
  ASSERT_TRUE(a && b);
  Engine& engine_a = *a->call_and_wake([](Engine& e) { return &e; });
  Engine& engine_b = *b->call_and_wake([](Engine& e) { return &e; });
  auto [sender, receiver] = testing::connect_rc(engine_a, engine_b);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i * 13 + 5);
  MrKeys s = *engine_a.reg_mr(sender.pd, source.data(), source.size(), kAccessLocalWrite);
  MrKeys t = *engine_b.reg_mr(receiver.pd, target.data(), target.size(), kAccessLocalWrite | kAccessRemoteWrite);
  Sge sge{reinterpret_cast<std::uintptr_t>(source.data()), static_cast<std::uint32_t>(source.size()), s.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data()), t.rkey};
  ASSERT_EQ(engine_a.post_send(sender.qpn, wr), std::errc{});
  std::vector<WorkCompletion> completions(4);
  std::size_t found = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (found == 0 && std::chrono::steady_clock::now() < deadline) {
    a->progress();
    b->progress();
    auto polled = engine_a.poll_cq(sender.cq, completions);
    ASSERT_TRUE(polled.has_value());
    found = *polled;
  }
  ASSERT_EQ(found, 1u) << "no completion in 10 s";
  EXPECT_EQ(completions[0].status, WcStatus::success) << to_string(completions[0].status);
  EXPECT_EQ(target, source);
  EXPECT_EQ(a->port_counters().send_errors, 0u);
  EXPECT_EQ(a->port_counters().local_sends, 0u);  // two namespaces: two hosts, never shared memory
  EXPECT_EQ(b->port_counters().local_receives, 0u);
}

}  // namespace
}  // namespace uroce
