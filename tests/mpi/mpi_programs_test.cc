// Open MPI, unchanged (Debian's openmpi-bin 4.1, whose pml is UCX), on
// uroce: `mpirun -np 4` on this host, each rank on its own uroce device
// (`uroce run --address-per-rank`), runs collectives_check.c, which checks
// every element of MPI_Allreduce, MPI_Alltoall and MPI_Bcast from one
// element to 2 MiB. The pml is UCX with only uroce's transports allowed and
// Open MPI's own shared-memory and TCP paths off; each rank's uroce counters
// show its traffic went through its device, over the wire with --wire, and
// in one packet per long message with --shared-mr. And a rank that stops or
// dies mid-collective (rank_stops.c) ends the job with an error, not a hang:
// the oracles are UCX's own report of the failed sends and mpirun's exit.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>

#include "tests/support/program_environment.h"
#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::installed;
using testing::run_shell;
using testing::RunResult;

struct MpiCase {
  std::string name;
  std::string transports;  // UCX_TLS
  bool wire;
  std::string first_address;
  bool shared = false;  // uroce run --shared-mr: UCX's buffers are shared regions
};

void PrintTo(const MpiCase& test, std::ostream* out) { *out << test.name; }

class MpiCollectives : public ::testing::TestWithParam<MpiCase> {};

TEST_P(MpiCollectives, EveryResultIsRightAndWentThroughUroce) {
  const std::string program = UROCE_MPI_CHECK;
  if (program.empty() || !installed("mpirun")) GTEST_SKIP() << "Open MPI (openmpi-bin, libopenmpi-dev) is not installed";
  const MpiCase& test = GetParam();
  std::string command = testing::sanitizer_environment() +
                        "timeout 180 mpirun --allow-run-as-root --oversubscribe -np 4 --mca pml ucx "
                        "--mca btl ^vader,tcp,openib,uct -x UCX_TLS=" + test.transports +
                        " -x UCX_NET_DEVICES=uroce0:1 -x UROCE_STATS=1 " + testing::uroce_binary() + " run" +
                        (test.wire ? " --wire" : "") + (test.shared ? " --shared-mr" : "") + " --address-per-rank " + test.first_address + " -- " + program +
                        " 2>&1";
  RunResult run = run_shell(command);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("collectives_check: 4 ranks, all results verified"), std::string::npos) << run.output;
  // Every rank's device carried its share: the collectives move about 10 MiB
  // a rank, long messages by reference where the QPs are RC and local.
  std::regex counters(
      "uroce: uroce0: packets sent ([0-9]+) received ([0-9]+).*intra-host sent ([0-9]+).*extent packets sent ([0-9]+)");
  int ranks = 0;
  for (auto it = std::sregex_iterator(run.output.begin(), run.output.end(), counters); it != std::sregex_iterator();
       ++it) {
    EXPECT_GE(std::stoul((*it)[1]), 100u) << run.output;
    EXPECT_GE(std::stoul((*it)[2]), 100u) << run.output;
    if (test.wire) {
      EXPECT_EQ((*it)[3], "0") << run.output;  // nothing took the intra-host path
    }
    // UCX's long messages went as one packet each, read by the peer from
    // the sender's memory (or its shared file); never on the wire or UD.
    if (!test.wire && test.transports.find("rc_verbs") != std::string::npos) {
      EXPECT_GT(std::stoul((*it)[4]), 0u) << run.output;
    } else {
      EXPECT_EQ((*it)[4], "0") << run.output;
    }
    ++ranks;
  }
  EXPECT_EQ(ranks, 4) << run.output;
}

INSTANTIATE_TEST_SUITE_P(Transports, MpiCollectives,
                         ::testing::Values(MpiCase{"RcSharedMemory", "rc_verbs,ud_verbs", false, "127.0.10.10"},
                                           MpiCase{"RcWire", "rc_verbs,ud_verbs", true, "127.0.10.20"},
                                           MpiCase{"UdSharedMemory", "ud_verbs", false, "127.0.10.30"},
                                           // UCX's memory hooks replace mremap: the regions must move anyway.
                                           MpiCase{"RcSharedRegions", "rc_verbs,ud_verbs", false, "127.0.10.40", true}),
                         [](const ::testing::TestParamInfo<MpiCase>& param_info) { return param_info.param.name; });

struct PeerFailureCase {
  std::string name;
  std::string how;  // rank_stops's argument: stop (SIGSTOP) or die (SIGKILL)
  bool wire;
  std::string first_address;
  std::string expected;  // what the survivors or mpirun report
};

void PrintTo(const PeerFailureCase& test, std::ostream* out) { *out << test.name; }

class MpiPeerFailure : public ::testing::TestWithParam<PeerFailureCase> {};

// A frozen rank owes ACKs for what its peer sent it: the peer's RC sends run
// out their retries (UCX's timeout, about a second, seven times) and end in
// IBV_WC_RETRY_EXC_ERR, which UCX reports and turns into the job's abort,
// as on a NIC. A killed rank is seen by mpirun, which ends the job; the
// survivor must not hold it up.
TEST_P(MpiPeerFailure, EndsTheJobWithAnErrorNotAHang) {
  const std::string program = UROCE_MPI_RANK_STOPS;
  if (program.empty() || !installed("mpirun")) GTEST_SKIP() << "Open MPI (openmpi-bin, libopenmpi-dev) is not installed";
  const PeerFailureCase& test = GetParam();
  std::string command = testing::sanitizer_environment() +
                        "timeout -k 10 150 mpirun --allow-run-as-root -np 2 --mca pml ucx "
                        "--mca btl ^vader,tcp,openib,uct -x UCX_TLS=rc_verbs,ud_verbs -x UCX_NET_DEVICES=uroce0:1 " +
                        testing::uroce_binary() + " run" + (test.wire ? " --wire" : "") + " --address-per-rank " +
                        test.first_address + " -- " + program + " " + test.how + " " + test.first_address + " 2>&1";
  auto start = std::chrono::steady_clock::now();
  RunResult run = run_shell(command);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.exit_code, 124) << "still running after 150 s:\n" << run.output;
  EXPECT_LT(seconds, 120.0) << run.output;
  EXPECT_NE(run.output.find("rank_stops: rank 1 " + std::string(test.how == "die" ? "dies" : "stops")), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(test.expected), std::string::npos) << run.output;
  // No rank is left behind, frozen or not. A rank killed as mpirun ends may
  // take a few seconds to go under the sanitizers (LeakSanitizer's scan at
  // exit, on a loaded machine): it is given 10 s.
  const std::string rank_left = "pgrep -f '^" + program + " " + test.how + " " + test.first_address + "$'";
  RunResult left = run_shell("for i in $(seq 20); do " + rank_left + " >/dev/null || exit 0; sleep 0.5; done; " + rank_left);
  EXPECT_EQ(left.output, "") << left.output << "\nthe run:\n" << run.output;
}

INSTANTIATE_TEST_SUITE_P(
    Ways, MpiPeerFailure,
    ::testing::Values(
        PeerFailureCase{"StopsSharedMemory", "stop", false, "127.0.10.50", "transport retry counter exceeded"},
        PeerFailureCase{"StopsWire", "stop", true, "127.0.10.60", "transport retry counter exceeded"},
        PeerFailureCase{"DiesSharedMemory", "die", false, "127.0.10.70", "exited on signal 9"}),
    [](const ::testing::TestParamInfo<PeerFailureCase>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace uroce
