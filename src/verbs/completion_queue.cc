// Completion queue ring.
#include "verbs/completion_queue.h"

namespace uroce::verbs {

bool CompletionQueue::push(const WorkCompletion& completion) {
  if (count_ == capacity_) {
    overflowed_ = true;
    return false;
  }
  if (count_ == ring_.size()) grow();
  ring_[(head_ + count_) % ring_.size()] = completion;
  ++count_;
  return true;
}

// Doubles the storage (within capacity), oldest completion first.
void CompletionQueue::grow() {
  std::vector<WorkCompletion> larger(std::min(capacity_, std::max<std::size_t>(1, ring_.size() * 2)));
  for (std::size_t i = 0; i < count_; ++i) larger[i] = ring_[(head_ + i) % ring_.size()];
  ring_ = std::move(larger);
  head_ = 0;
}

bool CompletionQueue::resize(std::uint32_t capacity) {
  if (capacity == 0 || capacity < count_) return false;
  std::vector<WorkCompletion> moved(std::min<std::size_t>(capacity, std::max(count_, kInitialStorage)));
  for (std::size_t i = 0; i < count_; ++i) moved[i] = ring_[(head_ + i) % ring_.size()];
  ring_ = std::move(moved);
  head_ = 0;
  capacity_ = capacity;
  return true;
}

bool CompletionQueue::fires(bool solicited, bool unsuccessful) {
  if (armed_ == Armed::no || (armed_ == Armed::solicited && !solicited && !unsuccessful)) return false;
  armed_ = Armed::no;
  return true;
}

std::size_t CompletionQueue::poll(std::span<WorkCompletion> out) {
  std::size_t taken = 0;
  while (taken < out.size() && count_ > 0) {
    out[taken++] = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
  return taken;
}

std::size_t CompletionQueue::discard_qp(std::uint32_t qp_num) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < count_; ++i) {
    const WorkCompletion& completion = ring_[(head_ + i) % ring_.size()];
    if (completion.qp_num != qp_num) ring_[(head_ + kept++) % ring_.size()] = completion;
  }
  std::size_t dropped = count_ - kept;
  count_ = kept;
  return dropped;
}

bool CompletionQueue::holds(std::uint32_t qp_num) const {
  for (std::size_t i = 0; i < count_; ++i) {
    if (ring_[(head_ + i) % ring_.size()].qp_num == qp_num) return true;
  }
  return false;
}

}  // namespace uroce::verbs
