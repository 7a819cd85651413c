// `uroce perf` as a user runs it: a server process and a client process over
// loopback addresses, perftest's table on both sides, --verify, and clear
// errors (exit 1) or usage errors (exit 2), for all eight tests, several QPs,
// -D and both progress modes. Each test runs in a network namespace of its
// own (tests/support/isolated.sh).
#include <gtest/gtest.h>

#include <future>
#include <regex>
#include <string>

#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::RunResult;

RunResult run(const std::string& arguments) { return testing::run_uroce(arguments); }

// Runs server and client as two processes; returns {server, client}.
std::pair<RunResult, RunResult> run_pair(const std::string& test, const std::string& server_address,
                                         const std::string& client_address, int tcp_port, const std::string& flags) {
  std::string common = test + " -p " + std::to_string(tcp_port) + " --timeout 20 " + flags;
  auto server = std::async(std::launch::async, [&] { return run("perf " + common + " --bind " + server_address); });
  RunResult client = run("perf " + common + " --bind " + client_address + " " + server_address);
  return {server.get(), client};
}

constexpr const char* kHeader = "#bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";

TEST(PerfCli, WriteBandwidthWithVerification) {
  auto [server, client] = run_pair("write_bw", "127.0.2.2", "127.0.2.3", 19101, "-s 65536 -n 300 --verify");
  EXPECT_EQ(client.exit_code, 0) << client.output;
  EXPECT_EQ(server.exit_code, 0) << server.output;
  EXPECT_NE(client.output.find(kHeader), std::string::npos) << client.output;
  EXPECT_NE(client.output.find(" 65536      300 "), std::string::npos) << client.output;
  EXPECT_NE(server.output.find(" 65536      300 "), std::string::npos) << server.output;  // the client's row
  EXPECT_NE(client.output.find("RDMA_Write BW Test"), std::string::npos);
}

TEST(PerfCli, ReadBandwidthSweepWithVerificationInGbits) {
  auto [server, client] =
      run_pair("read_bw", "127.0.2.4", "127.0.2.5", 19102, "-a -n 20 -m 1024 --verify --report_gbits");
  EXPECT_EQ(client.exit_code, 0) << client.output;
  EXPECT_EQ(server.exit_code, 0) << server.output;
  EXPECT_NE(client.output.find("BW average[Gb/sec]"), std::string::npos) << client.output;
  EXPECT_NE(client.output.find(" 2          20 "), std::string::npos) << client.output;
  EXPECT_NE(client.output.find(" 8388608    20 "), std::string::npos) << client.output;
  EXPECT_NE(client.output.find("Mtu             : 1024[B]"), std::string::npos);
}

constexpr const char* kLatencyHeader =
    "#bytes     #iterations    t_min[usec]    t_max[usec]    t_typical[usec]  t_avg[usec]    t_stdev[usec]   "
    "99% percentile[usec]    99.9% percentile[usec]";

// Every latency test, verified: WRITE and SEND ping-pongs check each pong's
// bytes on both sides, READs each result, atomics each value fetched.
TEST(PerfCli, LatencyTestsWithVerification) {
  int port = 19104;
  for (const char* test : {"write_lat", "read_lat", "send_lat", "atomic_lat"}) {
    auto [server, client] = run_pair(test, "127.0.2.9", "127.0.2.10", port++, "-n 200 --verify");
    EXPECT_EQ(client.exit_code, 0) << test << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << test << "\n" << server.output;
    EXPECT_NE(client.output.find(kLatencyHeader), std::string::npos) << client.output;
    std::string size = std::string(test) == "atomic_lat" ? " 8          200 " : " 2          200 ";
    EXPECT_NE(client.output.find(size), std::string::npos) << client.output;
    EXPECT_NE(server.output.find(size), std::string::npos) << server.output;
  }
}

TEST(PerfCli, LatencySweepOfWrites) {
  auto [server, client] = run_pair("write_lat", "127.0.2.11", "127.0.2.12", 19108, "-a -n 20 -m 1024 --verify");
  EXPECT_EQ(client.exit_code, 0) << client.output;
  EXPECT_EQ(server.exit_code, 0) << server.output;
  EXPECT_NE(client.output.find(" 8388608    20 "), std::string::npos) << client.output;
}

// Unverified, a WRITE ping-pong answers a pong as soon as it lands and takes
// its send completions while waiting for the next: over enough iterations
// to fill the CQ many times over, none is left behind (a CQ overflow fails
// the run with ENOBUFS from poll_cq), on the wire and on the intra-host path.
TEST(PerfCli, UnverifiedWriteLatencyKeepsItsCqDrained) {
  int port = 19151;
  for (const char* path : {"", "--local"}) {
    auto [server, client] = run_pair("write_lat", "127.0.2.44", "127.0.2.45", port++, std::string("-n 20000 ") + path);
    EXPECT_EQ(client.exit_code, 0) << path << "\n" << client.output;
    EXPECT_EQ(server.exit_code, 0) << path << "\n" << server.output;
    EXPECT_NE(client.output.find(" 2          20000 "), std::string::npos) << client.output;
  }
}

// SEND bandwidth over two QPs: the server counts every message and checks its bytes.
TEST(PerfCli, SendBandwidthOnTwoQpsWithVerification) {
  auto [server, client] = run_pair("send_bw", "127.0.2.13", "127.0.2.14", 19109, "-s 3000 -n 500 -q 2 --verify");
  EXPECT_EQ(client.exit_code, 0) << client.output;
  EXPECT_EQ(server.exit_code, 0) << server.output;
  EXPECT_NE(client.output.find(kHeader), std::string::npos) << client.output;
  EXPECT_NE(client.output.find(" 3000       500 "), std::string::npos) << client.output;
  EXPECT_NE(client.output.find("Number of qps   : 2"), std::string::npos) << client.output;
}

// Atomics for a duration: the server's counters must add up to the
// completions the client counted.
TEST(PerfCli, AtomicBandwidthForADurationWithVerification) {
  auto [server, client] = run_pair("atomic_bw", "127.0.2.15", "127.0.2.16", 19110, "-D 1 -q 3 --verify");
  EXPECT_EQ(client.exit_code, 0) << client.output;
  EXPECT_EQ(server.exit_code, 0) << server.output;
  EXPECT_NE(client.output.find(" 8          "), std::string::npos) << client.output;
}

TEST(PerfCli, WriteBandwidthWithAProgressThreadOnBothSides) {
  auto [server, client] =
      run_pair("write_bw", "127.0.2.17", "127.0.2.18", 19111, "-s 100000 -n 200 --verify --progress-thread");
  EXPECT_EQ(client.exit_code, 0) << client.output;
  EXPECT_EQ(server.exit_code, 0) << server.output;
  EXPECT_NE(client.output.find(" 100000     200 "), std::string::npos) << client.output;
}

// The server process is killed (SIGKILL) while the client streams WRITEs: the
// client's work requests fail after the retry budget and it exits 1 with the
// reason, instead of hanging.
TEST(PerfCli, ServerKilledMidTransferIsAClearErrorNotAHang) {
  auto server = std::async(std::launch::async, [] {
    return testing::run_shell("timeout -s KILL 1.5 " + testing::uroce_binary() +
                              " perf write_bw --bind 127.0.2.19 -p 19112 --timeout 20");
  });
  RunResult client = run("perf write_bw --bind 127.0.2.20 -p 19112 --timeout 20 -n 100000000 127.0.2.19");
  server.get();
  EXPECT_EQ(client.exit_code, 1) << client.output;
  EXPECT_NE(client.output.find("failed: "), std::string::npos) << client.output;
}

// The intra-host path between two processes: every byte of every verb
// checked, as on the wire.
TEST(PerfCli, EveryVerbVerifiedOverTheIntraHostPath) {
  int port = 19140;
  int host = 30;
  const std::pair<const char*, const char*> runs[] = {
      {"write_bw", "-s 100000 -n 300"}, {"read_bw", "-s 100000 -n 300"}, {"send_bw", "-s 5000 -n 1000"},
      {"atomic_bw", "-n 1000"},         {"write_lat", "-n 500"},         {"read_lat", "-n 500"}};
  for (auto [test, flags] : runs) {
    SCOPED_TRACE(test);
    std::string server_address = "127.0.2." + std::to_string(host++);
    std::string client_address = "127.0.2." + std::to_string(host++);
    auto [server, client] =
        run_pair(test, server_address, client_address, port++, std::string(flags) + " --verify --local");
    EXPECT_EQ(client.exit_code, 0) << client.output;
    EXPECT_EQ(server.exit_code, 0) << server.output;
    EXPECT_NE(client.output.find("verified: every byte"), std::string::npos) << client.output;
    EXPECT_EQ(client.output.find("through shared memory: 0 "), std::string::npos) << client.output;
    EXPECT_NE(client.output.find("through shared memory: "), std::string::npos) << client.output;
  }
}

// Shared regions (--shared-mr): every size of every bandwidth verb checked,
// and those above the MTU sent as one packet naming their bytes.
TEST(PerfCli, EveryBandwidthVerbVerifiedFromSharedRegions) {
  int port = 19160;
  int host = 50;
  for (const char* test : {"write_bw", "read_bw", "send_bw"}) {
    SCOPED_TRACE(test);
    std::string server_address = "127.0.2." + std::to_string(host++);
    std::string client_address = "127.0.2." + std::to_string(host++);
    auto [server, client] = run_pair(test, server_address, client_address, port++, "-a -n 20 --verify --local --shared-mr");
    EXPECT_EQ(client.exit_code, 0) << client.output;
    EXPECT_EQ(server.exit_code, 0) << server.output;
    EXPECT_NE(client.output.find("verified: every byte"), std::string::npos) << client.output;
    // Sizes 8 KiB to 8 MiB, 20 iterations each, are above the 4 KiB MTU:
    // 220 messages (READ: responses received), but for any sent before
    // the client heard from the server through shared memory.
    std::smatch named;
    ASSERT_TRUE(std::regex_search(client.output, named, std::regex(R"(naming their bytes \(--shared-mr\): (\d+) sent, (\d+) received)")))
        << client.output;
    int by_reference = std::stoi(named[std::string(test) == "read_bw" ? 2 : 1]);
    std::smatch resent;  // a loaded sanitizer build may time out and send one again
    ASSERT_TRUE(std::regex_search(client.output, resent, std::regex(R"(retransmitted (\d+))"))) << client.output;
    EXPECT_GT(by_reference, 200) << client.output;
    EXPECT_LE(by_reference, 220 + std::stoi(resent[1])) << client.output;
  }
}

// A server killed on the intra-host path leaves its inbox behind, full and
// never read: the client's work requests still fail within the retry budget.
TEST(PerfCli, ServerKilledOnTheIntraHostPathIsAClearErrorNotAHang) {
  auto server = std::async(std::launch::async, [] {
    return testing::run_shell("timeout -s KILL 1.5 " + testing::uroce_binary() +
                              " perf write_bw --local --bind 127.0.2.42 -p 19150 --timeout 20");
  });
  RunResult client =
      run("perf write_bw --local --bind 127.0.2.43 -p 19150 --timeout 20 -n 100000000 127.0.2.42");
  server.get();
  EXPECT_EQ(client.exit_code, 1) << client.output;
  EXPECT_NE(client.output.find("failed: "), std::string::npos) << client.output;
}

TEST(PerfCli, NoServerIsAClearErrorNotAHang) {
  RunResult client = run("perf write_bw --bind 127.0.2.6 -p 19103 --timeout 1 127.0.2.7");
  EXPECT_EQ(client.exit_code, 1);
  EXPECT_NE(client.output.find("connecting to the server"), std::string::npos) << client.output;
}

TEST(PerfCli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run("perf write_lat_nonexistent --bind 127.0.2.8").exit_code, 2);
  EXPECT_EQ(run("perf write_bw").exit_code, 2);  // --bind is required
  EXPECT_EQ(run("perf write_bw --bind 127.0.2.8 -m 1000").exit_code, 2);
  EXPECT_EQ(run("perf write_lat --bind 127.0.2.8 -q 2").exit_code, 2);  // latency tests use one QP
  EXPECT_EQ(run("perf write_bw --bind 127.0.2.8 -n 10 -D 1").exit_code, 2);
  EXPECT_EQ(run("perf write_bw --bind 127.0.2.8 --shared-mr").exit_code, 2);  // needs --local
  RunResult bad_address = run("perf write_bw --bind nowhere --timeout 1");
  EXPECT_EQ(bad_address.exit_code, 1);
  EXPECT_NE(bad_address.output.find("nowhere"), std::string::npos) << bad_address.output;
}

}  // namespace
}  // namespace uroce
