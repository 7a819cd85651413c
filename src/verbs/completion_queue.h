// A completion queue: a fixed-capacity ring of work completions. Overflow is
// never silent: the completion is refused, the queue is marked overflowed and
// the engine raises an error event (as a hardware CQ overrun does).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "uroce/verbs_types.h"

namespace uroce::verbs {

class CompletionQueue {
 public:
  // Storage grows with use, up to capacity: a deep queue that is drained
  // often (thousands of them in a simulation) stays small.
  explicit CompletionQueue(std::uint32_t capacity)
      : ring_(std::min<std::size_t>(capacity, kInitialStorage)), capacity_(capacity) {}

  // False (and overflowed() from then on) when the queue is full.
  bool push(const WorkCompletion& completion);
  // Moves up to out.size() completions, oldest first; returns how many.
  std::size_t poll(std::span<WorkCompletion> out);
  // Drops the completions of one QP, keeping the others' order; how many.
  // A destroyed QP's completions must not surface: their wr_ids point to
  // contexts the application freed with it (mlx4 and mlx5 clean the CQ the
  // same way, and libfabric's rxm relies on it).
  std::size_t discard_qp(std::uint32_t qp_num);
  // Whether any waiting completion is this QP's.
  bool holds(std::uint32_t qp_num) const;
  // ibv_resize_cq: a new capacity, up or down, keeping the waiting
  // completions in order. False (nothing changed) below their number.
  bool resize(std::uint32_t capacity);

  std::size_t size() const { return count_; }
  std::size_t capacity() const { return capacity_; }
  bool overflowed() const { return overflowed_; }
  bool empty() const { return count_ == 0; }

  // Notification (ibv_req_notify_cq): armed for the next completion, or for
  // the next solicited or unsuccessful one. One event per arming.
  void arm(bool solicited_only) { armed_ = solicited_only ? Armed::solicited : Armed::next; }
  // Called with each new completion: true when it fires the armed event
  // (which disarms the queue).
  bool fires(bool solicited, bool unsuccessful);

 private:
  static constexpr std::size_t kInitialStorage = 16;
  void grow();

  std::vector<WorkCompletion> ring_;
  std::size_t capacity_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  bool overflowed_ = false;
  enum class Armed : std::uint8_t { no, next, solicited } armed_ = Armed::no;
};

}  // namespace uroce::verbs
