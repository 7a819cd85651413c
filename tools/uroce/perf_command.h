// `uroce perf TEST [--bind ADDR] [SERVER]`: perftest's bandwidth tests on
// uroce devices. Without SERVER it waits as the server; with it, it connects
// as the client. Both print perftest's table; --verify checks every byte.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace uroce::tools {

struct PerfOptions {
  std::string test;     // write_bw or read_bw
  std::string bind;     // local address of this side's device
  std::string server;   // empty: act as the server
  std::uint32_t size = 65536;
  bool all_sizes = false;  // -a: 2 B .. 8 MiB
  std::uint64_t iterations = 5000;
  std::uint32_t mtu = 4096;
  std::uint16_t tcp_port = 18515;
  std::uint16_t udp_port = 4791;
  std::uint32_t tx_depth = 128;
  bool report_gbits = false;
  bool verify = false;
  bool progress_thread = false;  // client: a progress thread instead of progress from the polling loop
  int timeout_s = 60;  // how long to wait for the peer at each step
};

void add_perf_command(CLI::App& app, int& exit_status);
int run_perf(const PerfOptions& options);

}  // namespace uroce::tools
