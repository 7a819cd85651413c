// perftest's output for `uroce perf`: the banner, the bandwidth and latency
// tables column for column, and the statistics behind their rows.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/oob_exchange.h"
#include "tools/uroce/perf_options.h"

namespace uroce::tools {

using PerfClock = std::chrono::steady_clock;

std::string table_rule();
void print_banner(const PerfOptions& options, bool server, std::uint32_t mtu, const runtime::QpConnectionInfo& local,
                  const runtime::QpConnectionInfo& remote);
std::string table_header(const PerfOptions& options);

// A bandwidth row from the completion times of every message (all QPs).
// Peak: the best rate over any stretch of at least 1/16 of the run (shorter
// stretches would only measure how completions bunch up behind one ACK).
std::string bandwidth_row(const std::vector<PerfClock::time_point>& done, PerfClock::time_point start,
                          std::uint32_t size, std::uint64_t iterations, bool gbits);

// A latency row from each iteration's time in microseconds (sorted in place):
// min, max, typical (median), average, standard deviation, 99% and 99.9%.
std::string latency_row(std::vector<double>& usec, std::uint32_t size);

}  // namespace uroce::tools
