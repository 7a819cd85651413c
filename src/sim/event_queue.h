// The discrete-event core: an event is "call this handler at time t with this
// tag". Events run in (time, handler, handler's scheduling order): handlers
// are numbered as they are made, and each counts the events scheduled onto
// it. The order of two events at one picosecond thus depends on who they are
// for, never on which of two unrelated nodes happened to schedule first, so
// a fabric cut into partitions that run on several threads (each partition
// scheduling only onto its own handlers) runs every partition's events in
// the order one queue would: the results are bit for bit those of one core.
//
// The queue is a calendar: a ring of buckets a fixed slice of time wide
// covering the next few microseconds, where nearly every event of a fabric
// lands (a frame's end, its arrival one hop later). Scheduling appends to a
// bucket; a bucket is sorted once when time reaches it. Events beyond the
// ring (timeouts) wait in a heap and join their bucket when it comes up.
// At thousands of hosts this keeps the queue's work in cache, where a heap
// of every pending event walked a working set of megabytes per event.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/sim_time.h"

namespace uroce::sim {

class EventHandler {
 public:
  virtual void on_event(SimTime now, std::uint32_t tag) = 0;

 protected:
  // sequenced = false: the handler's events at one picosecond are all alike
  // (a wire's arrivals), so they are not counted; a handler whose events
  // are scheduled from another partition must be one.
  explicit EventHandler(bool sequenced = true);
  EventHandler(const EventHandler&) = delete;
  EventHandler& operator=(const EventHandler&) = delete;
  ~EventHandler() = default;
  // What this handler's next event will read first, where it knows (a
  // link's oldest frame on the wire): the queue starts loading it an event
  // ahead. Only a hint, never dereferenced: a stale one costs a wasted load.
  void hint_next_read(const void* memory) { next_read_ = memory; }

 private:
  friend class EventQueue;
  // This handler's next event's place among those at one picosecond.
  std::uint64_t next_order() { return (std::uint64_t{id_} << 32) | (sequenced_ ? scheduled_++ : 0u); }

  const void* next_read_ = nullptr;
  std::uint32_t id_;
  std::uint32_t scheduled_ = 0;
  bool sequenced_;
};

class EventQueue {
 public:
  EventQueue();

  void schedule(SimTime at, EventHandler* target, std::uint32_t tag = 0);
  bool empty() const { return pending_ == 0; }
  // The time of the earliest event (kSimNever when there is none).
  SimTime next_time();
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
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const { return b.before(a); }
  };
  // Makes the earliest event the head of the current bucket or of late_.
  void settle();
  // Moves to the next bucket with events (or to the far heap's first).
  void advance();
  // After settle: whether the current bucket's head, not late_'s, runs next.
  bool current_runs_first() const;
  void prefetch_ahead() const;

  // 2^16 ps (65.5 ns) per bucket, 64 buckets: 4.2 us ahead, past a frame's
  // end and its arrival over a 1 us hop.
  static constexpr int kBucketShift = 16;
  static constexpr std::size_t kBuckets = 64;
  static constexpr SimTime kBucketWidth = SimTime{1} << kBucketShift;
  static constexpr std::size_t kBucketKeptEntries = 4096;
  static constexpr SimTime kRingSpan = kBucketWidth * static_cast<SimTime>(kBuckets);
  static std::size_t slot_of(SimTime at) { return static_cast<std::size_t>(at >> kBucketShift) % kBuckets; }

  std::vector<std::vector<Entry>> buckets_;  // future buckets of the ring, unsorted
  std::vector<Entry> current_;               // the current bucket, sorted; run from current_next_
  std::size_t current_next_ = 0;
  std::vector<Entry> late_;                  // scheduled into the current bucket after it was sorted (a heap)
  std::vector<Entry> far_;                   // beyond the ring (a heap)
  SimTime current_start_ = 0;                // the current bucket covers [start, start + width)
  std::size_t in_ring_ = 0;                  // events in buckets_
  std::size_t pending_ = 0;
  std::uint64_t events_run_ = 0;
  SimTime now_ = 0;
};

}  // namespace uroce::sim
