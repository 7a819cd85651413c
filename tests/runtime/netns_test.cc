// uroce between two network namespaces joined by a veth pair, which the test
// creates and removes: `uroce perf` server and client as two processes, each
// in its own namespace, with every byte verified; then with nftables in both
// namespaces dropping a random 5% of UDP 4791 packets (numgen random), where
// transfers must still complete, verified, and the counters show the
// recovery (and selective repeat resends far less than go-back-N). Needs root, iproute2 and nftables; skipped without them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <future>
#include <regex>
#include <string>

#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::RunResult;
using testing::run_shell;

class TwoNamespaces : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
    if (run_shell("command -v ip").exit_code != 0) GTEST_SKIP() << "iproute2 is not installed";
    std::string suffix = std::to_string(::getpid()) + "_" + std::to_string(next_id_++);
    server_ns_ = "uroce_s" + suffix;
    client_ns_ = "uroce_c" + suffix;
    std::string server_if = "us" + suffix, client_if = "uc" + suffix;
    server_if.resize(std::min<std::size_t>(server_if.size(), 15));
    client_if.resize(std::min<std::size_t>(client_if.size(), 15));
    created_ = true;
    for (const std::string& command : {
             "ip netns add " + server_ns_,
             "ip netns add " + client_ns_,
             "ip link add " + server_if + " netns " + server_ns_ + " type veth peer name " + client_if + " netns " +
                 client_ns_,
             "ip -n " + server_ns_ + " addr add 10.79.0.1/24 dev " + server_if,
             "ip -n " + client_ns_ + " addr add 10.79.0.2/24 dev " + client_if,
             "ip -n " + server_ns_ + " link set " + server_if + " up",
             "ip -n " + client_ns_ + " link set " + client_if + " up",
             "ip -n " + server_ns_ + " link set lo up",
             "ip -n " + client_ns_ + " link set lo up",
         }) {
      RunResult result = run_shell(command);
      ASSERT_EQ(result.exit_code, 0) << command << ": " << result.output;
    }
  }

  void TearDown() override {
    if (!created_) return;
    run_shell("ip netns del " + server_ns_);  // takes the veth pair with it
    run_shell("ip netns del " + client_ns_);
  }

  // Drops a random share of the UDP 4791 packets arriving in a namespace.
  void drop_randomly(const std::string& ns, int percent) {
    if (run_shell("command -v nft").exit_code != 0) GTEST_SKIP() << "nftables is not installed";
    std::string rules = "table inet uroce_loss {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
                        "  udp dport 4791 numgen random mod 100 < " +
                        std::to_string(percent) + " drop\n }\n}\n";
    RunResult result = run_shell("printf '" + rules + "' | ip netns exec " + ns + " nft -f -");
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }

  // Runs `uroce perf` as server (10.79.0.1) and client (10.79.0.2); returns {server, client}.
  std::pair<RunResult, RunResult> perf(const std::string& test, const std::string& flags) {
    std::string common = " perf " + test + " -p 19201 --timeout 30 -m 1024 " + flags;  // veth MTU 1500: path MTU 1024
    auto server = std::async(std::launch::async, [&] {
      return run_shell("ip netns exec " + server_ns_ + " " + testing::uroce_binary() + common + " --bind 10.79.0.1");
    });
    RunResult client =
        run_shell("ip netns exec " + client_ns_ + " " + testing::uroce_binary() + common + " --bind 10.79.0.2 10.79.0.1");
    return {server.get(), client};
  }

  static std::uint64_t retransmitted(const std::string& output) {
    std::smatch match;
    if (!std::regex_search(output, match, std::regex("retransmitted (\\d+)"))) return 0;
    return std::stoull(match[1]);
  }

  std::string server_ns_, client_ns_;
  bool created_ = false;
  static inline int next_id_ = 0;
};

TEST_F(TwoNamespaces, EveryTestVerifiedAcrossAVethPair) {
  for (const char* test : {"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "send_lat"}) {
    auto [server, client] = perf(test, "-n 200 --verify");
    EXPECT_EQ(client.exit_code, 0) << test << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << test << "\n" << server.output;
    EXPECT_NE(client.output.find("ICRC errors 0"), std::string::npos) << client.output;
  }
}

TEST_F(TwoNamespaces, RandomLossIsRecoveredWithEveryByteVerified) {
  drop_randomly(server_ns_, 5);
  drop_randomly(client_ns_, 5);
  for (const char* test : {"write_bw", "read_bw", "send_bw"}) {
    auto [server, client] = perf(test, "-s 65536 -n 100 --verify");
    EXPECT_EQ(client.exit_code, 0) << test << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << test << "\n" << server.output;
    EXPECT_GT(retransmitted(client.output), 0u) << client.output;
  }
}

// The same lossy path with selective repeat: only what was lost is sent again.
TEST_F(TwoNamespaces, SelectiveRepeatResendsFarLessUnderTheSameLoss) {
  drop_randomly(server_ns_, 5);
  drop_randomly(client_ns_, 5);
  auto [gbn_server, go_back_n] = perf("write_bw", "-s 65536 -n 100 --verify");
  auto [sr_server, selective] = perf("write_bw", "-s 65536 -n 100 --verify --selective-repeat");
  ASSERT_EQ(go_back_n.exit_code, 0) << go_back_n.output;
  ASSERT_EQ(selective.exit_code, 0) << selective.output;
  EXPECT_GT(retransmitted(selective.output), 0u);
  EXPECT_LT(retransmitted(selective.output) * 5, retransmitted(go_back_n.output))
      << go_back_n.output << "\n" << selective.output;
}

}  // namespace
}  // namespace uroce
