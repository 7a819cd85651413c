// Selective repeat (LossRecovery::selective_repeat, after IRN): the responder
// keeps packets that arrive ahead of a gap in a ReorderBuffer and reports each
// one to the requester; the requester records those reports in a
// SackScoreboard and resends only the PSNs nobody reported.
//
// On the wire a report is a PSN-sequence-error NAK whose BTH PSN is the
// responder's expected PSN (the cumulative acknowledgement) and whose AETH MSN
// field carries the PSN that arrived out of order. Both ends of a connection
// must be configured for selective repeat; go-back-N stays the default.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/bytes.h"

namespace uroce::transport {

// Out-of-order packets (BTH to ICRC, already ICRC-checked) by PSN.
class ReorderBuffer {
 public:
  explicit ReorderBuffer(std::uint32_t window);

  // Keeps a copy of the packet at psn if it lies within the window after
  // expected and is not held already; returns whether it was newly kept.
  // Only its first `keep` bytes are copied (an engine that carries no
  // payload keeps the headers; so does direct placement, which wrote the
  // payload to memory already), and its whole length is noted.
  bool hold(std::uint32_t psn, std::uint32_t expected, ByteSpan packet, std::size_t keep = SIZE_MAX);
  // The held packet at psn (the bytes kept), if any (valid until the slot is released).
  std::optional<ByteSpan> find(std::uint32_t psn) const;
  // The held packet's whole length (0 if none is held at psn).
  std::uint32_t held_length(std::uint32_t psn) const;
  // Frees the slots of PSNs [from, to): the responder has moved past them.
  void release(std::uint32_t from, std::uint32_t to);
  void clear();
  std::size_t held() const { return held_; }

 private:
  struct Slot {
    bool used = false;
    std::uint32_t psn = 0;
    std::uint32_t length = 0;         // the packet's, of which bytes may be the start
    std::vector<std::uint8_t> bytes;  // keeps its capacity for the next packet
  };
  // Doubles the slots (up to the window), keeping the packets within the
  // window after expected; doubles again while two share a slot.
  void grow(std::uint32_t expected);
  static constexpr std::size_t kFirstSlots = 16;
  std::uint32_t window_;
  // From the first hold(): 16 slots, doubled up to window_ while more
  // packets are held at once (most QPs never hold many).
  std::vector<Slot> slots_;
  std::size_t held_ = 0;
};

// The requester's record of which unacknowledged PSNs the responder holds,
// and the range it is resending.
class SackScoreboard {
 public:
  explicit SackScoreboard(std::uint32_t window);

  // The responder holds psn (a report from a selective NAK).
  void mark(std::uint32_t psn);
  bool marked(std::uint32_t psn) const;
  void unmark(std::uint32_t psn);
  // How many PSNs are marked now.
  std::uint32_t marked_count() const { return marked_count_; }
  // The responder acknowledged [old_unacked, new_unacked): forget those marks.
  void forget_before(std::uint32_t old_unacked, std::uint32_t new_unacked);
  // Nothing before unacked needs resending: keep both ends of the resend
  // range at or after it, so they never drift half the PSN space away and
  // compare the wrong way round. (A READ or atomic may be unfinished behind
  // later acknowledged PSNs; the requester passes its first unfinished PSN.)
  void catch_up(std::uint32_t unacked);
  void clear();

  // Starts afresh at psn: nothing marked, nothing to resend.
  void reset(std::uint32_t psn);

  // The resend range: PSNs in [next, end) not marked are presumed lost and
  // resent once each. recover() widens it from a report but never moves next
  // back, so a packet already resent is not resent again for every later
  // report; restart() (a timeout) goes back to from.
  void recover(std::uint32_t from, std::uint32_t end);
  void restart(std::uint32_t from, std::uint32_t end);
  bool recovering() const;
  std::uint32_t recovery_next() const { return next_; }
  std::uint32_t recovery_end() const { return end_; }
  void advance_to(std::uint32_t psn);

 private:
  std::uint32_t window_;
  std::vector<std::uint32_t> marks_;  // psn + 1 per slot, 0 when empty; window_ of them from the first mark()
  std::uint32_t marked_count_ = 0;
  std::uint32_t next_ = 0;
  std::uint32_t end_ = 0;
};

}  // namespace uroce::transport
