// Open MPI, unchanged (Debian's openmpi-bin 4.1, whose pml is UCX), on
// uroce: `mpirun -np 4` on this host, each rank on its own uroce device
// (`uroce run --address-per-rank`), runs collectives_check.c, which checks
// every element of MPI_Allreduce, MPI_Alltoall and MPI_Bcast from one
// element to 2 MiB. The pml is UCX with only uroce's transports allowed and
// Open MPI's own shared-memory and TCP paths off; each rank's uroce counters
// show its traffic went through its device, over the wire with --wire, and
// in one packet per long message with --shared-mr.
#include <gtest/gtest.h>

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
  // Every rank's device carried its share: the collectives move about 10 MiB a rank.
  std::regex counters(
      "uroce: uroce0: packets sent ([0-9]+) received ([0-9]+).*intra-host sent ([0-9]+).*extent packets sent ([0-9]+)");
  int ranks = 0;
  for (auto it = std::sregex_iterator(run.output.begin(), run.output.end(), counters); it != std::sregex_iterator();
       ++it) {
    EXPECT_GE(std::stoul((*it)[1]), 1000u) << run.output;
    EXPECT_GE(std::stoul((*it)[2]), 1000u) << run.output;
    if (test.wire) {
      EXPECT_EQ((*it)[3], "0") << run.output;  // nothing took the intra-host path
    }
    // With shared regions, UCX's long messages went as one packet each.
    if (test.shared) {
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

}  // namespace
}  // namespace uroce
