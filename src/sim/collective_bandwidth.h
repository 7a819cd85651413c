// The bandwidth figures nccl-tests reports for a collective, so simulated
// collectives read like measured ones (nccl-tests' doc/PERFORMANCE.md):
// algbw is the collective's size over the time taken; busbw scales it by the
// share of the data each rank must move (collective::bus_factor: 2 (n - 1)
// / n for an all-reduce, (n - 1) / n for the others), so that it compares
// with a link's bandwidth whatever the rank count.
#pragma once

#include <cstdint>

#include "collective/schedule.h"
#include "sim/sim_time.h"

namespace uroce::sim {

struct CollectiveBandwidth {
  double algbw_gb_per_s = 0;  // GB/s, 10^9 bytes
  double busbw_gb_per_s = 0;
};

inline CollectiveBandwidth collective_bandwidth(collective::Operation operation, std::uint64_t bytes,
                                                std::uint32_t ranks, SimTime time) {
  if (time <= 0 || ranks == 0) return {};
  double seconds = static_cast<double>(time) / static_cast<double>(kPicosecondsPerSecond);
  double algbw = static_cast<double>(bytes) / seconds / 1e9;
  return {algbw, algbw * collective::bus_factor(operation, ranks)};
}

}  // namespace uroce::sim
