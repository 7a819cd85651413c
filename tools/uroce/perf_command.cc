// `uroce perf`: the command line (perftest's flags) and the run of one side.
#include "tools/uroce/perf_command.h"

#include <memory>

#include <fmt/format.h>

#include "tools/uroce/perf_session.h"

namespace uroce::tools {

void add_perf_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<PerfOptions>();
  CLI::App* perf = app.add_subcommand("perf", "perftest's tests between two uroce devices");
  perf->add_option("test", options->test, "write_bw, write_lat, read_bw, read_lat, send_bw, send_lat, atomic_bw or atomic_lat")
      ->required()
      ->check(CLI::IsMember({"write_bw", "write_lat", "read_bw", "read_lat", "send_bw", "send_lat", "atomic_bw",
                             "atomic_lat"}));
  perf->add_option("server", options->server, "The server's address (omit to be the server)");
  perf->add_option("--bind", options->bind, "This side's local address (its device binds UDP 4791 there)")->required();
  perf->add_option("--interface", options->interface,
                   "Use the raw Ethernet port on this interface (needs CAP_NET_RAW; IPv4) instead of a UDP socket");
  perf->add_option("-s,--size", options->size, "Message size in bytes (default 65536, latency tests 2, atomics 8)")
      ->check(CLI::Range(1u, 1u << 30));
  perf->add_flag("-a,--all", options->all_sizes, "Every power of two from 2 B to 8 MiB");
  perf->add_option("-n,--iters", options->iterations, "Messages per size (default 5000, latency tests 1000)")
      ->check(CLI::Range(1ull, 1ull << 40));
  perf->add_option("-D,--duration", options->duration_s, "Run each size for this many seconds instead of -n")
      ->check(CLI::Range(1u, 3600u));
  perf->add_option("-q,--qp", options->qps, "QPs (bandwidth tests)")->check(CLI::Range(1u, 64u));
  perf->add_option("-m,--mtu", options->mtu, "Path MTU in bytes (at most what the link carries)")->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}));
  perf->add_option("-p,--port", options->tcp_port, "TCP port of the connection exchange");
  perf->add_option("--udp-port", options->udp_port, "UDP port of both devices (RoCEv2: 4791)");
  perf->add_option("-t,--tx-depth", options->tx_depth, "Work requests in flight per QP")->check(CLI::Range(1u, 4096u));
  perf->add_option("-r,--rx-depth", options->rx_depth, "Receives kept posted per QP (SEND tests)")
      ->check(CLI::Range(1u, 4096u));
  perf->add_flag("--report_gbits", options->report_gbits, "Report Gb/sec instead of MiB/sec");
  perf->add_flag("--verify", options->verify, "Check every byte that arrived");
  perf->add_flag("--selective-repeat", options->selective_repeat,
                 "Selective-repeat loss recovery instead of go-back-N (give it on both sides)");
  perf->add_option("--multipath", options->multipath_evs,
                   "Spray each QP's packets over this many entropy values (UDP source ports), MRC-style; needs "
                   "--selective-repeat (give both on both sides)")
      ->check(CLI::Range(2, 4096));
  perf->add_flag("--progress-thread", options->progress_thread,
                 "Move packets on a progress thread instead of in the polling loops");
  perf->add_flag("--local", options->local_path,
                 "Take the intra-host path (shared memory) to a peer on this host instead of UDP (give it on both sides)");
  perf->add_flag("--shared-mr", options->shared_region,
                 "Register the buffer as a shared region: SENDs, WRITEs and READs longer than an MTU go to a --local "
                 "peer as one packet naming their bytes, which the peer copies itself (give it on both sides, as "
                 "UROCE_SHARED_MR=1 does for the library)")
      ->needs("--local");
  perf->add_option("--timeout", options->timeout_s, "Seconds to wait for the peer at each step")->check(CLI::Range(1, 3600));
  perf->callback([options, &exit_status] {
    if (options->latency() && options->qps > 1) throw CLI::ValidationError("-q", "latency tests run on one QP");
    if (options->iterations && options->duration_s > 0) throw CLI::ValidationError("-D", "give -n or -D, not both");
    if (options->multipath_evs != 0 && !options->selective_repeat) {
      throw CLI::ValidationError("--multipath", "needs --selective-repeat");
    }
    exit_status = run_perf(*options);
  });
}

int run_perf(const PerfOptions& options) {
  try {
    PerfSession session(options);
    if (session.is_server()) {
      run_server(session);
    } else {
      run_client(session);
    }
    return 0;
  } catch (const PerfError& error) {
    fmt::print(stderr, "uroce perf {}: {}\n", options.test, error.what());
    return 1;
  }
}

}  // namespace uroce::tools
