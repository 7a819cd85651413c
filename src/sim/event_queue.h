// The discrete-event core: an event is "call this handler at time t with this
// tag". Events at one picosecond run by the group of their handler (the
// node whose state it touches: a host, a switch; events of two nodes at one
// instant do not touch each other's state, so their order changes nothing
// but which memory is warm, and groups keep a node's events together), then
// within a group in an order drawn anew at each instant from the handlers'
// numbers (handlers are numbered as they are made), the time and a salt
// (the scenario's seed), then by the handler's own count of events
// scheduled onto it. Never by which of two unrelated nodes happened to
// schedule first: a fabric cut into partitions that run on several threads
// (each partition scheduling only onto its own handlers) runs every
// partition's events in the order one queue would, and the results are bit
// for bit those of one core. And never in a fixed order of a node's
// handlers either: two frames that reach a switch at one instant on two
// ports are taken in an order that changes from instant to instant, as an
// arbiter's would (with per-packet spraying, a fixed order sent every flow
// of a synchronized start down the same spine each time).
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
  static constexpr std::uint32_t kNoGroup = UINT32_MAX;

  virtual void on_event(SimTime now, std::uint32_t tag) = 0;
  // How many handlers this thread has made so far.
  static std::uint32_t ids_made();
  // Numbers count handlers this thread did not make: a rank that leaves out
  // another rank's nodes skips their handlers' numbers, so that every
  // handler it does make has the number one process gives it.
  static void skip_ids(std::uint32_t count);
  // The node this handler's events act on (see the top of the file).
  void set_event_group(std::uint32_t group) { group_ = group; }

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
  // Counts this handler's next event (see the top of the file).
  std::uint32_t next_sequence() { return sequenced_ ? scheduled_++ : 0u; }

  const void* next_read_ = nullptr;
  std::uint32_t id_;
  std::uint32_t scheduled_ = 0;
  std::uint32_t group_ = kNoGroup;
  bool sequenced_;
};

class EventQueue {
 public:
  EventQueue();

  void schedule(SimTime at, EventHandler* target, std::uint32_t tag = 0);
  // What the order of events at one picosecond is drawn from: a salt that
  // varies it (the seed), and the number of the run's first handler
  // (EventHandler::ids_made() before it made any), so that a run's order
  // does not depend on what the thread made before. Every queue of a run
  // must have the same basis.
  void set_order_basis(std::uint64_t salt, std::uint32_t first_id) {
    salt_ = salt;
    first_id_ = first_id;
  }
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
    std::uint64_t order;  // the handler's group, then its number scrambled for `at` (one to one)
    EventHandler* target;
    std::uint32_t tag;
    std::uint32_t sequence;  // among the handler's own events
    bool before(const Entry& other) const {
      if (at != other.at) return at < other.at;
      return order != other.order ? order < other.order : sequence < other.sequence;
    }
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
  std::uint64_t salt_ = 0;
  std::uint32_t first_id_ = 0;
  std::uint64_t events_run_ = 0;
  SimTime now_ = 0;
};

}  // namespace uroce::sim
