// The calendar behind EventQueue: ring buckets, the sorted current bucket,
// the late heap for events scheduled into it while it runs, and the far
// heap for events beyond the ring.
#include "sim/event_queue.h"

#include <algorithm>

#include "sim/mix.h"

namespace uroce::sim {

namespace {

void prefetch_lines(const void* memory, int lines) {
  const char* bytes = static_cast<const char*>(memory);
  for (int line = 0; line < lines; ++line) __builtin_prefetch(bytes + line * 64);
}

// Handlers are numbered in the order a thread makes them; a run counts
// from the number its first handler got (EventQueue::set_order_basis).
thread_local std::uint32_t next_handler_id = 0;

}  // namespace

EventHandler::EventHandler(bool sequenced) : id_(next_handler_id++), sequenced_(sequenced) {}

std::uint32_t EventHandler::ids_made() { return next_handler_id; }

void EventHandler::skip_ids(std::uint32_t count) { next_handler_id += count; }

EventQueue::EventQueue() : buckets_(kBuckets) {}

void EventQueue::schedule(SimTime at, EventHandler* target, std::uint32_t tag) {
  if (at < now_) at = now_;
  // mix32 is one to one: two handlers never draw the same place at an instant.
  auto instant = static_cast<std::uint32_t>(mix64(salt_ ^ static_cast<std::uint64_t>(at)));
  std::uint32_t place = mix32((target->id_ - first_id_) ^ instant);
  Entry entry{at, (std::uint64_t{target->group_} << 32) | place, target, tag, target->next_sequence()};
  ++pending_;
  SimTime current_end = current_start_ + kBucketWidth;
  if (entry.at < current_end) {
    late_.push_back(entry);
    std::push_heap(late_.begin(), late_.end(), Later{});
  } else if (entry.at - current_start_ < kRingSpan) {
    buckets_[slot_of(entry.at)].push_back(entry);
    ++in_ring_;
  } else {
    far_.push_back(entry);
    std::push_heap(far_.begin(), far_.end(), Later{});
  }
}

void EventQueue::advance() {
  if (in_ring_ == 0) {
    // Nothing in the ring: jump to the far heap's first bucket.
    current_start_ = (far_.front().at >> kBucketShift) << kBucketShift;
  } else {
    current_start_ += kBucketWidth;
  }
  current_next_ = 0;
  std::vector<Entry>& bucket = buckets_[slot_of(current_start_)];
  in_ring_ -= bucket.size();
  current_.assign(bucket.begin(), bucket.end());
  // Hosts that start together crowd a few turns of every bucket with
  // thousands of events at one instant; a bucket keeps no more storage than
  // a usual turn needs, or the ring would hold the busiest turn 64 times.
  if (bucket.capacity() > kBucketKeptEntries) {
    std::vector<Entry>().swap(bucket);
  } else {
    bucket.clear();
  }
  SimTime current_end = current_start_ + kBucketWidth;
  while (!far_.empty() && far_.front().at < current_end) {
    std::pop_heap(far_.begin(), far_.end(), Later{});
    current_.push_back(far_.back());
    far_.pop_back();
  }
  std::sort(current_.begin(), current_.end(), [](const Entry& a, const Entry& b) { return a.before(b); });
}

void EventQueue::settle() {
  while (current_next_ == current_.size() && late_.empty()) advance();
}

bool EventQueue::current_runs_first() const {
  return current_next_ < current_.size() && (late_.empty() || current_[current_next_].before(late_.front()));
}

SimTime EventQueue::next_time() {
  if (pending_ == 0) return kSimNever;
  settle();
  return current_runs_first() ? current_[current_next_].at : late_.front().at;
}

void EventQueue::run_next() {
  settle();
  Entry next;
  if (current_runs_first()) {
    next = current_[current_next_++];
    prefetch_ahead();
  } else {
    std::pop_heap(late_.begin(), late_.end(), Later{});
    next = late_.back();
    late_.pop_back();
  }
  --pending_;
  now_ = next.at;
  ++events_run_;
  next.target->on_event(next.at, next.tag);
}

// At thousands of hosts each event's handler, and the frame it reads, are
// cold: somewhere in a working set far beyond the caches. Two events ahead
// the handler starts loading; one event ahead (loaded by then) it names
// what it will read, which starts loading too.
void EventQueue::prefetch_ahead() const {
  if (current_next_ + 1 < current_.size()) prefetch_lines(current_[current_next_ + 1].target, 4);
  if (current_next_ < current_.size()) {
    const void* next_read = current_[current_next_].target->next_read_;
    if (next_read != nullptr) prefetch_lines(next_read, 2);
  }
}

void EventQueue::run_until(SimTime limit) {
  while (!empty() && next_time() <= limit) run_next();
}

}  // namespace uroce::sim
