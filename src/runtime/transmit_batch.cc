// TransmitBatch: the engine's datagrams batched to the port, the ACK-hold
// policy, and what back-pressure leaves behind.
#include "runtime/transmit_batch.h"

#include <algorithm>
#include <cstring>

namespace uroce::runtime {
namespace {

// An RC ACKNOWLEDGE (ACK or NAK), which carries no request and no data.
bool is_bare_ack(const DescribedDatagram& datagram) { return datagram.transmit.kind == TransmitKind::acknowledge; }

}  // namespace

TransmitBatch::TransmitBatch(TimeNs ack_hold_ns)
    : slots_(kBatch * kMaxDatagramLength),
      keep_scratch_(kBatch * kMaxDatagramLength),
      ack_hold_(ack_hold_ns),
      longest_ack_hold_(10 * ack_hold_ns) {
  queue_.reserve(kBatch);
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
    while (queue_.size() < kBatch) {
      // Slots are used in order; kept datagrams were moved to the front.
      std::span<std::uint8_t> slot(slots_.data() + queue_.size() * kMaxDatagramLength,
                                   kMaxDatagramLength);
      Transmit built = engine.poll_transmit(slot, now);
      if (!built) {
        engine_drained = true;
        break;
      }
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
    queue_.clear();
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

// Moves the datagrams the port did not take to the first slots, in order
// (through scratch space: after the ACK partition their slots are in any order).
void TransmitBatch::keep_unsent(std::size_t taken) {
  std::size_t kept = queue_.size() - taken;
  for (std::size_t i = 0; i < kept; ++i) {
    ByteSpan datagram = queue_[taken + i].bytes;
    std::memcpy(keep_scratch_.data() + i * kMaxDatagramLength, datagram.data(), datagram.size());
  }
  for (std::size_t i = 0; i < kept; ++i) {
    const DescribedDatagram& unsent = queue_[taken + i];
    std::size_t length = unsent.bytes.size();
    std::uint8_t* slot = slots_.data() + i * kMaxDatagramLength;
    std::memcpy(slot, keep_scratch_.data() + i * kMaxDatagramLength, length);
    queue_[i] = DescribedDatagram{MutableByteSpan(slot, length), unsent.transmit};
  }
  queue_.resize(kept);
}

}  // namespace uroce::runtime
