// The event queue runs events in time order; events at the same time in an
// order drawn from their handlers, and one handler's in the order they were
// scheduled, wherever they wait: in the calendar's current bucket, a later
// one, or beyond its ring.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
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

// Which handler happened to schedule first does not decide the order of
// events at one instant (that is what lets partitions run apart), and no
// handler always goes first either: the order is drawn anew at each
// instant, from the handlers, the time and the salt.
TEST(EventQueue, EventsAtOneInstantRunInAnOrderDrawnFromTheirHandlersNotFromSchedulingOrder) {
  struct Named final : EventHandler {
    std::vector<int>* log;
    int name;
    Named(std::vector<int>* l, int n) : log(l), name(n) {}
    void on_event(SimTime, std::uint32_t) override { log->push_back(name); }
  };
  std::vector<int> log;
  Named first(&log, 1);
  Named second(&log, 2);
  Named third(&log, 3);
  auto order_at = [&](SimTime at, std::uint64_t salt, const std::vector<Named*>& scheduling) {
    EventQueue queue;
    queue.set_order_basis(salt, 0);
    for (Named* handler : scheduling) queue.schedule(at, handler);
    queue.run_until(at);
    std::vector<int> seen = log;
    log.clear();
    return seen;
  };
  std::set<std::vector<int>> orders;
  for (SimTime at = 1000; at < 1100; ++at) {
    std::vector<int> one = order_at(at, 7, {&first, &second, &third});
    EXPECT_EQ(order_at(at, 7, {&third, &first, &second}), one);
    EXPECT_EQ(order_at(at, 7, {&second, &third, &first}), one);
    orders.insert(one);
  }
  EXPECT_EQ(orders.size(), 6u);  // every order of three, over 100 instants
  std::set<std::vector<int>> salted;
  for (std::uint64_t salt = 0; salt < 100; ++salt) salted.insert(order_at(5000, salt, {&first, &second, &third}));
  EXPECT_EQ(salted.size(), 6u);
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

// Every event, when it runs, schedules a few more at a random distance:
// within its own bucket (tens of ps), a frame or a hop away (hundreds of ns
// to microseconds), at the same instant, or a timeout milliseconds ahead.
// The queue must run them exactly as sorting (time, scheduling order) does.
struct Spawner final : EventHandler {
  EventQueue* queue = nullptr;
  std::uint64_t random = 7;
  std::uint32_t scheduled = 0;
  std::uint32_t budget = 0;
  std::vector<std::tuple<SimTime, std::uint32_t>> expected;  // (time, tag): tags count in scheduling order
  std::vector<std::tuple<SimTime, std::uint32_t>> seen;

  void add(SimTime at) {
    if (at < queue->now()) at = queue->now();
    expected.emplace_back(at, scheduled);
    queue->schedule(at, this, scheduled++);
  }
  void on_event(SimTime now, std::uint32_t tag) override {
    seen.emplace_back(now, tag);
    for (int i = 0; i < 3 && scheduled < budget; ++i) {
      std::uint64_t draw = splitmix64(random);
      switch (draw % 5) {
        case 0: add(now); break;
        case 1: add(now + static_cast<SimTime>(draw >> 40) % 1000); break;
        case 2: add(now + static_cast<SimTime>(draw >> 20) % 2'000'000); break;
        case 3: add(now + static_cast<SimTime>(draw >> 20) % 40'000'000); break;
        default: add(now + static_cast<SimTime>(draw >> 20) % 5'000'000'000); break;
      }
    }
  }
};

TEST(EventQueue, RunsEventsScheduledWhileRunningInExactOrderNearAndFar) {
  EventQueue queue;
  Spawner spawner;
  spawner.queue = &queue;
  spawner.budget = 200'000;
  spawner.add(0);
  spawner.add(3'000'000'000);  // a lone far event: the ring empties before it
  std::size_t runs = 0;
  while (!queue.empty()) {
    SimTime next = queue.next_time();
    queue.run_next();
    ASSERT_EQ(std::get<0>(spawner.seen.back()), next);
    ++runs;
  }
  std::vector<std::tuple<SimTime, std::uint32_t>> expected = spawner.expected;
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(runs, expected.size());
  EXPECT_EQ(spawner.seen, expected);
  EXPECT_EQ(queue.next_time(), kSimNever);
}

}  // namespace
}  // namespace uroce::sim
