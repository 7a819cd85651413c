// TransmitBatch: what the engine built, on its way to the port, a batch at
// a time (one system call for many datagrams): the slots it is built
// into, what the port refused (back-pressure) kept in order for next time
// where it was built (a sender that polls against a full receiver must
// not copy its batch again on every poll),
// and the ACK-hold policy, under which bare ACKs may wait briefly for a
// reply to carry them out. One of the device's jobs (runtime/device_parts.h
// lists them); it runs under the device's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "port/port.h"
#include "uroce/engine.h"
#include "uroce/transmit.h"

namespace uroce::runtime {

// When the bare ACKs in a transmit leave.
enum class AckRelease : std::uint8_t {
  now,
  after_hold,        // once the hold has passed
  behind_a_request,  // with any other datagram (a posted reply); else held on
};

class TransmitBatch {
 public:
  // ack_hold_ns: how long a bare ACK first waits for a reply; the hold
  // adapts between 2 us and ten times this.
  explicit TransmitBatch(TimeNs ack_hold_ns);

  // Moves what the engine has to send to the port until the engine has
  // nothing more or the port pushes back (back_pressured()).
  void transmit(Engine& engine, port::Port& port, TimeNs now, AckRelease release);
  // Hands the port what is built and waiting, without asking the engine for
  // more (a closing device: the engine's WQEs may point at freed buffers).
  void send_what_is_built(port::Port& port);

  // The port refused part of the last transmit: try again soon.
  bool back_pressured() const { return back_pressured_; }
  // Whether transmits since clear_sent_requests() sent anything but bare ACKs.
  bool sent_requests() const { return sent_requests_; }
  void clear_sent_requests() { sent_requests_ = false; }
  // A reply was posted: when it came soon after a hold expired, the hold grows.
  void note_reply_posted(TimeNs now);
  // When held ACKs must leave, or kNever when none are held.
  TimeNs hold_deadline() const { return acks_held_since_ == kNever ? kNever : acks_held_since_ + ack_hold_; }

  struct Counters {
    std::uint64_t acks_carried = 0;  // held ACKs that left behind a posted reply
    std::uint64_t acks_expired = 0;  // held ACKs that left alone after the hold
  };
  const Counters& counters() const { return counters_; }

 private:
  void keep_unsent(std::size_t taken);
  void note_expired_hold(TimeNs now);
  std::size_t slot_of(const DescribedDatagram& datagram) const;

  static constexpr std::size_t kBatch = 64;
  static constexpr TimeNs kShortestAckHold = 2'000;
  std::vector<std::uint8_t> slots_;
  std::vector<DescribedDatagram> queue_;  // views of slots_, described, in sending order
  std::vector<std::size_t> free_slots_;   // slots no datagram in queue_ uses
  bool back_pressured_ = false;
  bool sent_requests_ = false;       // a transmit sent datagrams other than bare ACKs
  TimeNs acks_held_since_ = kNever;  // bare ACKs wait at the queue's end
  TimeNs acks_expired_at_ = kNever;  // the last held ACKs left alone, and no reply came since
  TimeNs ack_hold_;                  // adapts between kShortestAckHold and longest_ack_hold_
  TimeNs longest_ack_hold_;
  Counters counters_;
};

}  // namespace uroce::runtime
