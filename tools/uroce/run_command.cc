// `uroce run [--address A] [--interface IF] [--progress MODE] [--wire | --shared-mr] -- PROGRAM ARGS`: puts uroce's
// libibverbs.so.1 and librdmacm.so.1 first on the program's library path,
// preloads liburoce_sysfs.so (the devices in sysfs and /dev/infiniband, as
// UCX looks for them), says which device address (and port) to use, sets
// UCX's rendezvous threshold for the intra-host path, and replaces itself
// with the program, which runs unchanged: its exit status
// is the program's.
#include "tools/uroce/run_command.h"

#include "tools/uroce/device_addresses.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace uroce::tools {
namespace {

// UCX_RNDV_THRESH between devices that meet through shared memory.
constexpr const char* kIntraHostRendezvousBytes = "32768";

struct RunOptions {
  std::string address;
  std::string address_per_rank;
  std::string interface;
  std::string library_dir;
  std::string progress;
  bool wire = false;
  bool shared_regions = false;
  bool sysfs_view = true;
};

// Through the intra-host path a READ of a long message is one copy straight
// from the peer (docs/guides/intra-host-path.md), so UCX's rendezvous (a
// READ) pays from 32 KiB, where its own choice on a device it takes for a
// NIC starts at about 512 KiB: on 2 ranks on 2 cores MPI_Allreduce of 128
// to 512 KiB took about half the time. Not with more local MPI ranks than
// cores: a rendezvous waits a round trip for a rank that may not be
// running, and 4 ranks on 2 cores took up to twice as long at 128 KiB
// (docs/benchmarks-log.md). Not on the wire either.
bool intra_host_rendezvous_pays(const RunOptions& options) {
  const char* wire = std::getenv("UROCE_WIRE");
  if (options.wire || !options.interface.empty() || (wire != nullptr && std::string(wire) == "1")) return false;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* ranks = std::getenv(name);
    if (ranks != nullptr && std::atol(ranks) > static_cast<long>(::sysconf(_SC_NPROCESSORS_ONLN))) return false;
  }
  return true;
}

// Where libibverbs.so.1 lies: given, installed beside this binary (bin ->
// lib/uroce), or next to it in the build tree (tools/uroce -> lib). The
// private folder comes first: an installed prefix's lib/ may hold
// rdma-core's own libibverbs.so.1.
std::string find_library_dir(const std::string& given) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  std::vector<fs::path> candidates;
  if (!given.empty()) {
    candidates.push_back(given);
  } else if (!error) {
    candidates = {self.parent_path().parent_path() / "lib" / "uroce", self.parent_path().parent_path() / "lib"};
  }
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "libibverbs.so.1", error)) return fs::absolute(dir, error).string();
  }
  return {};
}

// The launcher's rank of this process: Open MPI's, PMIx's, PMI's or Slurm's.
std::optional<unsigned> launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    unsigned long rank = std::strtoul(value, &end, 10);
    if (*end == '\0' && rank < 65536) return static_cast<unsigned>(rank);
  }
  return std::nullopt;
}

// BASE plus this process's rank, for one device address a rank under mpirun.
std::string rank_address(const std::string& base, std::string& error) {
  in_addr address{};
  if (::inet_pton(AF_INET, base.c_str(), &address) != 1) {
    error = "--address-per-rank needs an IPv4 address, not '" + base + "'";
    return {};
  }
  std::optional<unsigned> rank = launcher_rank();
  if (!rank) {
    error = "--address-per-rank: no rank in the environment (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID)";
    return {};
  }
  address.s_addr = htonl(ntohl(address.s_addr) + *rank);
  char text[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &address, text, sizeof text);
  return text;
}

int run_program(const RunOptions& options, std::vector<std::string> command) {
  if (command.empty()) {
    fmt::print(stderr, "uroce run: no program given (uroce run [--address A] -- PROGRAM ARGS)\n");
    return 2;
  }
  std::string library_dir = find_library_dir(options.library_dir);
  if (library_dir.empty()) {
    fmt::print(stderr, "uroce run: cannot find uroce's libibverbs.so.1{}; build it or give --library-dir\n",
               options.library_dir.empty() ? "" : " in " + options.library_dir);
    return 1;
  }
  const char* existing = std::getenv("LD_LIBRARY_PATH");
  std::string path = existing != nullptr && *existing != '\0' ? library_dir + ":" + existing : library_dir;
  ::setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  // After what is preloaded already (a sanitizer's runtime must stay first).
  std::string sysfs_view = library_dir + "/liburoce_sysfs.so";
  if (options.sysfs_view && std::filesystem::exists(sysfs_view)) {
    const char* preloaded = std::getenv("LD_PRELOAD");
    std::string preload = preloaded != nullptr && *preloaded != '\0' ? std::string(preloaded) + " " + sysfs_view : sysfs_view;
    ::setenv("LD_PRELOAD", preload.c_str(), 1);
  }
  std::string address = options.address;
  if (!options.address_per_rank.empty()) {
    std::string error;
    address = rank_address(options.address_per_rank, error);
    if (address.empty()) {
      fmt::print(stderr, "uroce run: {}\n", error);
      return 2;
    }
  }
  if (auto problem = device_address_problem(address, !options.interface.empty())) {
    fmt::print(stderr, "uroce run: device address {}\n", *problem);
    return 2;
  }
  if (!address.empty()) ::setenv("UROCE_ADDRESS", address.c_str(), 1);
  if (!options.interface.empty()) ::setenv("UROCE_INTERFACE", options.interface.c_str(), 1);
  if (!options.progress.empty()) ::setenv("UROCE_PROGRESS", options.progress.c_str(), 1);
  if (options.wire) ::setenv("UROCE_WIRE", "1", 1);
  if (options.shared_regions) ::setenv("UROCE_SHARED_MR", "1", 1);
  if (intra_host_rendezvous_pays(options)) ::setenv("UCX_RNDV_THRESH", kIntraHostRendezvousBytes, /*overwrite=*/0);
  std::vector<char*> argv;
  for (std::string& argument : command) argv.push_back(argument.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  fmt::print(stderr, "uroce run: cannot run {}: {}\n", command[0], std::strerror(errno));
  return 127;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<RunOptions>();
  auto command = std::make_shared<std::vector<std::string>>();
  CLI::App* run = app.add_subcommand("run", "Run an unmodified RDMA program (ibv_*, perftest ...) on uroce");
  run->add_option("--address", options->address,
                  "The device addresses, comma-separated: uroce0 gets the first (default 127.0.0.1)");
  run->add_option("--address-per-rank", options->address_per_rank,
                  "Under an MPI launcher: the device address is this IPv4 address plus the process's rank")
      ->excludes("--address");
  run->add_option("--interface", options->interface,
                  "Use the raw Ethernet port on this interface (needs CAP_NET_RAW; IPv4)");
  run->add_option("--library-dir", options->library_dir, "Where uroce's libibverbs.so.1 is");
  run->add_option("--progress", options->progress,
                  "Who moves packets (UROCE_PROGRESS): adaptive (default), thread or inline")
      ->check(CLI::IsMember({"adaptive", "thread", "inline"}));
  run->add_flag("--wire", options->wire,
                "Put every datagram on the wire (UROCE_WIRE=1), also between uroce devices on this host, "
                "which otherwise use shared memory");
  run->add_flag("--shared-mr", options->shared_regions,
                "Share registered buffers of whole pages with local peers (UROCE_SHARED_MR=1): SENDs, WRITEs and "
                "READs longer than an MTU between devices on this host are then one copy, not datagrams")
      ->excludes("--wire");
  run->add_flag("!--no-sysfs-view", options->sysfs_view,
                "Do not preload liburoce_sysfs.so, which shows the devices under /sys/class/infiniband and "
                "/dev/infiniband to the program (UCX needs them there)");
  run->add_option("command", *command, "The program and its arguments (after --)")->required();
  run->callback([options, command, &exit_status] { exit_status = run_program(*options, *command); });
}

}  // namespace uroce::tools
