// `uroce run`: an unmodified program started through it finds uroce's
// library and the device address it was given; a pair of pingpong processes
// started through it talk; a missing program or library is a clear error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

#include "tests/support/program_environment.h"
#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::run_shell;
using testing::run_uroce;

using testing::installed;

// The programs are not built with ASan; in a sanitizer build the library is.
std::string preload() { return "env " + testing::sanitizer_environment(); }

TEST(UroceRun, StartsAProgramOnUrocesLibraryWithTheGivenAddress) {
  if (!installed("ibv_devinfo")) GTEST_SKIP() << "ibv_devinfo is not installed";
  auto run = run_shell(preload() + testing::uroce_binary() + " run --address 127.0.8.201 -- ibv_devinfo -v 2>&1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("hca_id:\turoce0"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("::ffff:127.0.8.201"), std::string::npos) << run.output;
  // uroce's LID: the address's low 16 bits, 8 * 256 + 201.
  EXPECT_NE(run.output.find("port_lid:\t\t2249"), std::string::npos) << run.output;
}

// UCX's rendezvous threshold: set for the intra-host path, left alone on
// the wire, with more local MPI ranks than cores, and where the user set it.
TEST(UroceRun, SetsUcxsRendezvousThresholdOnlyForTheIntraHostPath) {
  std::string print = " -- sh -c 'echo threshold=${UCX_RNDV_THRESH:-unset}'";
  auto local = run_shell(preload() + testing::uroce_binary() + " run --address 127.0.8.201" + print);
  EXPECT_NE(local.output.find("threshold=32768"), std::string::npos) << local.output;
  auto wire = run_shell(preload() + testing::uroce_binary() + " run --wire --address 127.0.8.201" + print);
  EXPECT_NE(wire.output.find("threshold=unset"), std::string::npos) << wire.output;
  auto own = run_shell(preload() + "UCX_RNDV_THRESH=1000 " + testing::uroce_binary() + " run --address 127.0.8.201" + print);
  EXPECT_NE(own.output.find("threshold=1000"), std::string::npos) << own.output;
  // More local MPI ranks than cores: UCX's own choice.
  auto crowded = run_shell(preload() + "OMPI_COMM_WORLD_LOCAL_SIZE=" + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN) + 1) +
                           " " + testing::uroce_binary() + " run --address 127.0.8.201" + print);
  EXPECT_NE(crowded.output.find("threshold=unset"), std::string::npos) << crowded.output;
}

// The preloaded sysfs view: what the kernel would show of an RDMA device,
// in the kernel's formats (UCX reads it); the host's paths stay untouched
// under --no-sysfs-view, and every other path in any case.
TEST(UroceRun, ShowsTheDevicesInSysfsAndDevInfiniband) {
  std::string show =
      " -- sh -c 'cat /sys/class/infiniband/uroce1/ports/1/gids/1 /sys/class/infiniband/uroce1/ports/1/gid_attrs/types/1 "
      "/sys/class/infiniband/uroce1/ports/1/gid_attrs/ndevs/0 /sys/class/infiniband/uroce0/ports/1/gids/0 "
      "/sys/class/infiniband/uroce0/node_type /sys/class/infiniband_verbs/uverbs1/ibdev; "
      "ls /sys/class/infiniband; test -c /dev/infiniband/uverbs1 && echo character device; head -c 5 /etc/os-release'";
  auto run = run_shell(preload() + testing::uroce_binary() + " run --address 127.0.8.204,127.0.8.205" + show + " 2>&1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output,
            "0000:0000:0000:0000:0000:ffff:7f00:08cd\nRoCE v2\nlo\n"
            "fe80:0000:0000:0000:0000:7fff:fe00:08cc\n1: CA\nuroce1\nuroce0\nuroce1\ncharacter device\nPRETT");
  auto host = run_shell(preload() + testing::uroce_binary() + " run --no-sysfs-view --address 127.0.8.204" +
                        " -- sh -c 'test -e /sys/class/infiniband/uroce0 || echo absent'");
  EXPECT_EQ(host.output, "absent\n");
}

TEST(UroceRun, TwoPingpongProcessesTalk) {
  if (!installed("ibv_rc_pingpong")) GTEST_SKIP() << "ibv_rc_pingpong is not installed";
  std::string uroce = preload() + testing::uroce_binary() + " run ";
  auto run = run_shell("(" + uroce + "--address 127.0.8.202 -- ibv_rc_pingpong -p 19600 -c > /dev/null 2>&1 & "
                       "sleep 1; " + uroce + "--address 127.0.8.203 -- ibv_rc_pingpong -p 19600 -c 127.0.0.1; "
                       "client=$?; wait $!; echo \"exit $client $?\") 2>&1");
  EXPECT_NE(run.output.find("1000 iters in"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("exit 0 0"), std::string::npos) << run.output;
}

TEST(UroceRun, MissingProgramOrLibraryIsAClearError) {
  auto missing = run_uroce("run -- no_such_rdma_program 2>&1");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.output.find("cannot run no_such_rdma_program"), std::string::npos) << missing.output;
  auto no_library = run_uroce("run --library-dir /nonexistent -- true 2>&1");
  EXPECT_EQ(no_library.exit_code, 1);
  EXPECT_NE(no_library.output.find("cannot find uroce's libibverbs.so.1"), std::string::npos) << no_library.output;
  auto bad_progress = run_uroce("run --progress fastest -- true 2>&1");
  EXPECT_NE(bad_progress.exit_code, 0);
  EXPECT_NE(bad_progress.output.find("--progress: fastest not in {adaptive,thread,inline}"), std::string::npos)
      << bad_progress.output;
  auto progress = run_uroce("run --progress thread -- sh -c 'echo \"progress=$UROCE_PROGRESS\"' 2>&1");
  EXPECT_EQ(progress.exit_code, 0) << progress.output;
  EXPECT_NE(progress.output.find("progress=thread"), std::string::npos) << progress.output;
  auto shared = run_uroce("run --shared-mr -- sh -c 'echo \"shared=$UROCE_SHARED_MR\"' 2>&1");
  EXPECT_EQ(shared.exit_code, 0) << shared.output;
  EXPECT_NE(shared.output.find("shared=1"), std::string::npos) << shared.output;
  auto shared_on_wire = run_uroce("run --shared-mr --wire -- true 2>&1");  // nothing local to share with
  EXPECT_EQ(shared_on_wire.exit_code, 2) << shared_on_wire.output;
  auto no_program = run_uroce("run 2>&1");
  EXPECT_EQ(no_program.exit_code, 2) << no_program.output;
}

// An address the device could not bind is refused before the program runs,
// with the reason; the raw port may take an address the host does not hold.
TEST(UroceRun, AnAddressThisHostDoesNotHoldIsRefusedAtOnce) {
  auto not_an_address = run_uroce("run --address 300.1.1.1 -- echo ran 2>&1");
  EXPECT_EQ(not_an_address.exit_code, 2) << not_an_address.output;
  EXPECT_EQ(not_an_address.output, "uroce run: device address '300.1.1.1': not an IPv4 or IPv6 address\n");
  // 192.0.2.0/24 is TEST-NET-1: documentation only, never a host's.
  auto foreign = run_uroce("run --address 127.0.8.206,192.0.2.7 -- echo ran 2>&1");
  EXPECT_EQ(foreign.exit_code, 2) << foreign.output;
  EXPECT_EQ(foreign.output, "uroce run: device address '192.0.2.7': not an address of this host\n");
  auto per_rank = run_shell("OMPI_COMM_WORLD_RANK=1 " + testing::uroce_binary() + " run --address-per-rank 192.0.2.7 -- echo ran 2>&1");
  EXPECT_EQ(per_rank.exit_code, 2) << per_rank.output;
  EXPECT_EQ(per_rank.output, "uroce run: device address '192.0.2.8': not an address of this host\n");
  auto v6_on_raw = run_uroce("run --interface lo --address ::1 -- echo ran 2>&1");
  EXPECT_EQ(v6_on_raw.exit_code, 2) << v6_on_raw.output;
  EXPECT_NE(v6_on_raw.output.find("takes IPv4 addresses only"), std::string::npos) << v6_on_raw.output;
  auto held = run_uroce("run --address 127.0.8.206,::1 -- echo ran 2>&1");
  EXPECT_EQ(held.exit_code, 0) << held.output;
  EXPECT_EQ(held.output, "ran\n");
}

// A capture of two processes on the wire over loopback (tcpdump, which
// sees what the kernel hands the loopback device): by default the UDP port
// sends runs of datagrams as one GSO send, which the capture shows as one
// long datagram whose ICRC cannot match; with UROCE_GSO=0 every frame is a
// datagram as the engine built it, and uroce decode finds every ICRC good.
TEST(UroceRun, WithoutGsoALoopbackCaptureShowsEveryDatagramAsBuilt) {
  if (!installed("tcpdump") || !installed("ibv_rc_pingpong") || ::geteuid() != 0) {
    GTEST_SKIP() << "needs tcpdump, ibv_rc_pingpong and root";
  }
  auto capture = [&](const std::string& gso, const std::string& file) {
    std::string uroce = preload() + " UROCE_GSO=" + gso + " UROCE_STATS=1 " + testing::uroce_binary() + " run --wire ";
    // The programs start once tcpdump says it listens (at most 10 s).
    return run_shell("(timeout 30 tcpdump -i lo -U -w " + file + " 'udp port 4791 and host 127.0.8.207' 2>" + file +
                     ".log & for i in $(seq 100); do grep -q listening " + file + ".log && break; sleep 0.1; done; " +
                     uroce + "--address 127.0.8.207 -- ibv_rc_pingpong -g 1 -p 19601 -s 16384 -n 20 & "
                     "sleep 0.5; " + uroce + "--address 127.0.8.208 -- ibv_rc_pingpong -g 1 -p 19601 -s 16384 -n 20 "
                     "127.0.8.207; client=$?; wait %2; server=$?; sleep 0.5; kill %1; wait %1; "
                     "echo \"exit $client $server\") 2>&1");
  };
  std::string dir = ::testing::TempDir();
  auto batched = capture("1", dir + "/batched.pcap");
  ASSERT_NE(batched.output.find("exit 0 0"), std::string::npos) << batched.output;
  EXPECT_TRUE(std::regex_search(batched.output, std::regex("GSO sends [1-9]"))) << batched.output;
  auto plain = capture("0", dir + "/plain.pcap");
  ASSERT_NE(plain.output.find("exit 0 0"), std::string::npos) << plain.output;
  EXPECT_TRUE(std::regex_search(plain.output, std::regex("GSO sends 0;"))) << plain.output;
  EXPECT_FALSE(std::regex_search(plain.output, std::regex("GSO sends [1-9]"))) << plain.output;
  auto decoded = run_uroce("decode " + dir + "/plain.pcap");
  EXPECT_EQ(decoded.exit_code, 0) << decoded.output;
  EXPECT_NE(decoded.output.find("RC SEND_FIRST"), std::string::npos) << decoded.output;
  EXPECT_EQ(decoded.output.find("BAD"), std::string::npos) << decoded.output;
  auto batched_decoded = run_uroce("decode " + dir + "/batched.pcap");
  EXPECT_NE(batched_decoded.output.find("BAD"), std::string::npos) << "GSO runs were expected in the default capture\n"
                                                                   << batched_decoded.output;
  for (const char* name : {"/batched.pcap", "/plain.pcap", "/batched.pcap.log", "/plain.pcap.log"}) {
    std::remove((dir + name).c_str());
  }
}

}  // namespace
}  // namespace uroce
