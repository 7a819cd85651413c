// libFuzzer target: a flow-size CDF file ("bytes,fraction" lines). Whatever
// is accepted must sample sizes of at least one byte that never fall outside
// the CDF's range, for any draw in [0, 1).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/flow_size_cdf.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto cdf = uroce::sim::FlowSizeCdf::parse_csv(std::string(reinterpret_cast<const char*>(data), size));
  if (!cdf) return 0;
  const double largest = cdf->points().back().bytes;
  for (double u : {0.0, 1e-9, 0.25, 0.5, 0.999999, 0.9999999999}) {
    std::uint64_t bytes = cdf->sample(u);
    if (bytes < 1 || static_cast<double>(bytes) > largest + 1) std::abort();
  }
  double mean = cdf->mean_bytes();
  if (!(mean >= 0) || mean > largest + 1) std::abort();
  return 0;
}
