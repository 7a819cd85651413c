// The 4-ary heap behind EventQueue: shallower than a binary heap, and a
// node's four children share a cache line or two.
#include "sim/event_queue.h"

namespace uroce::sim {

namespace {
constexpr std::size_t kArity = 4;
}

void EventQueue::schedule(SimTime at, EventHandler* target, std::uint32_t tag) {
  heap_.push_back(Entry{at < now_ ? now_ : at, next_order_++, target, tag});
  sift_up(heap_.size() - 1);
}

void EventQueue::run_next() {
  Entry next = heap_.front();
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
  now_ = next.at;
  ++events_run_;
  next.target->on_event(next.at, next.tag);
}

void EventQueue::run_until(SimTime limit) {
  while (!heap_.empty() && heap_.front().at <= limit) run_next();
}

void EventQueue::sift_up(std::size_t index) {
  Entry moving = heap_[index];
  while (index > 0) {
    std::size_t parent = (index - 1) / kArity;
    if (!moving.before(heap_[parent])) break;
    heap_[index] = heap_[parent];
    index = parent;
  }
  heap_[index] = moving;
}

void EventQueue::sift_down(std::size_t index) {
  Entry moving = heap_[index];
  std::size_t size = heap_.size();
  for (;;) {
    std::size_t first = index * kArity + 1;
    if (first >= size) break;
    std::size_t best = first;
    std::size_t last = first + kArity < size ? first + kArity : size;
    for (std::size_t child = first + 1; child < last; ++child) {
      if (heap_[child].before(heap_[best])) best = child;
    }
    if (!heap_[best].before(moving)) break;
    heap_[index] = heap_[best];
    index = best;
  }
  heap_[index] = moving;
}

}  // namespace uroce::sim
