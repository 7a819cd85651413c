// ReorderBuffer and SackScoreboard: fixed rings indexed by PSN modulo the
// window, so holding and marking never allocate after warm-up. Each ring is
// allocated at its first use: most QPs of a large collective only send or
// only receive, and never hold or mark at all.
#include "transport/selective_repeat.h"

#include <algorithm>

#include "transport/psn.h"

namespace uroce::transport {

ReorderBuffer::ReorderBuffer(std::uint32_t window) : window_(std::max<std::uint32_t>(window, 1)) {}

bool ReorderBuffer::hold(std::uint32_t psn, std::uint32_t expected, ByteSpan packet, std::size_t keep) {
  std::int32_t ahead = psn_diff(psn, expected);
  if (ahead <= 0 || ahead >= static_cast<std::int32_t>(window_)) return false;
  if (slots_.empty()) slots_.resize(std::min<std::size_t>(window_, kFirstSlots));
  while (slots_.size() < window_) {
    Slot& taken = slots_[psn % slots_.size()];
    if (!taken.used || taken.psn == psn) break;
    std::int32_t taken_ahead = psn_diff(taken.psn, expected);
    if (taken_ahead <= 0 || taken_ahead >= static_cast<std::int32_t>(window_)) {  // out of the window: free
      taken.used = false;
      --held_;
      break;
    }
    grow(expected);
  }
  Slot& slot = slots_[psn % slots_.size()];
  if (slot.used && slot.psn == psn) return false;
  if (!slot.used) ++held_;
  slot.used = true;
  slot.psn = psn;
  slot.length = static_cast<std::uint32_t>(packet.size());
  slot.bytes.assign(packet.begin(), packet.begin() + static_cast<std::ptrdiff_t>(std::min(keep, packet.size())));
  return true;
}

void ReorderBuffer::grow(std::uint32_t expected) {
  std::vector<Slot> old = std::move(slots_);
  std::size_t size = old.size();
  bool clash = true;
  while (clash) {
    size = std::min<std::size_t>(size * 2, window_);
    slots_.clear();
    slots_.resize(size);
    held_ = 0;
    clash = false;
    for (Slot& kept : old) {
      std::int32_t ahead = psn_diff(kept.psn, expected);
      if (!kept.used || ahead <= 0 || ahead >= static_cast<std::int32_t>(window_)) continue;
      Slot& slot = slots_[kept.psn % size];
      if (slot.used && size < window_) {
        clash = true;
        break;
      }
      if (!slot.used) ++held_;
      slot.used = true;
      slot.psn = kept.psn;
      slot.length = kept.length;
      slot.bytes = kept.bytes;
    }
  }
}

std::uint32_t ReorderBuffer::held_length(std::uint32_t psn) const {
  if (held_ == 0) return 0;
  const Slot& slot = slots_[psn % slots_.size()];
  return slot.used && slot.psn == psn ? slot.length : 0;
}

std::optional<ByteSpan> ReorderBuffer::find(std::uint32_t psn) const {
  if (held_ == 0) return std::nullopt;
  const Slot& slot = slots_[psn % slots_.size()];
  if (!slot.used || slot.psn != psn) return std::nullopt;
  return ByteSpan(slot.bytes);
}

void ReorderBuffer::release(std::uint32_t from, std::uint32_t to) {
  std::int32_t count = std::min<std::int32_t>(psn_diff(to, from), static_cast<std::int32_t>(window_));
  for (std::int32_t i = 0; i < count && held_ > 0; ++i) {
    std::uint32_t psn = psn_add(from, i);
    Slot& slot = slots_[psn % slots_.size()];
    if (slot.used && slot.psn == psn) {
      slot.used = false;
      --held_;
    }
  }
}

void ReorderBuffer::clear() {
  for (Slot& slot : slots_) slot.used = false;
  held_ = 0;
}

SackScoreboard::SackScoreboard(std::uint32_t window) : window_(std::max<std::uint32_t>(window, 1)) {}

void SackScoreboard::mark(std::uint32_t psn) {
  if (marks_.empty()) marks_.assign(window_, 0);
  std::uint32_t& slot = marks_[psn % window_];
  if (slot == 0) ++marked_count_;
  slot = psn + 1;
}

bool SackScoreboard::marked(std::uint32_t psn) const { return marked_count_ != 0 && marks_[psn % window_] == psn + 1; }

void SackScoreboard::unmark(std::uint32_t psn) {
  if (!marked(psn)) return;
  marks_[psn % window_] = 0;
  --marked_count_;
}

void SackScoreboard::forget_before(std::uint32_t old_unacked, std::uint32_t new_unacked) {
  std::int32_t count = std::min<std::int32_t>(psn_diff(new_unacked, old_unacked), static_cast<std::int32_t>(window_));
  for (std::int32_t i = 0; i < count; ++i) {
    std::uint32_t psn = psn_add(old_unacked, i);
    unmark(psn);
  }
}

void SackScoreboard::catch_up(std::uint32_t unacked) {
  if (psn_before(next_, unacked)) next_ = unacked;
  if (psn_before(end_, unacked)) end_ = unacked;
}

void SackScoreboard::clear() {
  std::fill(marks_.begin(), marks_.end(), 0);
  marked_count_ = 0;
  next_ = end_;
}

void SackScoreboard::reset(std::uint32_t psn) {
  std::fill(marks_.begin(), marks_.end(), 0);
  marked_count_ = 0;
  next_ = end_ = psn;
}

void SackScoreboard::recover(std::uint32_t from, std::uint32_t end) {
  if (psn_before(next_, from)) next_ = from;
  if (psn_before(end_, end)) end_ = end;
}

void SackScoreboard::restart(std::uint32_t from, std::uint32_t end) {
  next_ = from;
  if (psn_before(end_, end)) end_ = end;
}

bool SackScoreboard::recovering() const { return psn_before(next_, end_); }

void SackScoreboard::advance_to(std::uint32_t psn) {
  if (psn_before(next_, psn)) next_ = psn;
}

}  // namespace uroce::transport
