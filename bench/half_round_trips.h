// Half round trips of a ping-pong, timed and summed up: the measuring loop
// the bench ping-pong programs share (udp_pingpong, port_pingpong), and
// the summary they and shm_floor print.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace uroce::bench {

struct HalfTrips {
  double median = 0;
  double average = 0;
  double p99 = 0;
};

// Median, average and 99th percentile (nearest rank) of a non-empty set.
inline HalfTrips summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double value : values) sum += value;
  return {values[values.size() / 2], sum / static_cast<double>(values.size()), values[values.size() * 99 / 100]};
}

// Runs round_trip(round) for rounds 1, 2, ... and sums up the half of each
// in microseconds; the first 100 warm up and are not counted.
template <typename RoundTrip>
HalfTrips time_half_trips_us(int iterations, RoundTrip round_trip) {
  constexpr int kWarmUp = 100;
  std::vector<double> half_trips;
  half_trips.reserve(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations + kWarmUp; ++i) {
    auto start = std::chrono::steady_clock::now();
    round_trip(static_cast<std::uint32_t>(i + 1));
    std::chrono::duration<double, std::micro> trip = std::chrono::steady_clock::now() - start;
    if (i >= kWarmUp) half_trips.push_back(trip.count() / 2);
  }
  return summarize(std::move(half_trips));
}

}  // namespace uroce::bench
