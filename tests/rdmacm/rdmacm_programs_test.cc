// Unmodified rdma_cm programs (Debian's rdmacm-utils) on uroce's
// librdmacm.so.1 and libibverbs.so.1, as two processes over loopback, each
// with its own uroce device, through shared memory and over the wire:
// rping -v (every ping's data verified), ucmatose, rdma_server/rdma_client
// (the synchronous rdma_create_ep API), rdma_xserver/rdma_xclient, udaddy
// (a UD service: SIDR, then datagrams each way), cmtime (300 connections at once). A request to an address where nobody listens is
// rejected (SIDR: UNREACHABLE with status 1), one to an address with no
// device ends in UNREACHABLE after the CM's retries. mckey: UD multicast
// from one sender to two receivers; a join to a unicast address fails. rsockets: rstream
// (every byte verified; blocking, non-blocking and rpoll) and riostream
// (riomap/riowrite); datagram rsockets (udpong) fail with an error. perftest's ib_write_bw, ib_read_lat and
// ib_send_bw run with -R (rdma_cm for their exchange and their QPs). None
// may hang or die of a signal. The
// library exports exactly rdma-core 44's symbols and versions.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/support/program_environment.h"
#include "tests/support/program_pair.h"
#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::installed;
using testing::run_shell;
using testing::RunResult;

const std::string kLibraryDir = UROCE_IBVERBS_DIR;

// short_timeouts: a REQ nobody answers ends after 4 tries 16.8 ms apart
// (the defaults, Linux's, take a minute); only for peers that are not there.
std::string environment(const std::string& address, bool wire, bool short_timeouts = false) {
  return "env LD_LIBRARY_PATH=" + kLibraryDir + " " + testing::sanitizer_environment() + "UROCE_ADDRESS=" + address +
         (wire ? " UROCE_WIRE=1" : "") + (short_timeouts ? " UROCE_CM_TIMEOUT=12 UROCE_CM_RETRIES=3 " : " ");
}

using Pair = testing::PairResult;

// Starts the server; runs the client until it stops being rejected for want
// of a listener (the server is not up yet), at most 100 times. (Until the
// server's device is open, the client's REQ is simply sent again.)
Pair run_pair(const std::string& server, const std::string& client, int id, bool wire) {
  std::string server_address = "127.0.9." + std::to_string(2 * id + 1 + (wire ? 40 : 0));
  std::string client_address = "127.0.9." + std::to_string(2 * id + 2 + (wire ? 40 : 0));
  auto fill = [&](std::string command) {
    return std::regex_replace(command, std::regex("SERVER"), server_address);
  };
  return testing::run_program_pair(environment(server_address, wire) + "timeout 60 stdbuf -oL " + fill(server),
                                   environment(client_address, wire) + "timeout 60 stdbuf -oL " + fill(client),
                                   "REJECTED[,;] error:* 8\\|rdma_connect: Connection refused\\|UNREACHABLE, error: 1$");
}

class RdmaCmPrograms : public ::testing::TestWithParam<bool> {};

TEST_P(RdmaCmPrograms, RpingVerifiesEveryPing) {
  if (!installed("rping")) GTEST_SKIP() << "rdmacm-utils is not installed";
  Pair pair = run_pair("rping -s -a SERVER -p 7174 -v -C 5", "rping -c -a SERVER -p 7174 -v -C 5", 0, GetParam());
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_NE(pair.output.find("server ping data: rdma-ping-4"), std::string::npos) << pair.output;
  EXPECT_NE(pair.output.find("\nping data: rdma-ping-4"), std::string::npos) << pair.output;
}

TEST_P(RdmaCmPrograms, UcmatoseConnectsTransfersAndDisconnects) {
  if (!installed("ucmatose")) GTEST_SKIP() << "rdmacm-utils is not installed";
  Pair pair = run_pair("ucmatose -b SERVER -p 7175", "ucmatose -s SERVER -p 7175", 1, GetParam());
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_NE(pair.output.find("data transfers complete"), std::string::npos) << pair.output;
}

TEST_P(RdmaCmPrograms, RdmaServerAndClientThroughTheSynchronousApi) {
  if (!installed("rdma_server")) GTEST_SKIP() << "rdmacm-utils is not installed";
  Pair pair = run_pair("rdma_server -s SERVER -p 7176", "rdma_client -s SERVER -p 7176", 2, GetParam());
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_NE(pair.output.find("rdma_client: end 0"), std::string::npos) << pair.output;
}

// rdma_xclient sends its message inline on a QP made with no inline size
// (as on kernel Soft-RoCE, a few bytes an SGE are granted).
TEST_P(RdmaCmPrograms, RdmaXserverAndXclientOverRc) {
  if (!installed("rdma_xserver")) GTEST_SKIP() << "rdmacm-utils is not installed";
  Pair pair = run_pair("rdma_xserver -p 7178", "rdma_xclient -s SERVER -p 7178", 4, GetParam());
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_NE(pair.output.find("rdma_xserver: end 0"), std::string::npos) << pair.output;
  EXPECT_NE(pair.output.find("rdma_xclient: end 0"), std::string::npos) << pair.output;
}

TEST_P(RdmaCmPrograms, UdaddyResolvesTheServiceAndExchangesDatagrams) {
  if (!installed("udaddy")) GTEST_SKIP() << "rdmacm-utils is not installed";
  Pair pair = run_pair("udaddy", "udaddy -s SERVER", 3, GetParam());  // port 7174 of the UDP port space
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_NE(pair.output.find("sending replies"), std::string::npos) << pair.output;
  std::regex complete("data transfers complete");  // the server's and the client's
  EXPECT_EQ(std::distance(std::sregex_iterator(pair.output.begin(), pair.output.end(), complete), std::sregex_iterator()), 2)
      << pair.output;
}

// cmtime connects 300 IDs at once and disconnects them. With a response
// timeout of 69 s (UROCE_CM_TIMEOUT=24), a single MAD lost in the burst
// would outlast the 60 s limit: every REQ, REP, RTU, DREQ and DREP fits
// the CM's queues.
TEST_P(RdmaCmPrograms, CmtimeConnectsABurstWithoutLosingAMad) {
  if (!installed("cmtime")) GTEST_SKIP() << "rdmacm-utils is not installed";
  bool wire = GetParam();
  std::string server = wire ? "127.0.9.57" : "127.0.9.17", client = wire ? "127.0.9.58" : "127.0.9.18";
  // Its server serves until killed.
  std::string script = environment(server, wire) + "UROCE_CM_TIMEOUT=24 timeout 60 cmtime -b " + server +
                       " -p 7179 > /dev/null 2>&1 & pid=$!; sleep 1; " + environment(client, wire) +
                       "UROCE_CM_TIMEOUT=24 timeout 60 cmtime -s " + server + " -p 7179 -c 300 2>&1; echo \"exit $?\"; kill $pid";
  RunResult run = run_shell("bash -c '" + script + "'");
  EXPECT_NE(run.output.find("exit 0\n"), std::string::npos) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\\nconnect +: +[0-9.]+"))) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\\ndisconnect +: +[0-9.]+"))) << run.output;
}

// rsockets: rstream checks every byte it receives (-T v): 500 transfers of
// 65000 B (the receive buffer's halves and the staging ring wrap at odd
// places) in its default non-blocking mode, and 2000 of 4000 B with rpoll
// (-T a).
TEST_P(RdmaCmPrograms, RstreamVerifiesEveryTransfer) {
  if (!installed("rstream")) GTEST_SKIP() << "rdmacm-utils is not installed";
  Pair pair = run_pair("rstream -p 7180 -T v -S 65000 -C 500", "rstream -s SERVER -p 7180 -T v -S 65000 -C 500", 9,
                       GetParam());
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_TRUE(std::regex_search(pair.output, std::regex("@@[^]*\\ncustom +63k +500 +1 "))) << pair.output;
  std::string polled_options = " -p 7181 -T a -T v -S 4000 -C 2000";
  Pair polled = run_pair("rstream" + polled_options, "rstream -s SERVER" + polled_options, 10, GetParam());
  EXPECT_EQ(polled.server_exit, 0) << polled.output;
  EXPECT_EQ(polled.client_exit, 0) << polled.output;
  EXPECT_TRUE(std::regex_search(polled.output, std::regex("@@[^]*\\ncustom +3.9k +2k +1 "))) << polled.output;
}

// riostream: riomap and riowrite, each side writing into the other's
// buffer and spinning on its last byte (-T v checks the data). A program
// that waits on memory without a verbs call needs the progress thread
// (UROCE_PROGRESS=thread), as ib_write_lat does.
TEST_P(RdmaCmPrograms, RiostreamWritesIntoMappedBuffers) {
  if (!installed("riostream")) GTEST_SKIP() << "rdmacm-utils is not installed";
  std::string options = " -p 7182 -T v -S 65536 -C 10 -I 100";
  Pair pair = run_pair("env UROCE_PROGRESS=thread riostream" + options,
                       "env UROCE_PROGRESS=thread riostream -s SERVER" + options, 11, GetParam());
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_TRUE(std::regex_search(pair.output, std::regex("@@[^]*\\ncustom +64k +10 +100 "))) << pair.output;
}

INSTANTIATE_TEST_SUITE_P(Paths, RdmaCmPrograms, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& wire) { return wire.param ? "Wire" : "SharedMemory"; });

// perftest with -R: its handshake and its QPs both through rdma_cm. Its
// server listens for the QPs' connection only after a handshake that lets
// the client connect at once; the REQ waits for the listener (see
// ConnectionManager). The report's last line of figures is checked.
struct PerftestOverRdmaCm {
  const char* program;
  int id;
  const char* figures;  // a regex for the report's line of figures
};

void PrintTo(const PerftestOverRdmaCm& test, std::ostream* out) { *out << test.program; }

class PerftestOverRdmaCmPrograms : public ::testing::TestWithParam<std::tuple<PerftestOverRdmaCm, bool>> {};

TEST_P(PerftestOverRdmaCmPrograms, RunWithTheirExchangeAndQpsThroughRdmaCm) {
  auto [test, wire] = GetParam();
  if (!installed(test.program)) GTEST_SKIP() << "perftest is not installed";
  std::string options = std::string(test.program) + " -R -d uroce0 -n 500 -p " + std::to_string(18600 + test.id);
  Pair pair = run_pair(options, options + " SERVER", test.id, wire);
  EXPECT_EQ(pair.server_exit, 0) << pair.output;
  EXPECT_EQ(pair.client_exit, 0) << pair.output;
  EXPECT_NE(pair.output.find("Data ex. method : rdma_cm"), std::string::npos) << pair.output;
  EXPECT_TRUE(std::regex_search(pair.output, std::regex(test.figures))) << pair.output;
}

INSTANTIATE_TEST_SUITE_P(
    Paths, PerftestOverRdmaCmPrograms,
    ::testing::Combine(::testing::Values(PerftestOverRdmaCm{"ib_write_bw", 5, "\\n 65536 +500[ \\t]+[0-9.]+[ \\t]+[0-9.]*[1-9]"},
                                         PerftestOverRdmaCm{"ib_read_lat", 6, "\\n 2 +500[ \\t]+[0-9.]+[ \\t]+[0-9.]+[ \\t]+[0-9.]*[1-9]"},
                                         PerftestOverRdmaCm{"ib_send_bw", 7, "\\n 65536 +500[ \\t]+[0-9.]+[ \\t]+[0-9.]*[1-9]"}),
                       ::testing::Bool()),
    [](const auto& param_info) {
      return std::string(std::get<0>(param_info.param).program) + (std::get<1>(param_info.param) ? "Wire" : "SharedMemory");
    });

// Exited by itself with an error: not stopped by timeout (124), not killed
// by a signal (128 + N; 255 is the programs' own exit(-1)).
bool failed_by_itself(int exit_code) { return exit_code != 0 && exit_code != 124 && (exit_code < 128 || exit_code == 255); }

RunResult run_alone(const std::string& address, const std::string& command) {
  return run_shell(environment(address, true, /*short_timeouts=*/true) + "timeout 60 " + command + " 2>&1");
}

TEST(RdmaCmFailures, NobodyListeningIsRejectedAndNoDeviceIsUnreachable) {
  if (!installed("rping")) GTEST_SKIP() << "rdmacm-utils is not installed";
  // A live device that listens on another port: the CM rejects (invalid service ID).
  std::string script = environment("127.0.9.91", true) + "timeout 30 rping -s -a 127.0.9.91 -p 7000 -C 1 > /dev/null 2>&1 & "
                       "pid=$!; sleep 1; " + environment("127.0.9.92", true) +
                       "timeout 30 rping -c -a 127.0.9.91 -p 7001 -C 1 2>&1; echo \"exit $?\"; kill $pid";
  RunResult rejected = run_shell("bash -c '" + script + "'");
  EXPECT_NE(rejected.output.find("RDMA_CM_EVENT_REJECTED, error 8"), std::string::npos) << rejected.output;
  EXPECT_NE(rejected.output.find("exit 255"), std::string::npos) << rejected.output;
  // No device at the address: the REQ and its 3 retries go unanswered (16.8 ms each).
  RunResult unreachable = run_alone("127.0.9.93", "rping -c -a 127.0.9.94 -p 7002 -C 1");
  EXPECT_NE(unreachable.output.find("RDMA_CM_EVENT_UNREACHABLE"), std::string::npos) << unreachable.output;
  EXPECT_TRUE(failed_by_itself(unreachable.exit_code)) << unreachable.exit_code << unreachable.output;
}

TEST(RdmaCmFailures, AnUnservedUdServiceIsRefusedAndNoDeviceIsUnreachable) {
  if (!installed("udaddy") || !installed("rping")) GTEST_SKIP() << "rdmacm-utils is not installed";
  // The device listens on TCP port 7174, not UDP's: SIDR_REP status 1 (service ID not supported).
  std::string script = environment("127.0.9.81", true) + "timeout 30 rping -s -a 127.0.9.81 -C 1 > /dev/null 2>&1 & "
                       "pid=$!; sleep 1; " + environment("127.0.9.82", true) +
                       "timeout 30 udaddy -s 127.0.9.81 2>&1; echo \"exit $?\"; kill $pid";
  RunResult refused = run_shell("bash -c '" + script + "'");
  EXPECT_NE(refused.output.find("RDMA_CM_EVENT_UNREACHABLE, error: 1\n"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("exit 1\n"), std::string::npos) << refused.output;
  // No device: the SIDR_REQ and its 3 retries go unanswered.
  RunResult unreachable = run_alone("127.0.9.83", "udaddy -s 127.0.9.84");
  EXPECT_NE(unreachable.output.find("RDMA_CM_EVENT_UNREACHABLE, error: -110"), std::string::npos) << unreachable.output;
  EXPECT_EQ(unreachable.exit_code, 256 - 110) << unreachable.output;  // udaddy returns the status, -ETIMEDOUT
}

TEST(RdmaCmFailures, DatagramRsocketsAreRefusedWithAnError) {
  if (!installed("udpong")) GTEST_SKIP() << "rdmacm-utils is not installed";
  RunResult datagrams = run_alone("127.0.9.97", "udpong -s 127.0.9.98");  // rsocket(SOCK_DGRAM): not served
  EXPECT_NE(datagrams.output.find("rsocket failed: Function not implemented"), std::string::npos) << datagrams.output;
  EXPECT_TRUE(failed_by_itself(datagrams.exit_code)) << datagrams.exit_code << datagrams.output;
}

// mckey: two receivers join 239.127.9.<n> (each device's group socket gets its
// copy from the kernel's loopback multicast), then a sender joins and sends
// 20 datagrams; a receiver that missed one would still be waiting at 60 s.
// The sender blocks its own loopback (-l: IBV_QP_CREATE_BLOCK_SELF_MCAST_LB).
TEST_P(RdmaCmPrograms, MckeyReachesEveryReceiverOfTheGroup) {
  if (!installed("mckey")) GTEST_SKIP() << "rdmacm-utils is not installed";
  bool wire = GetParam();
  std::string group = wire ? "239.127.9.241" : "239.127.9.240";
  std::string base = wire ? "127.0.9.24" : "127.0.9.25";
  std::string script;
  for (int receiver : {1, 2}) {
    std::string address = base + std::to_string(receiver);
    script += environment(address, wire) + "timeout 60 mckey -m " + group + " -b " + address +
              " -C 20 -S 1000 > /tmp/uroce-mckey-" + address + " 2>&1 & pids=\"$pids $!\"; ";
  }
  std::string sender = base + "3";
  script += "sleep 1; " + environment(sender, wire) + "timeout 60 mckey -m " + group + " -b " + sender +
            " -s -l -C 20 -S 1000 2>&1; echo \"sender exit $?\"; "
            "for pid in $pids; do wait $pid; echo \"receiver exit $?\"; done; "
            "cat /tmp/uroce-mckey-" + base + "1 /tmp/uroce-mckey-" + base + "2; rm -f /tmp/uroce-mckey-" + base + "[12]";
  RunResult run = run_shell("bash -c '" + script + "'");
  EXPECT_NE(run.output.find("sender exit 0"), std::string::npos) << run.output;
  std::size_t receivers_done = 0;
  for (std::size_t at = run.output.find("receiver exit 0"); at != std::string::npos;
       at = run.output.find("receiver exit 0", at + 1)) {
    ++receivers_done;
  }
  EXPECT_EQ(receivers_done, 2u) << run.output;
  EXPECT_NE(run.output.find("joined dgid: ::ffff:" + group), std::string::npos) << run.output;
}

TEST(RdmaCmFailures, AMulticastJoinToAnAddressThatIsNoGroupIsRefused) {
  if (!installed("mckey")) GTEST_SKIP() << "rdmacm-utils is not installed";
  RunResult refused = run_alone("127.0.9.248", "mckey -m 127.0.9.249 -b 127.0.9.248 -C 2");
  EXPECT_NE(refused.output.find("failure joining: Invalid argument"), std::string::npos) << refused.output;
  EXPECT_TRUE(failed_by_itself(refused.exit_code)) << refused.exit_code << refused.output;
}

TEST(RdmaCmLibrary, ExportsRdmaCoresSymbolsWithTheirVersions) {
  const std::string theirs_path = "/usr/lib/x86_64-linux-gnu/librdmacm.so.1";
  if (run_shell("test -e " + theirs_path).exit_code != 0) GTEST_SKIP() << "rdma-core's librdmacm is not installed";
  std::string list = " | grep -v ' U \\| w ' | awk '{ print $3 }' | sort";
  RunResult ours = run_shell("nm -D --with-symbol-versions " + kLibraryDir + "/librdmacm.so.1" + list);
  RunResult theirs = run_shell("nm -D --with-symbol-versions " + theirs_path + list);
  ASSERT_EQ(ours.exit_code, 0);
  EXPECT_GT(theirs.output.size(), 500u);
  EXPECT_EQ(ours.output, theirs.output);
}

}  // namespace
}  // namespace uroce
