// Small deterministic mixers for the simulator: 32- and 64-bit hash
// finalizers (ECMP, the order of simultaneous events) and splitmix64
// (switch and workload randomness from the scenario seed; common/splitmix64.h).
#pragma once

#include <cstdint>

#include "common/splitmix64.h"

namespace uroce::sim {

using uroce::mix64;
using uroce::splitmix64;

inline std::uint32_t mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

// A uniform double in [0, 1).
inline double unit_interval(std::uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

}  // namespace uroce::sim
