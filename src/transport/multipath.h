// Multipath RC (after MRC): a requester sprays its data packets over a set
// of entropy values (EVs), each a UDP source port and so, under ECMP, a
// path of its own; the responder echoes in each ACK, NAK and CNP the EV of
// the packet that caused it. EntropyPaths is the requester's side: which EV
// the next packet takes, which EV each PSN in flight went on and when, which
// of them are lost (RACK's rule: a packet is lost once a packet sent after
// it, on whatever path, has been delivered and an RTT plus the reorder
// window has passed since it was sent; reordering between paths within the
// window is not loss), and the health of each EV: retired at once when a packet
// on it is lost (a failed path), tried again with one packet after a
// backoff (a probe), skipped for a while after congestion was reported on
// it (a CNP or a trimmed packet).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "transport/psn.h"
#include "uroce/engine.h"

namespace uroce::transport {

// On IPv6 a multipath packet carries its EV in the flow label too, as MRC
// does, so that switches hashing (addresses, flow label) spread it as those
// hashing the UDP ports do. The label is never 0 (0 means "no label"), and
// IBTA's mapping from flow label to RoCEv2 source port (rdma-core's
// ibv_flow_label_to_udp_sport: the low 14 bits XOR the high 6, over 0xC000)
// takes it back to the EV's port.
inline std::uint32_t ev_flow_label(std::uint16_t ev_port) {
  constexpr std::uint32_t kHigh = 1;  // any nonzero 6 bits
  return (kHigh << 14) | ((ev_port & 0x3FFFu) ^ kHigh);
}

class EntropyPaths {
 public:
  // window: the most PSNs in flight (the engine's max_inflight_packets);
  // counters: the engine's, whose paths_* fields it counts in.
  EntropyPaths(const MultipathConfig& config, std::uint32_t qpn, std::uint32_t window, EngineCounters& counters);

  std::size_t size() const { return ev_count_; }
  std::uint16_t port(std::size_t ev) const;
  // The EV whose port this is, if it is one of ours.
  std::optional<std::size_t> ev_of_port(std::uint16_t port) const;

  // The port for the next packet (round robin over the usable EVs), recorded
  // as psn's, sent at now. A resent PSN gets a new record. READ and atomic
  // requests are not tracked (track = false): their answer comes after the
  // responder's work, not one trip later, so their delay says nothing of
  // the path. A probe goes only where may_probe: never a resend, nor a
  // packet with nothing behind it (its loss would wait for the timer).
  std::uint16_t send(std::uint32_t psn, TimeNs now, bool track = true, bool may_probe = true);

  // The responder has psn (acknowledged, or reported held), known at now.
  void delivered(std::uint32_t psn, TimeNs now);
  // Congestion reported on the EV with this port.
  void congested(std::uint16_t port, TimeNs now);
  // PSNs now known lost, in [first_unacked, highest_sent], each once per
  // transmission: `has(psn)` says whether the responder has it. Retires
  // their EVs.
  template <typename Has>
  void find_lost(std::uint32_t first_unacked, std::uint32_t highest_sent, TimeNs now, Has has,
                 std::vector<std::uint32_t>& lost);
  // A retransmission timeout: psn's packet was lost (its EV is retired).
  void timed_out(std::uint32_t psn, TimeNs now);
  // When find_lost should look again (a packet's window runs out then), or kNever.
  TimeNs loss_check_at() const { return loss_check_at_; }
  void clear();

  std::size_t usable() const;

 private:
  enum class Health : std::uint8_t { good, retired, probing };
  // Both are laid out to 24 bytes: a QP keeps one Ev per EV and one Sent
  // per PSN of its window, and a large collective has hundreds of thousands
  // of QPs.
  struct Ev {
    TimeNs avoid_until = 0;
    TimeNs probe_at = 0;
    std::uint32_t failures = 0;  // retirements in a row: the probe backoff's exponent
    Health health = Health::good;
  };
  struct Sent {
    TimeNs at = 0;
    std::uint64_t order = 0;  // send order: "sent after" even at one instant
    std::uint32_t psn : 24 = 0;
    std::uint32_t valid : 1 = 0;
    std::uint32_t done : 1 = 0;    // delivered, or declared lost
    std::uint32_t resent : 1 = 0;  // judged through resent_, not the in-order scan
    std::uint16_t ev = 0;
  };
  static_assert(sizeof(Ev) == 24 && sizeof(Sent) == 24);
  // The send record in psn's slot (another PSN's, or none, where psn's is
  // not kept). The ring is allocated at first use, so a QP that never sends
  // (one side of most collective pairs) costs none, and it starts small and
  // doubles up to the window as more PSNs are in flight at once: it keeps
  // exactly the records a ring of the whole window would keep (those of the
  // window's PSNs up to the highest recorded), at a fraction of the memory
  // for QPs with short messages.
  Sent& record(std::uint32_t psn) {
    if (sent_.empty()) sent_.resize(std::min<std::size_t>(window_, kFirstRecords));
    return sent_[psn % sent_.size()];
  }
  // psn's slot, to write psn's record into: the ring grows first while the
  // slot holds a record that a ring of the whole window would still keep.
  Sent& slot_for(std::uint32_t psn);
  // Whether sent is psn's record, one a ring of the whole window would keep.
  bool holds(const Sent& sent, std::uint32_t psn) const {
    return sent.valid && sent.psn == psn && psn_diff(highest_recorded_, psn) < static_cast<std::int32_t>(window_);
  }
  void grow();
  static constexpr std::size_t kFirstRecords = 16;
  void retire(std::size_t ev, TimeNs now);
  bool lost_now(Sent& sent, TimeNs now);
  // Whether sent is lost now (true), cannot be yet (false; the time it can
  // is noted in loss_check_at_), judged only when something sent after it
  // was delivered.
  bool judge(const Sent& sent, TimeNs now);

  MultipathConfig config_;
  std::uint16_t base_ = 0;
  // Every EV's state, allocated when the first leaves the default (good,
  // never avoided): until then round robin needs none, and most QPs of a
  // healthy fabric never get there.
  Ev& ev_state(std::size_t ev) {
    if (evs_.empty()) evs_.resize(ev_count_);
    return evs_[ev];
  }
  std::size_t ev_count_ = 1;
  std::vector<Ev> evs_;
  std::size_t next_ = 0;
  std::uint32_t window_ = 1;
  std::vector<Sent> sent_;  // up to window_ slots, from the first record()
  std::uint32_t highest_recorded_ = 0;  // the highest PSN given a record (valid once one was)
  bool recorded_any_ = false;
  std::uint64_t sent_count_ = 0;
  std::uint64_t latest_delivered_order_ = 0;  // send order of the newest packet known delivered, + 1
  TimeNs rtt_ = 0;                            // that packet's round trip
  TimeNs loss_check_at_ = kNever;
  std::uint32_t scan_psn_ = 0;       // first PSN the in-order scan has not judged
  bool scan_started_ = false;
  std::vector<std::uint32_t> resent_;  // resent PSNs, judged apart from the scan
  EngineCounters* counters_;
};

template <typename Has>
void EntropyPaths::find_lost(std::uint32_t first_unacked, std::uint32_t highest_sent, TimeNs now, Has has,
                             std::vector<std::uint32_t>& lost) {
  loss_check_at_ = kNever;
  if (latest_delivered_order_ == 0) return;
  if (!scan_started_ || psn_before(scan_psn_, first_unacked)) scan_psn_ = first_unacked;
  scan_started_ = true;
  // First transmissions leave in PSN order, so their send order rises with
  // the PSN: the scan stops at the first one it cannot judge yet.
  while (!psn_before(highest_sent, scan_psn_)) {
    Sent& sent = record(scan_psn_);
    if (holds(sent, scan_psn_) && !sent.done && !sent.resent) {
      if (has(scan_psn_)) {
        sent.done = 1;
      } else if (judge(sent, now)) {
        if (lost_now(sent, now)) lost.push_back(scan_psn_);
      } else {
        break;
      }
    }
    scan_psn_ = psn_add(scan_psn_, 1);
  }
  for (std::size_t i = 0; i < resent_.size();) {
    Sent& sent = record(resent_[i]);
    bool judged = !holds(sent, resent_[i]) || sent.done || has(resent_[i]);
    if (!judged && judge(sent, now)) {
      if (lost_now(sent, now)) lost.push_back(resent_[i]);
      judged = true;
    }
    if (judged) {
      resent_[i] = resent_.back();
      resent_.pop_back();
    } else {
      ++i;
    }
  }
}

}  // namespace uroce::transport
