// Switch forwarding, buffer accounting, PFC and ECN.
#include "sim/switch_node.h"

#include <algorithm>

#include "common/bytes.h"
#include "sim/mix.h"
#include "wire/ip_datagram.h"

namespace uroce::sim {

SwitchNode::SwitchNode(SimWorld& world, const SwitchConfig& config, std::uint32_t id, std::uint64_t seed)
    : world_(world), random_state_(seed ^ (std::uint64_t{id} << 32)), id_(id), config_(config) {
  hash_salt_ = static_cast<std::uint32_t>(splitmix64(random_state_));
}

void SwitchNode::set_routes(Routes routes) {
  switch_of_host_ = std::move(routes.switch_of_host);
  host_overrides_ = std::move(routes.host_overrides);
  group_spans_.clear();
  group_ports_.clear();
  for (const std::vector<std::uint16_t>& ports : routes.groups) {
    group_spans_.push_back(GroupSpan{static_cast<std::uint32_t>(group_ports_.size()),
                                     static_cast<std::uint32_t>(ports.size())});
    group_ports_.insert(group_ports_.end(), ports.begin(), ports.end());
  }
  small_group_of_switch_.clear();
  group_of_switch_.clear();
  if (group_spans_.size() <= 256) {
    small_group_of_switch_.assign(routes.group_of_switch.begin(), routes.group_of_switch.end());
  } else {
    group_of_switch_ = std::move(routes.group_of_switch);
  }
}

std::uint16_t SwitchNode::add_port(const LinkSpec& spec) {
  auto index = static_cast<std::uint16_t>(ports_.size());
  ports_.emplace_back();
  Port& port = ports_.back();
  port.transmitter = std::make_unique<Transmitter>(world_, spec, *this, index);
  constexpr double kKminBytesPerGbps = 4000;
  constexpr double kKmaxBytesPerGbps = 16000;
  double gbps = static_cast<double>(spec.rate_bps) / 1e9;
  port.ecn_kmin = config_.ecn_kmin_bytes != 0 ? config_.ecn_kmin_bytes
                                              : static_cast<std::uint64_t>(kKminBytesPerGbps * gbps);
  port.ecn_kmax = config_.ecn_kmax_bytes != 0 ? config_.ecn_kmax_bytes
                                              : static_cast<std::uint64_t>(kKmaxBytesPerGbps * gbps);
  port.ecn_kmax = std::max(port.ecn_kmax, port.ecn_kmin + 1);
  return index;
}

std::uint64_t SwitchNode::xoff_threshold() const {
  if (config_.dynamic_alpha <= 0) return config_.xoff_bytes;
  std::uint64_t free = config_.buffer_bytes > used_ ? config_.buffer_bytes - used_ : 0;
  return std::min(config_.xoff_bytes, static_cast<std::uint64_t>(config_.dynamic_alpha * static_cast<double>(free)));
}

bool SwitchNode::holds_from(std::uint16_t port, std::uint8_t priority, std::uint16_t ingress_port) const {
  for (const Packet* packet = ports_[port].egress[priority].front(); packet != nullptr; packet = packet->next) {
    if (packet->ingress_port == ingress_port) return true;
  }
  return false;
}

std::uint64_t SwitchNode::next_random() { return splitmix64(random_state_); }

std::uint16_t SwitchNode::route(Packet& packet) {
  std::uint32_t target = (*switch_of_host_)[packet.dst_host];
  std::uint32_t group = small_group_of_switch_.empty() ? group_of_switch_[target] : small_group_of_switch_[target];
  if (target == id_ || !host_overrides_.empty()) {
    auto found = host_overrides_.find(packet.dst_host);
    if (found != host_overrides_.end()) group = found->second;
  }
  GroupSpan span = group_spans_[group];
  const std::uint16_t* ports = group_ports_.data() + span.first;
  if (span.count == 0) return kNoRoute;  // failed links cut this switch off from the target
  if (span.count == 1) return ports[0];
  if (config_.forwarding == Forwarding::spray) return ports[spray_next_++ % span.count];
  if (config_.forwarding == Forwarding::source) {
    std::uint16_t port = ports[packet.route_cursor % span.count];
    packet.route_cursor /= span.count;
    return port;
  }
  return ports[mix32(packet.flow_hash ^ hash_salt_) % span.count];
}

bool SwitchNode::admit(Packet& packet, Port& ingress, const PacketQueue& egress, SimTime now) {
  std::uint8_t priority = packet.priority;
  std::uint32_t size = packet.wire_bytes;
  std::uint64_t& held = ingress.ingress_bytes[priority];
  if (lossless(priority)) {
    if (held + size > config_.xoff_bytes + config_.headroom_bytes || used_ + size > config_.buffer_bytes) {
      ++world_.counters.lossless_violations;
      ++world_.counters.drops;
      return false;
    }
    held += size;
    used_ += size;
    if (!ingress.pause_sent[priority] && held > xoff_threshold()) {
      ingress.pause_sent[priority] = true;
      ingress.transmitter->send_pfc(priority, true, now);
    }
  } else {
    if (egress.bytes() + size > config_.lossy_queue_bytes || used_ + size > config_.buffer_bytes) {
      ++world_.counters.drops;
      return false;
    }
    held += size;
    used_ += size;
  }
  peak_used_ = std::max(peak_used_, used_);
  return true;
}

bool SwitchNode::should_trim(const Packet& packet, const Port& egress) const {
  if (!config_.trim || packet.trimmed || packet.kind != PacketKind::roce || packet.roce_class != RoceClass::data ||
      lossless(packet.priority)) {
    return false;
  }
  std::uint64_t threshold = config_.trim_bytes != 0 ? config_.trim_bytes : config_.lossy_queue_bytes;
  return egress.egress[packet.priority].bytes() + packet.wire_bytes > threshold;
}

// The payload goes, the headers (what the receiver needs to ask for it
// again) go on in a minimum frame, ahead of the queued data.
void SwitchNode::trim(Packet& packet) {
  packet.trimmed = true;
  packet.wire_bytes = kTrimmedWireBytes;
  packet.priority = kTrimPriority;
  ++world_.counters.trimmed;
}

void SwitchNode::mark_if_congested(Packet& packet, const Port& egress, const PacketQueue& queue) {
  if (!config_.ecn || queue.bytes() <= egress.ecn_kmin) return;
  MutableByteSpan header(packet.header, std::min<std::size_t>(packet.datagram_length, kHeaderBytes));
  auto datagram = wire::IpDatagramView::new_checked(header);
  if (!datagram || !datagram->is_ipv4()) return;
  if (datagram->ecn() == wire::Ecn::not_ect || datagram->ecn() == wire::Ecn::ce) return;  // not ECT, or CE already
  if (queue.bytes() < egress.ecn_kmax) {
    double fraction = static_cast<double>(queue.bytes() - egress.ecn_kmin) /
                      static_cast<double>(egress.ecn_kmax - egress.ecn_kmin);
    if (unit_interval(random_state_) >= fraction * config_.ecn_pmax) return;
  }
  wire::mark_congestion_experienced(header);
  ++world_.counters.ecn_marked;
}

void SwitchNode::receive(Packet* packet, std::uint16_t port, SimTime now) {
  if (packet->kind == PacketKind::pause) {
    ports_[port].transmitter->on_pfc(*packet, now);
    world_.packets.release(packet);
    return;
  }
  if (packet->dst_host >= switch_of_host_->size()) {
    ++world_.counters.drops;
    world_.packets.release(packet);
    return;
  }
  std::uint16_t chosen = route(*packet);  // once: spraying picks anew on every call
  if (chosen == kNoRoute) {
    if (packet->kind == PacketKind::roce) ++world_.counters.failure_losses;
    world_.packets.release(packet);
    return;
  }
  Port& egress = ports_[chosen];
  __builtin_prefetch(&egress);  // cold at scale: loads while the ingress is charged
  if (should_trim(*packet, egress)) trim(*packet);
  PacketQueue& queue = egress.egress[packet->priority];
  packet->ingress_port = port;
  if (!admit(*packet, ports_[port], queue, now)) {
    world_.packets.release(packet);
    return;
  }
  if (!config_.ecn_at_dequeue) mark_if_congested(*packet, egress, queue);
  queue.push(packet);
  egress.transmitter->kick(now);
}

Packet* SwitchNode::next_to_send(std::uint16_t port, SimTime now) {
  Port& egress = ports_[port];
  bool dwrr = config_.scheduler == Scheduler::dwrr;
  for (int priority = kPriorities - 1; priority >= 0; --priority) {
    bool strict = !dwrr || ((config_.strict_priorities >> priority) & 1u);
    if (strict && sendable(egress, priority)) return take(egress, priority, now);
  }
  if (!dwrr) return nullptr;
  int priority = dwrr_pick(egress);
  return priority < 0 ? nullptr : take(egress, priority, now);
}

bool SwitchNode::may_have_more(std::uint16_t port) const {
  for (const PacketQueue& queue : ports_[port].egress) {
    if (!queue.empty()) return true;
  }
  return false;
}

// Deficit round robin over the non-strict priorities, one packet per call: a
// priority's turn adds its quantum once, and it sends while the deficit
// covers its next packet. A queue with nothing to send loses its credit; a
// paused one keeps it. Two rounds always find a sendable queue if any.
int SwitchNode::dwrr_pick(Port& port) {
  constexpr std::uint64_t kQuantumUnit = 4200;  // one 4096-byte-MTU frame with its headers
  for (int visit = 0; visit <= 2 * kPriorities; ++visit) {
    int priority = port.dwrr_turn;
    bool strict = (config_.strict_priorities >> priority) & 1u;
    if (!strict && sendable(port, priority)) {
      if (!port.turn_credited) {
        port.deficit[priority] += std::uint64_t{config_.dwrr_weights[static_cast<std::size_t>(priority)]} * kQuantumUnit;
        port.turn_credited = true;
      }
      std::uint32_t size = port.egress[priority].front()->wire_bytes;
      if (port.deficit[priority] >= size) {
        port.deficit[priority] -= size;
        return priority;
      }
    } else if (port.egress[priority].empty()) {
      port.deficit[priority] = 0;
    }
    port.dwrr_turn = static_cast<std::uint8_t>((priority + 1) % kPriorities);
    port.turn_credited = false;
  }
  return -1;
}

// Dequeues priority's head packet and releases its buffer, resuming the
// ingress it came from once that falls below XON.
Packet* SwitchNode::take(Port& egress, int priority, SimTime now) {
  PacketQueue& queue = egress.egress[priority];
  Packet* packet = queue.pop();
  if (config_.ecn_at_dequeue) mark_if_congested(*packet, egress, queue);
  Port& ingress = ports_[packet->ingress_port];
  std::uint64_t& held = ingress.ingress_bytes[priority];
  held -= packet->wire_bytes;
  used_ -= packet->wire_bytes;
  if (ingress.pause_sent[priority]) {
    std::uint64_t xoff = xoff_threshold();
    if (held + config_.xon_offset_bytes <= xoff || held == 0) {
      ingress.pause_sent[priority] = false;
      ingress.transmitter->send_pfc(static_cast<std::uint8_t>(priority), false, now);
    }
  }
  return packet;
}

}  // namespace uroce::sim
