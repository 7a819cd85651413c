// TransmitBatch: the engine's datagrams batched to the port, the ACK-hold
// policy, and what back-pressure leaves behind.
#include "runtime/transmit_batch.h"

#include <algorithm>

namespace uroce::runtime {
namespace {

// An RC ACKNOWLEDGE (ACK or NAK), which carries no request and no data.
bool is_bare_ack(const DescribedDatagram& datagram) { return datagram.transmit.kind == TransmitKind::acknowledge; }

}  // namespace

TransmitBatch::TransmitBatch(TimeNs ack_hold_ns)
    : slots_(kBatch * kMaxDatagramLength), ack_hold_(ack_hold_ns), longest_ack_hold_(10 * ack_hold_ns) {
  queue_.reserve(kBatch);
  free_slots_.reserve(kBatch);
  for (std::size_t slot = kBatch; slot > 0; --slot) free_slots_.push_back(slot - 1);
}

void TransmitBatch::send_what_is_built(port::Port& port) {
  if (!queue_.empty()) port.send(queue_);
}

// Moves what the engine has to send to the port, a batch at a time, until the
// engine has nothing more or the port pushes back (back_pressured_). Bare
// ACKs may stay queued (AckRelease): a reply the application is about to
// post (a ping-pong's pong) then carries them out behind it, and the peer,
// which polls for that ACK, takes the reply in the same receive.
void TransmitBatch::transmit(Engine& engine, port::Port& port, TimeNs now, AckRelease release) {
  back_pressured_ = false;
  while (true) {
    bool engine_drained = false;
    while (!free_slots_.empty()) {
      std::span<std::uint8_t> slot(slots_.data() + free_slots_.back() * kMaxDatagramLength, kMaxDatagramLength);
      Transmit built = engine.poll_transmit(slot, now);
      if (!built) {
        engine_drained = true;
        break;
      }
      free_slots_.pop_back();
      queue_.push_back(DescribedDatagram{slot.first(built.length), built});
    }
    if (queue_.empty()) return;
    // Bare ACKs go last in the batch: a reply the application just posted
    // then reaches the peer before the ACK for the request it answers.
    // Usually they are last already: one look at each datagram finds that
    // out, where stable_partition would allocate a buffer (on a ping-pong's
    // critical path).
    auto is_request = [](const DescribedDatagram& datagram) { return !is_bare_ack(datagram); };
    auto first_ack = std::find_if_not(queue_.begin(), queue_.end(), is_request);
    if (std::find_if(first_ack, queue_.end(), is_request) != queue_.end()) {
      first_ack = std::stable_partition(first_ack, queue_.end(), is_request);
    }
    std::size_t sendable = queue_.size();
    auto requests = static_cast<std::size_t>(first_ack - queue_.begin());
    if (release != AckRelease::now && engine_drained && requests < sendable) {
      if (acks_held_since_ == kNever) acks_held_since_ = now;
      bool young = now < acks_held_since_ + ack_hold_;
      if (release == AckRelease::after_hold && young) sendable = requests;
      if (release == AckRelease::behind_a_request && requests == 0) sendable = 0;
    }
    std::size_t taken = sendable == 0 ? 0 : port.send(std::span(queue_.data(), sendable));
    sent_requests_ |= std::min(taken, requests) > 0;
    if (acks_held_since_ != kNever && taken == queue_.size()) {
      auto acks = static_cast<std::size_t>(queue_.end() - first_ack);
      if (requests > 0) {
        counters_.acks_carried += acks;
        acks_expired_at_ = kNever;
      } else {
        counters_.acks_expired += acks;
        note_expired_hold(now);
      }
    }
    if (taken < queue_.size()) {  // keep the rest, in order, for the next time
      keep_unsent(taken);
      back_pressured_ = taken < sendable;
      return;
    }
    keep_unsent(taken);
    acks_held_since_ = kNever;
    if (engine_drained) return;
  }
}

// The ACK hold adapts to the application. A hold that expires with no reply
// posted since the last one (a one-way stream) halves the next; a reply
// posted soon after a hold expired (a ping-pong whose application answers
// slower than the hold: a loaded machine, a sanitizer build) doubles it.
void TransmitBatch::note_expired_hold(TimeNs now) {
  if (acks_expired_at_ != kNever) ack_hold_ = std::max(kShortestAckHold, ack_hold_ / 2);
  acks_expired_at_ = now;
}

void TransmitBatch::note_reply_posted(TimeNs now) {
  if (acks_expired_at_ == kNever) return;
  if (now - acks_expired_at_ < 4 * ack_hold_) ack_hold_ = std::min(longest_ack_hold_, ack_hold_ * 2);
  acks_expired_at_ = kNever;
}

// Frees the slots of the datagrams the port took; the rest stay queued, in
// order, in the slots they were built in. Only their descriptions move: a
// sender against a full receiver keeps up to a whole batch unsent, poll
// after poll, and copying it each time cost more than all its sending (a
// profile of Open MPI over UCX with four ranks on two cores found 42% of
// the CPU time in that copy).
void TransmitBatch::keep_unsent(std::size_t taken) {
  for (std::size_t i = 0; i < taken; ++i) free_slots_.push_back(slot_of(queue_[i]));
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(taken));
}

std::size_t TransmitBatch::slot_of(const DescribedDatagram& datagram) const {
  return static_cast<std::size_t>(datagram.bytes.data() - slots_.data()) / kMaxDatagramLength;
}

}  // namespace uroce::runtime
