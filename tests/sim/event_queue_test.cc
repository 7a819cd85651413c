// The event queue runs events in time order, and events at the same time in
// the order they were scheduled, whatever the heap's shape.
#include <gtest/gtest.h>

#include <vector>

#include "sim/event_queue.h"
#include "sim/mix.h"

namespace uroce::sim {
namespace {

struct Recorder final : EventHandler {
  std::vector<std::pair<SimTime, std::uint32_t>> seen;
  void on_event(SimTime now, std::uint32_t tag) override { seen.emplace_back(now, tag); }
};

TEST(EventQueue, RunsByTimeThenBySchedulingOrder) {
  EventQueue queue;
  Recorder recorder;
  std::uint64_t random = 42;
  for (std::uint32_t tag = 0; tag < 10'000; ++tag) {
    queue.schedule(static_cast<SimTime>(splitmix64(random) % 500), &recorder, tag);
  }
  while (!queue.empty()) queue.run_next();
  ASSERT_EQ(recorder.seen.size(), 10'000u);
  for (std::size_t i = 1; i < recorder.seen.size(); ++i) {
    auto [time_before, tag_before] = recorder.seen[i - 1];
    auto [time, tag] = recorder.seen[i];
    ASSERT_LE(time_before, time);
    if (time_before == time) {
      ASSERT_LT(tag_before, tag);  // tags were handed out in scheduling order
    }
  }
  EXPECT_EQ(queue.events_run(), 10'000u);
}

TEST(EventQueue, NeverRunsAnEventInThePast) {
  EventQueue queue;
  Recorder recorder;
  queue.schedule(1000, &recorder, 1);
  queue.run_next();
  queue.schedule(10, &recorder, 2);  // already past: runs now
  queue.run_until(5000);
  ASSERT_EQ(recorder.seen.size(), 2u);
  EXPECT_EQ(recorder.seen[1].first, 1000);
}

}  // namespace
}  // namespace uroce::sim
