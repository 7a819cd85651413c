// Simulated time: integer picoseconds, so a 64-byte frame at 800 Gb/s (640 ps)
// is exact and a run is the same on every machine.
#pragma once

#include <cstdint>

namespace uroce::sim {

using SimTime = std::int64_t;
inline constexpr SimTime kPicosecondsPerNs = 1000;
inline constexpr SimTime kPicosecondsPerUs = 1'000'000;
inline constexpr SimTime kPicosecondsPerSecond = 1'000'000'000'000;
inline constexpr SimTime kSimNever = INT64_MAX;

// A time in microseconds, for reports.
inline double microseconds(SimTime t) { return static_cast<double>(t) / static_cast<double>(kPicosecondsPerUs); }

// Time to put bytes on a wire of rate_bps, rounded up to a picosecond.
inline SimTime serialization_time(std::uint32_t bytes, std::uint64_t rate_bps) {
  std::uint64_t bit_picoseconds = std::uint64_t{bytes} * 8'000'000'000'000ull;  // < 2^63 for any frame
  return static_cast<SimTime>((bit_picoseconds + rate_bps - 1) / rate_bps);
}

}  // namespace uroce::sim
