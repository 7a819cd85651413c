// perftest's tables: banner lines, headers and rows, and the bandwidth and
// latency statistics they report.
#include "tools/uroce/perf_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <fmt/format.h>

namespace uroce::tools {
namespace {

const char* test_title(const PerfOptions& options) {
  switch (options.verb()) {
    case PerfVerb::write: return "RDMA_Write";
    case PerfVerb::read: return "RDMA_Read";
    case PerfVerb::send: return "Send";
    case PerfVerb::atomic: return "Atomic FETCH_AND_ADD";
  }
  return "";
}

double percentile(const std::vector<double>& sorted, double fraction) {
  auto index = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace

std::string table_rule() { return std::string(87, '-'); }

void print_banner(const PerfOptions& options, bool server, std::uint32_t mtu, const runtime::QpConnectionInfo& local,
                  const runtime::QpConnectionInfo& remote) {
  fmt::print("{}\n", table_rule());
  fmt::print("                    {} {} Test ({})\n", test_title(options), options.latency() ? "Latency" : "BW",
             server ? "server" : "client");
  fmt::print(" Number of qps   : {}\t\tTransport type : IB (RoCEv2 {}, uroce)\n", options.qps,
             options.interface.empty() ? "over UDP" : "raw Ethernet on " + options.interface);
  fmt::print(" Connection type : RC\t\tUsing SRQ      : OFF\n");
  fmt::print(" TX depth        : {}\n", options.latency() ? 1 : options.tx_depth);
  if (options.verb() == PerfVerb::send) fmt::print(" RX depth        : {}\n", options.rx_depth);
  fmt::print(" Mtu             : {}[B]\n", mtu);
  fmt::print(" local address: QPN {:#08x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}\n", local.qpn, local.psn,
             local.rkey, local.address);
  fmt::print(" remote address: QPN {:#08x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}\n", remote.qpn, remote.psn,
             remote.rkey, remote.address);
  fmt::print("{}\n{}\n", table_rule(), table_header(options));
  std::fflush(stdout);
}

std::string table_header(const PerfOptions& options) {
  if (options.latency()) {
    return fmt::format(" {:<10} {:<14} {:<14} {:<14} {:<16} {:<14} {:<15} {:<23} {}", "#bytes", "#iterations",
                       "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]",
                       "99% percentile[usec]", "99.9% percentile[usec]");
  }
  const char* unit = options.report_gbits ? "Gb/sec" : "MiB/sec";
  return fmt::format(" {:<10} {:<14} BW peak[{}]    BW average[{}]   MsgRate[Mpps]", "#bytes", "#iterations", unit,
                     unit);
}

std::string bandwidth_row(const std::vector<PerfClock::time_point>& done, PerfClock::time_point start,
                          std::uint32_t size, std::uint64_t iterations, bool gbits) {
  auto seconds = [](PerfClock::duration d) { return std::chrono::duration<double>(d).count(); };
  double total = std::max(seconds(done.back() - start), 1e-9);
  double rate = static_cast<double>(done.size()) / total;  // messages per second
  double best = rate;
  double stretch = total / 16;
  std::size_t j = 0;
  for (std::size_t i = 0; i < done.size(); ++i) {
    while (j < done.size() && seconds(done[j] - done[i]) < stretch) ++j;
    if (j == done.size()) break;
    best = std::max(best, static_cast<double>(j - i) / seconds(done[j] - done[i]));
  }
  double per_message = gbits ? size * 8 / 1e9 : size / 1048576.0;
  return fmt::format(" {:<10} {:<14} {:<18.2f} {:<20.2f} {:.6f}", size, iterations, best * per_message,
                     rate * per_message, rate / 1e6);
}

std::string latency_row(std::vector<double>& usec, std::uint32_t size) {
  std::sort(usec.begin(), usec.end());
  double count = static_cast<double>(usec.size());
  double average = std::accumulate(usec.begin(), usec.end(), 0.0) / count;
  double variance = 0;
  for (double value : usec) variance += (value - average) * (value - average);
  double stdev = std::sqrt(variance / count);
  return fmt::format(" {:<10} {:<14} {:<14.2f} {:<14.2f} {:<16.2f} {:<14.2f} {:<15.2f} {:<23.2f} {:.2f}", size,
                     usec.size(), usec.front(), usec.back(), percentile(usec, 0.5), average, stdev,
                     percentile(usec, 0.99), percentile(usec, 0.999));
}

}  // namespace uroce::tools
