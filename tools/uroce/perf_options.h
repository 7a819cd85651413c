// What `uroce perf` was asked to do: the test, this side's role and address,
// and perftest's flags, with perftest's defaults per kind of test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace uroce::tools {

enum class PerfVerb { write, read, send, atomic };

struct PerfOptions {
  std::string test;    // write_bw, write_lat, read_bw, read_lat, send_bw, send_lat, atomic_bw, atomic_lat
  std::string bind;    // local address of this side's device
  std::string interface;  // empty: the UDP port; else the raw Ethernet port on this interface
  std::string server;  // empty: act as the server
  std::optional<std::uint32_t> size;        // -s; default 64 KiB (bandwidth), 2 B (latency), 8 B (atomics)
  bool all_sizes = false;                   // -a: 2 B .. 8 MiB
  std::optional<std::uint64_t> iterations;  // -n; default 5000 (bandwidth), 1000 (latency)
  std::uint32_t duration_s = 0;             // -D: run each size this long instead of -n messages
  std::uint32_t qps = 1;                    // -q
  std::uint32_t mtu = 4096;  // at most what the device's link carries
  std::uint16_t tcp_port = 18515;
  std::uint16_t udp_port = 4791;
  std::uint32_t tx_depth = 128;  // bandwidth tests; latency tests keep one in flight
  std::uint32_t rx_depth = 512;  // SEND tests: receives kept posted per QP
  bool report_gbits = false;
  bool verify = false;
  bool selective_repeat = false;  // uroce's selective-repeat loss recovery instead of go-back-N (both sides)
  std::uint16_t multipath_evs = 0;  // multipath RC over this many EVs (with selective_repeat; both sides)
  bool progress_thread = false;  // move packets on a progress thread instead of in the polling loops
  bool local_path = false;       // shared memory to a peer device on this host instead of the wire
  bool shared_region = false;    // the buffer a shared region (runtime/shared_regions.h), with local_path
  int timeout_s = 60;            // how long to wait for the peer at each step

  PerfVerb verb() const {
    if (test.rfind("write", 0) == 0) return PerfVerb::write;
    if (test.rfind("read", 0) == 0) return PerfVerb::read;
    if (test.rfind("send", 0) == 0) return PerfVerb::send;
    return PerfVerb::atomic;
  }
  bool latency() const { return test.size() > 4 && test.compare(test.size() - 4, 4, "_lat") == 0; }
  std::uint32_t message_size() const {
    if (verb() == PerfVerb::atomic) return 8;
    return size.value_or(latency() ? 2 : 65536);
  }
  std::uint64_t message_count() const { return iterations.value_or(latency() ? 1000 : 5000); }
};

}  // namespace uroce::tools
