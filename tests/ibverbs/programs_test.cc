// Unmodified RDMA programs on uroce's libibverbs: rdma-core's ibv_*_pingpong
// and perftest's ib_* run as a server and a client process, each with its
// own uroce device, over loopback addresses and between two network
// namespaces (UDP port and raw Ethernet port). Each must exit 0 on both sides
// and print its result; the pingpongs also run with -c, which checks every
// received byte. Sweeps (-a) cover 2 B to 8 MiB. Between the namespaces,
// rdmacm-utils' mckey also sends UD multicast over each port.
#include <gtest/gtest.h>

#include <ostream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "tests/support/program_environment.h"
#include "tests/support/run_command.h"
#include "tests/support/veth_pair.h"

namespace uroce {
namespace {

using testing::installed;
using testing::run_shell;
using testing::sanitizer_environment;

const std::string kLibraryDir = UROCE_IBVERBS_DIR;

// Sanitizer builds shorten the sweeps: the library is many times slower
// there. The sweeps run 200 iterations per size (perftest's default is 1000 to
// 5000): the suite's time goes to the 8 MiB end, and the two busy-polling
// processes of each pair share two cores with another test's pair.
std::string sweep_options() {
#if defined(__SANITIZE_ADDRESS__)
  return "-a -n 5";
#else
  return "-a -n 200";
#endif
}

// Where one side runs: a namespace (or none) and its uroce device.
struct Side {
  std::string ns;         // empty: this namespace
  std::string address;    // UROCE_ADDRESS
  std::string interface;  // UROCE_INTERFACE: the raw Ethernet port
  std::string progress = "";  // UROCE_PROGRESS, when not the default
  bool wire = false;          // UROCE_WIRE=1: no intra-host path
  bool shared = false;        // UROCE_SHARED_MR=1: long SENDs and WRITEs read from shared regions
  std::string environment = "";  // more variables, "NAME=value ..."
};

struct PairResult {
  int server_exit = -1;
  int client_exit = -1;
  std::string server_output;
  std::string client_output;  // standard output only
  std::string client_errors;  // standard error
};

std::string command_on(const Side& side, const std::string& command) {
  std::string prefix = side.ns.empty() ? "" : "ip netns exec " + side.ns + " ";
  std::string environment = "LD_LIBRARY_PATH=" + kLibraryDir + " " + sanitizer_environment() +
                            "UROCE_ADDRESS=" + side.address;
  if (!side.interface.empty()) environment += " UROCE_INTERFACE=" + side.interface;
  if (!side.progress.empty()) environment += " UROCE_PROGRESS=" + side.progress;
  if (side.wire) environment += " UROCE_WIRE=1";
  if (side.shared) environment += " UROCE_SHARED_MR=1";
  if (!side.environment.empty()) environment += " " + side.environment;
  environment += " UROCE_STATS=1";  // the counters on standard error: which path the packets took
  return prefix + "env " + environment + " timeout 600 " + command;
}

// Starts the server, waits until it listens on tcp_port, runs the client
// against server_host, and collects both exit statuses and outputs.
PairResult run_pair(const std::string& program, const std::string& options, const Side& server, const Side& client,
                    const std::string& server_host, int tcp_port) {
  std::string port = std::to_string(tcp_port);
  std::string listening = (server.ns.empty() ? "" : "ip netns exec " + server.ns + " ") + "ss -ltn";
  std::string script = "dir=$(mktemp -d); " + command_on(server, program + " -p " + port + " " + options) +
                       " > $dir/server 2>&1 & pid=$!; "
                       "for i in $(seq 300); do " + listening + " | grep -q ':" + port + " ' && break; sleep 0.1; done; " +
                       command_on(client, program + " -p " + port + " " + options + " " + server_host) +
                       " > $dir/client 2> $dir/client_errors; client=$?; wait $pid; server=$?; "
                       "echo \"$server $client\"; cat $dir/server; echo '@@client@@'; cat $dir/client; "
                       "echo '@@client errors@@'; cat $dir/client_errors; rm -rf $dir";
  testing::RunResult run = run_shell("bash -c '" + std::regex_replace(script, std::regex("'"), "'\\''") + "'");
  PairResult result;
  std::istringstream(run.output) >> result.server_exit >> result.client_exit;
  std::size_t first_line = run.output.find('\n');
  const std::string client_marker = "@@client@@\n";
  const std::string errors_marker = "@@client errors@@\n";
  std::size_t client_at = run.output.find(client_marker);
  std::size_t errors = run.output.find(errors_marker);
  if (first_line != std::string::npos && client_at != std::string::npos && errors != std::string::npos) {
    result.server_output = run.output.substr(first_line + 1, client_at - first_line - 1);
    std::size_t client_start = client_at + client_marker.size();
    result.client_output = run.output.substr(client_start, errors - client_start);
    result.client_errors = run.output.substr(errors + errors_marker.size());
  }
  return result;
}

// perftest's result rows: the message size first, then numbers only. Read
// from standard output alone: the latency tests measure the clock again for
// each size and may warn on standard error, and a warning written into a
// shared file between two flushes of standard output splits a row. When that
// measurement fails on a loaded machine ("Correlation coefficient r^2 < 0.9"),
// perftest divides by a clock rate of zero and the size's row reads inf or
// nan: the size still ran to the end, so the row counts.
int result_rows(const std::string& output) {
  static const std::regex row(R"(^\s*\d+\s+\d+\s+(?:[\d.]+|-?inf|-?nan)\s+(?:[\d.]+|-?inf|-?nan).*$)");
  int rows = 0;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, row)) ++rows;
  }
  return rows;
}

// The row of a size whose clock measurement failed: CI's loaded cores printed
// one like it, and the sweep had run every size.
TEST(PerftestRows, ASizeWhoseClockMeasurementFailedStillCounts) {
  const std::string output =
      " 2       200          0.95           9.87         1.02     \t1.10        0.40    \t2.31    \t9.87   \n"
      " 4       200          inf            inf          inf      \tinf         -nan    \tinf     \tinf    \n"
      "---------------------------------------------------------------------------------------\n";
  EXPECT_EQ(result_rows(output), 2);
  EXPECT_EQ(result_rows(" #bytes #iterations    t_min[usec]    t_max[usec]\n"), 0);
}

constexpr int kSweepSizes = 23;  // 2 B, 4 B ... 8 MiB

std::string describe(const PairResult& result) {
  return "server:\n" + result.server_output + "\nclient:\n" + result.client_output + "\nclient's standard error:\n" +
         result.client_errors;
}

void expect_both_succeed(const PairResult& result) {
  EXPECT_EQ(result.server_exit, 0) << describe(result);
  EXPECT_EQ(result.client_exit, 0) << describe(result);
}

void expect_pingpong(const PairResult& result) {
  expect_both_succeed(result);
  EXPECT_NE(result.client_output.find("1000 iters in"), std::string::npos) << result.client_output;
  EXPECT_NE(result.server_output.find("1000 iters in"), std::string::npos) << result.server_output;
}

void expect_perftest(const PairResult& result, int rows) {
  expect_both_succeed(result);
  EXPECT_EQ(result_rows(result.client_output), rows) << describe(result);
}

// Each test gets its own addresses and TCP port: ctest runs them in parallel.
Side loopback(int test, int side, const std::string& progress, bool wire, bool shared,
              const std::string& environment = "") {
  return {"", "127.0.8." + std::to_string(test * 2 + side + 1), "", progress, wire, shared, environment};
}

// What UROCE_STATS printed for the device: datagrams sent through the intra-host path.
std::optional<long> intra_host_sends(const std::string& errors) {
  static const std::regex sent(R"(intra-host sent (\d+))");
  std::smatch match;
  if (!std::regex_search(errors, match, sent)) return std::nullopt;
  return std::stol(match[1]);
}

// ... and messages sent and received as one extent packet each (by reference).
struct ExtentCounts {
  long sent = 0;
  long received = 0;
};
std::optional<ExtentCounts> extent_packets(const std::string& errors) {
  static const std::regex counts(R"(extent packets sent (\d+) received (\d+))");
  std::smatch match;
  if (!std::regex_search(errors, match, counts)) return std::nullopt;
  return ExtentCounts{std::stol(match[1]), std::stol(match[2])};
}
int tcp_port(int test) { return 19200 + test; }

struct ProgramCase {
  std::string program;
  std::string options;
  int rows;     // perftest result rows; 0 for a pingpong
  std::string progress = "";  // UROCE_PROGRESS; empty: the default (adaptive)
  bool wire = false;          // UROCE_WIRE=1 on both sides; by default they meet through shared memory
  bool shared = false;        // UROCE_SHARED_MR=1 on both sides
  // Messages longer than an MTU went by reference (the client's SENDs and
  // WRITEs, or the server's READ responses to it), or all by packets; or
  // either (not checked). On the wire, always by packets.
  enum class Long : std::uint8_t { unchecked, by_reference, by_packets } long_messages = Long::unchecked;
  std::string environment = "";  // more variables on both sides
  int id = 0;   // distinct addresses and TCP port per case
};

void PrintTo(const ProgramCase& run, std::ostream* out) {
  *out << run.program << " " << run.options << (run.progress.empty() ? "" : " with UROCE_PROGRESS=" + run.progress)
       << (run.wire ? " with UROCE_WIRE=1" : "") << (run.shared ? " with UROCE_SHARED_MR=1" : "")
       << (run.environment.empty() ? "" : " with " + run.environment);
}

class LoopbackPrograms : public ::testing::TestWithParam<ProgramCase> {};

TEST_P(LoopbackPrograms, RunUnchangedBetweenTwoProcesses) {
  const ProgramCase& run = GetParam();
  if (!installed(run.program)) GTEST_SKIP() << run.program << " is not installed";
  PairResult result =
      run_pair(run.program, run.options, loopback(run.id, 0, run.progress, run.wire, run.shared, run.environment),
               loopback(run.id, 1, run.progress, run.wire, run.shared, run.environment), "127.0.0.1",
               tcp_port(run.id));
  if (run.rows == 0) {
    expect_pingpong(result);
  } else {
    expect_perftest(result, run.rows);
  }
  // Two devices of one user on one host: shared memory, unless told otherwise.
  std::optional<long> local_sends = intra_host_sends(result.client_errors);
  ASSERT_TRUE(local_sends) << describe(result);
  if (run.wire) {
    EXPECT_EQ(*local_sends, 0) << describe(result);
  } else {
    EXPECT_GT(*local_sends, 0) << describe(result);
  }
  // Long messages: by reference, read by the peer from the sender's memory
  // (or its shared file); a READ test's by reference are the server's responses.
  std::optional<ExtentCounts> extents = extent_packets(result.client_errors);
  ASSERT_TRUE(extents) << describe(result);
  if (run.wire || run.long_messages == ProgramCase::Long::by_packets) {
    EXPECT_EQ(extents->sent + extents->received, 0) << describe(result);
  } else if (run.long_messages == ProgramCase::Long::by_reference) {
    bool reads = run.program.rfind("ib_read_", 0) == 0;
    EXPECT_GT(reads ? extents->received : extents->sent, 0) << describe(result);
  }
}

std::vector<ProgramCase> loopback_cases() {
  std::vector<ProgramCase> cases;
  for (const char* pingpong : {"ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong"}) {
    cases.push_back({pingpong, "", 0});
    cases.push_back({pingpong, "-c", 0});  // every received byte checked
  }
  cases.push_back({"ibv_rc_pingpong", "-e -c", 0});  // completion channel
  for (const char* perftest : {"ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_send_bw",
                               "ib_send_lat", "ib_atomic_bw", "ib_atomic_lat"}) {
    cases.push_back({perftest, "", 1});
  }
  for (const char* perftest : {"ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_send_bw",
                               "ib_send_lat"}) {
    cases.push_back({perftest, sweep_options(), kSweepSizes, "", false, false, ProgramCase::Long::by_reference});
  }
  // By default a long message to a local peer is read by the peer straight
  // from the sender's memory (UROCE_PEER_READS); the pingpongs check every
  // byte. With UROCE_PEER_READS=0, by packets.
  for (const char* program : {"ib_write_bw", "ib_send_bw", "ib_read_bw"}) {
    cases.push_back({program, "-s 65536", 1, "", false, false, ProgramCase::Long::by_reference});
  }
  cases.push_back({"ibv_rc_pingpong", "-c -s 65536", 0, "", false, false, ProgramCase::Long::by_reference});
  cases.push_back({"ibv_srq_pingpong", "-c -s 65536", 0, "", false, false, ProgramCase::Long::by_reference});
  cases.push_back({"ib_write_bw", "-s 65536", 1, "", false, false, ProgramCase::Long::by_packets,
                   "UROCE_PEER_READS=0"});
  cases.push_back({"ibv_rc_pingpong", "-c -s 65536", 0, "", false, false, ProgramCase::Long::by_packets,
                   "UROCE_PEER_READS=0"});
  cases.push_back({"ib_send_bw", "--use_old_post_send", 1});  // ibv_post_send instead of ibv_wr_*
  cases.push_back({"ib_write_bw", "-q 4 --report_gbits", 1});
  // The progress modes: -e sleeps on a completion channel (arming the CQ
  // hands the port to the thread); thread is the classic design; inline has
  // no thread, for programs that poll CQs (ib_write_lat, which spins on
  // memory, would wait forever there).
  cases.push_back({"ib_send_lat", "-e", 1});
  cases.push_back({"ib_write_lat", "", 1, "thread"});
  cases.push_back({"ib_read_bw", "", 1, "thread"});
  cases.push_back({"ibv_rc_pingpong", "-c", 0, "inline"});
  cases.push_back({"ib_send_lat", "", 1, "inline"});
  // Every datagram on the wire (loopback UDP), as before the intra-host path.
  cases.push_back({"ibv_rc_pingpong", "-c", 0, "", true});
  cases.push_back({"ib_write_lat", "", 1, "", true});
  cases.push_back({"ib_send_bw", "", 1, "", true});
  cases.push_back({"ib_read_lat", "", 1, "", true});
  // UC and UD never resend: on the wire every size must arrive whole, so
  // the sender waits for a full receiver instead of overrunning its socket
  // (port/loopback_receivers.h). UD messages go up to the MTU (2 B .. 4 KiB).
  cases.push_back({"ib_send_bw", "-c UC " + sweep_options(), kSweepSizes, "", true});
  cases.push_back({"ib_send_bw", "-c UD " + sweep_options(), 12, "", true});
  // Shared regions (UROCE_SHARED_MR=1): messages of 64 KiB and, in the
  // sweeps, every size above the MTU read by the peer from the sender's
  // region's file. The pingpongs check every byte they receive.
  constexpr auto kByReference = ProgramCase::Long::by_reference;
  cases.push_back({"ibv_rc_pingpong", "-c -s 65536", 0, "", false, true, kByReference});
  cases.push_back({"ibv_srq_pingpong", "-c -s 65536", 0, "", false, true, kByReference});
  cases.push_back({"ib_write_bw", "-s 65536", 1, "", false, true, kByReference});
  cases.push_back({"ib_send_bw", "-s 65536", 1, "", false, true, kByReference});
  cases.push_back({"ib_read_bw", "-s 65536", 1, "", false, true, kByReference});
  cases.push_back({"ib_write_bw", sweep_options(), kSweepSizes, "", false, true, kByReference});
  cases.push_back({"ib_send_bw", sweep_options(), kSweepSizes, "", false, true, kByReference});
  // GID 0, the link-local GID as in Soft-RoCE's table: how most people run
  // the pingpongs on RoCE, and what rdma-core's test suite picks.
  cases.push_back({"ibv_rc_pingpong", "-g 0 -c", 0});
  cases.push_back({"ibv_ud_pingpong", "-g 0 -c", 0});
  cases.push_back({"ibv_rc_pingpong", "-g 0 -c", 0, "", true});
  cases.push_back({"ibv_ud_pingpong", "-g 0 -c", 0, "", true});
  cases.push_back({"ib_send_bw", "-x 0", 1, "", true});
  cases.push_back({"ib_read_lat", "-x 0", 1});
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].id = static_cast<int>(i);
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<ProgramCase>& info) {
  std::string name = info.param.program + "_" + info.param.options +
                     (info.param.progress.empty() ? "" : "_" + info.param.progress) + (info.param.wire ? "_wire" : "") +
                     (info.param.shared ? "_shared" : "") +
                     (info.param.environment.empty() ? "" : "_" + info.param.environment);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Programs, LoopbackPrograms, ::testing::ValuesIn(loopback_cases()), case_name);

// Between namespaces, every program with its defaults over the UDP port, and
// a set over the raw Ethernet port (whole frames through AF_PACKET, every
// ICRC checked on arrival).
class NamespacePrograms : public ::testing::TestWithParam<bool> {};

TEST_P(NamespacePrograms, RunUnchangedAcrossAVethPair) {
  if (auto why = testing::VethPair::unavailable()) GTEST_SKIP() << *why;
  bool raw = GetParam();
  testing::VethPair veth(raw ? "10.79.21" : "10.79.20");
  ASSERT_EQ(veth.error(), "");
  Side server{veth.server().ns, veth.server().address, raw ? veth.server().interface : ""};
  Side client{veth.client().ns, veth.client().address, raw ? veth.client().interface : ""};
  std::vector<ProgramCase> cases;
  for (const char* pingpong : {"ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong"}) {
    cases.push_back({pingpong, "-c", 0});
  }
  for (const char* perftest : {"ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_send_bw",
                               "ib_send_lat", "ib_atomic_bw", "ib_atomic_lat"}) {
    cases.push_back({perftest, "", 1});
  }
  // GID 0: over the UDP port the address it stands for; over the raw port
  // IPv6 between the two link-local GIDs, as between Soft-RoCE devices.
  cases.push_back({"ibv_rc_pingpong", "-g 0 -c", 0});
  cases.push_back({"ibv_ud_pingpong", "-g 0 -c", 0});
  int port = raw ? 19400 : 19300;
  for (const ProgramCase& run : cases) {
    if (!installed(run.program)) continue;
    SCOPED_TRACE(run.program + " " + run.options);
    PairResult result = run_pair(run.program, run.options, server, client, server.address, port++);
    if (run.rows == 0) {
      expect_pingpong(result);
    } else {
      expect_perftest(result, run.rows);
    }
    // Another network namespace is another host: never the intra-host path.
    EXPECT_EQ(intra_host_sends(result.client_errors).value_or(-1), 0) << describe(result);
  }
}

// UD multicast across the pair: mckey receives in one namespace what mckey
// sends to the group from the other. Over the UDP port the device joins on
// the veth's address and sends out of it; over the raw port the interface
// takes the group's MAC and the frames go to 01:00:5e:... .
TEST_P(NamespacePrograms, MckeyReachesTheGroupAcrossAVethPair) {
  if (auto why = testing::VethPair::unavailable()) GTEST_SKIP() << *why;
  if (!installed("mckey")) GTEST_SKIP() << "rdmacm-utils is not installed";
  bool raw = GetParam();
  testing::VethPair veth(raw ? "10.79.24" : "10.79.23");
  ASSERT_EQ(veth.error(), "");
  Side receiver{veth.server().ns, veth.server().address, raw ? veth.server().interface : ""};
  Side sender{veth.client().ns, veth.client().address, raw ? veth.client().interface : ""};
  std::string group = raw ? "239.79.24.1" : "239.79.23.1";
  std::string script = command_on(receiver, "mckey -m " + group + " -b " + receiver.address + " -C 20 -S 512") +
                       " > /dev/null 2>&1 & pid=$!; sleep 1; " +
                       command_on(sender, "mckey -m " + group + " -b " + sender.address + " -s -C 20 -S 512") +
                       " 2>&1; echo \"sender exit $?\"; wait $pid; echo \"receiver exit $?\"";
  testing::RunResult run = run_shell("bash -c '" + script + "'");
  EXPECT_NE(run.output.find("sender exit 0"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("receiver exit 0"), std::string::npos) << run.output;
}

std::string port_name(const ::testing::TestParamInfo<bool>& raw) { return raw.param ? "RawEthernet" : "Udp"; }

INSTANTIATE_TEST_SUITE_P(Ports, NamespacePrograms, ::testing::Values(false, true), port_name);

// (The rdma_cm programs: tests/rdmacm/rdmacm_programs_test.cc; UCX: ucx_programs_test.cc.)

}  // namespace
}  // namespace uroce
