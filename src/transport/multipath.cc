// EntropyPaths: the EV set, its health, and the per-PSN send records that the
// reorder-window loss detection reads.
#include "transport/multipath.h"

#include <algorithm>

#include "transport/psn.h"
#include "wire/udp.h"

namespace uroce::transport {

namespace {

// EVs are source ports in the dynamic range RoCEv2 uses (0xC000 and up), as
// many consecutive ones as configured from a per-QP start, so a port maps back
// to its EV with a subtraction.
constexpr std::uint16_t kPortBase = wire::kRoceSourcePortMin;
constexpr std::uint16_t kPortSpan = 0x10000 - wire::kRoceSourcePortMin;

std::uint16_t start_for(std::uint32_t qpn) {
  std::uint32_t x = qpn * 0x9E3779B1u;
  return static_cast<std::uint16_t>((x ^ (x >> 16)) % kPortSpan);
}

}  // namespace

EntropyPaths::EntropyPaths(const MultipathConfig& config, std::uint32_t qpn, std::uint32_t window,
                           EngineCounters& counters)
    : config_(config),
      base_(start_for(qpn)),
      ev_count_(std::clamp<std::size_t>(config.entropy_values, 1, kPortSpan)),
      window_(std::max<std::uint32_t>(window, 1)),
      counters_(&counters) {}

std::uint16_t EntropyPaths::port(std::size_t ev) const {
  return static_cast<std::uint16_t>(kPortBase + (base_ + ev) % kPortSpan);
}

std::optional<std::size_t> EntropyPaths::ev_of_port(std::uint16_t port) const {
  if (port < kPortBase) return std::nullopt;
  std::size_t ev = (port - kPortBase + kPortSpan - base_) % kPortSpan;
  if (ev >= ev_count_) return std::nullopt;
  return ev;
}

std::size_t EntropyPaths::usable() const {
  if (evs_.empty()) return ev_count_;
  return static_cast<std::size_t>(
      std::count_if(evs_.begin(), evs_.end(), [](const Ev& ev) { return ev.health != Health::retired; }));
}

EntropyPaths::Sent& EntropyPaths::slot_for(std::uint32_t psn) {
  if (!recorded_any_ || psn_diff(psn, highest_recorded_) > 0) highest_recorded_ = psn;
  recorded_any_ = true;
  for (;;) {
    Sent& slot = record(psn);
    bool kept = slot.psn != psn && holds(slot, slot.psn);
    if (!kept || sent_.size() >= window_) return slot;
    grow();
  }
}

// Doubles the ring (up to the window), keeping the records a ring of the
// whole window would keep; doubles again while two of them share a slot.
void EntropyPaths::grow() {
  std::vector<Sent> old = std::move(sent_);
  std::size_t size = old.size();
  bool clash = true;
  while (clash) {
    size = std::min<std::size_t>(size * 2, window_);
    sent_.assign(size, Sent{});
    clash = false;
    for (const Sent& kept : old) {
      if (!holds(kept, kept.psn)) continue;
      Sent& slot = sent_[kept.psn % size];
      if (slot.valid) {
        clash = size < window_;
        if (clash) break;
      }
      slot = kept;
    }
  }
}

std::uint16_t EntropyPaths::send(std::uint32_t psn, TimeNs now, bool track, bool may_probe) {
  Sent& sent = slot_for(psn);
  bool again = holds(sent, psn);
  may_probe = may_probe && !again;
  // Round robin from where the last packet left off. A retired EV whose probe
  // time has come is taken once, as a probe; an avoided one is passed over.
  // When every EV is retired or avoided, the one due soonest serves anyway:
  // a connection never stops for want of a path.
  std::size_t chosen = ev_count_;
  if (evs_.empty()) {
    chosen = next_ % ev_count_;  // every EV good and never avoided
  } else {
    std::size_t fallback = next_ % ev_count_;
    for (std::size_t step = 0; step < ev_count_; ++step) {
      std::size_t i = (next_ + step) % ev_count_;
      Ev& ev = evs_[i];
      if (ev.health == Health::retired) {
        if (may_probe && ev.probe_at <= now) {
          ev.health = Health::probing;
          ++counters_->paths_probes;
          chosen = i;
          break;
        }
        if (evs_[fallback].health != Health::retired || ev.probe_at < evs_[fallback].probe_at) continue;
        fallback = i;
        continue;
      }
      if (ev.health == Health::probing) continue;  // one packet until it is heard of
      if (ev.avoid_until > now) {
        if (evs_[fallback].health == Health::retired || ev.avoid_until < evs_[fallback].avoid_until) fallback = i;
        continue;
      }
      chosen = i;
      break;
    }
    if (chosen == ev_count_) chosen = fallback;
  }
  next_ = (chosen + 1) % ev_count_;
  if (!track) {
    sent.valid = 0;
  } else {
    sent = Sent{};
    sent.at = now;
    sent.order = sent_count_++;
    sent.psn = psn & 0xFFFFFF;
    sent.valid = 1;
    sent.resent = again ? 1 : 0;
    sent.ev = static_cast<std::uint16_t>(chosen);
    if (again && std::find(resent_.begin(), resent_.end(), psn) == resent_.end()) resent_.push_back(psn);
  }
  return port(chosen);
}

void EntropyPaths::delivered(std::uint32_t psn, TimeNs now) {
  Sent& sent = record(psn);
  if (!holds(sent, psn)) return;
  if (sent.order + 1 > latest_delivered_order_) {
    latest_delivered_order_ = sent.order + 1;
    rtt_ = now - sent.at;
  }
  if (sent.done) return;
  sent.done = 1;
  if (evs_.empty()) return;  // every EV is good
  Ev& ev = evs_[sent.ev];
  if (ev.health == Health::probing) ++counters_->paths_restored;
  ev.health = Health::good;
  ev.failures = 0;
}

void EntropyPaths::congested(std::uint16_t port, TimeNs now) {
  auto ev = ev_of_port(port);
  if (!ev) return;
  ++counters_->paths_congested;
  ev_state(*ev).avoid_until = now + config_.avoid_ns;
}

bool EntropyPaths::judge(const Sent& sent, TimeNs now) {
  if (sent.order + 1 >= latest_delivered_order_) return false;  // nothing sent after it arrived yet
  TimeNs due = sent.at + rtt_ + config_.reorder_window_ns;
  if (now >= due) return true;
  loss_check_at_ = std::min(loss_check_at_, due);
  return false;
}

bool EntropyPaths::lost_now(Sent& sent, TimeNs now) {
  sent.done = 1;
  ++counters_->paths_lost;
  retire(sent.ev, now);
  return true;
}

void EntropyPaths::timed_out(std::uint32_t psn, TimeNs now) {
  Sent& sent = record(psn);
  if (!holds(sent, psn) || sent.done) return;
  lost_now(sent, now);
}

// Packets sent on an EV before it was retired are lost with it and change
// nothing; a lost probe doubles the wait for the next.
void EntropyPaths::retire(std::size_t index, TimeNs now) {
  Ev& ev = ev_state(index);
  if (ev.health == Health::retired) return;
  ++counters_->paths_retired;
  ev.health = Health::retired;
  TimeNs wait = config_.probe_after_ns;
  for (std::uint32_t i = 0; i < ev.failures && wait < config_.max_probe_after_ns; ++i) wait *= 2;
  ev.probe_at = now + std::min(wait, config_.max_probe_after_ns);
  ++ev.failures;
}

void EntropyPaths::clear() {
  for (Sent& sent : sent_) sent.valid = 0;
  recorded_any_ = false;
  resent_.clear();
  latest_delivered_order_ = 0;
  loss_check_at_ = kNever;
  scan_started_ = false;
}

}  // namespace uroce::transport
