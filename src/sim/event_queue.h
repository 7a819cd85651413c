// The discrete-event core: an event is "call this handler at time t with this
// tag". A 4-ary min-heap ordered by (time, scheduling order), so events at the
// same picosecond run in the order they were scheduled and a run is
// reproducible bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/sim_time.h"

namespace uroce::sim {

class EventHandler {
 public:
  virtual void on_event(SimTime now, std::uint32_t tag) = 0;

 protected:
  ~EventHandler() = default;
};

class EventQueue {
 public:
  void schedule(SimTime at, EventHandler* target, std::uint32_t tag = 0);
  bool empty() const { return heap_.empty(); }
  SimTime next_time() const { return heap_.empty() ? kSimNever : heap_.front().at; }
  SimTime now() const { return now_; }
  std::uint64_t events_run() const { return events_run_; }
  // Runs the earliest event (the queue must not be empty).
  void run_next();
  // Runs events until none is left at or before limit.
  void run_until(SimTime limit);

 private:
  struct Entry {
    SimTime at;
    std::uint64_t order;
    EventHandler* target;
    std::uint32_t tag;
    bool before(const Entry& other) const { return at != other.at ? at < other.at : order < other.order; }
  };
  void sift_up(std::size_t index);
  void sift_down(std::size_t index);

  std::vector<Entry> heap_;
  std::uint64_t next_order_ = 0;
  std::uint64_t events_run_ = 0;
  SimTime now_ = 0;
};

}  // namespace uroce::sim
