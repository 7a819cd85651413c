// The simulated NIC around a uroce engine.
#include "sim/host_node.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/bytes.h"
#include "sim/mix.h"

namespace uroce::sim {

namespace {

constexpr std::size_t kCompletionBatch = 64;
constexpr std::uint32_t kCompletionQueueDepth = 4096;

TimeNs to_engine_time(SimTime now) { return now / kPicosecondsPerNs; }

}  // namespace

std::array<std::uint8_t, 4> host_address(std::uint32_t host) {
  std::uint32_t n = host + 1;
  return {10, static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n)};
}

HostNode::HostNode(SimWorld& world, std::uint32_t id, const EngineConfig& engine_config,
                   const std::vector<LinkSpec>& links)
    : world_(world), id_(id), address_word_(load_be32(host_address(id).data())), held_(links.size()), transmit_buffer_(kMaxDatagramLength),
      receive_buffer_(kMaxDatagramLength) {
  if (links.empty()) throw std::runtime_error("simulated host: no port");
  set_event_group(event_group());
  for (std::size_t port = 0; port < links.size(); ++port) {
    transmitters_.push_back(std::make_unique<Transmitter>(world, links[port], *this, static_cast<std::uint16_t>(port)));
  }
  EngineConfig config = engine_config;
  config.gid = gid_from_ipv4(host_address(id));
  config.carry_payload = false;
  engine_ = std::make_unique<Engine>(config);
  engine_->poll_async_event();  // port active: nobody listens in a simulation
  auto pd = engine_->alloc_pd();
  auto cq = engine_->create_cq(kCompletionQueueDepth);  // drained after every event
  if (!pd || !cq) throw std::runtime_error("simulated host: engine refused a PD or CQ");
  pd_ = *pd;
  cq_ = *cq;
  auto keys = engine_->reg_mr(pd_, reinterpret_cast<void*>(kRegionBase), kRegionLength,
                              kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic);
  if (!keys) throw std::runtime_error("simulated host: engine refused its memory region");
  region_ = *keys;
}

void HostNode::wake(SimTime now) {
  for (auto& transmitter : transmitters_) transmitter->kick(now);
  arm_timer();
}

std::uint16_t HostNode::port_for(const Packet& packet, std::uint16_t source_port) const {
  if (transmitters_.size() == 1) return 0;
  auto fabric_ports = static_cast<std::uint16_t>(transmitters_.size());
  if (servers_.nvlink_port) {
    --fabric_ports;  // the last is the NVLink switch's
    if (same_server(packet.dst_host)) return fabric_ports;
  }
  return static_cast<std::uint16_t>(source_port % fabric_ports);
}

// Everything the fabric needs of the packet comes from the engine's
// description of it; the header bytes ride along for the receiver.
Packet* HostNode::packet_from_engine(const Transmit& sent) {
  Packet* packet = world_.packets.acquire();
  packet->kind = PacketKind::roce;
  packet->datagram_length = static_cast<std::uint32_t>(sent.length);
  packet->wire_bytes = frame_wire_bytes(packet->datagram_length, framing_);
  std::memcpy(packet->header, transmit_buffer_.data(), std::min(sent.length, kHeaderBytes));
  packet->src_host = id_;
  std::uint32_t destination = load_be32(gid_address_bytes(sent.destination, true));
  packet->dst_host = (destination & 0x00FFFFFFu) - 1;  // host_address, inverted
  packet->priority = static_cast<std::uint8_t>((sent.traffic_class >> 2) >> 3);  // DSCP's class selector bits
  packet->flow_hash = mix32(address_word_ ^ mix32(destination ^ mix32(sent.source_port)));
  packet->route_cursor = sent.source_port;
  packet->roce_class = sent.kind == TransmitKind::acknowledge ? RoceClass::ack
                       : sent.kind == TransmitKind::cnp       ? RoceClass::cnp
                                                              : RoceClass::data;
  if (packet->roce_class == RoceClass::data) ++world_.counters.data_packets;
  return packet;
}

Packet* HostNode::next_to_send(std::uint16_t port, SimTime now) {
  Transmitter& transmitter = *transmitters_[port];
  auto& held = held_[port];
  for (int priority = kPriorities - 1; priority >= 0; --priority) {
    if (!held[priority].empty() && !transmitter.paused(static_cast<std::uint8_t>(priority))) {
      return held[priority].pop();
    }
  }
  for (;;) {
    Transmit sent = engine_->poll_transmit(transmit_buffer_, to_engine_time(now));
    if (!sent) {
      arm_timer();  // pacing may have deferred a QP
      return nullptr;
    }
    Packet* packet = packet_from_engine(sent);
    std::uint16_t out = port_for(*packet, sent.source_port);
    if (out == port && !transmitter.paused(packet->priority)) return packet;
    held_[out][packet->priority].push(packet);
    if (out != port) transmitters_[out]->kick(now);  // its wire may be idle
  }
}

void HostNode::receive(Packet* packet, std::uint16_t port, SimTime now) {
  if (packet->kind == PacketKind::pause) {
    transmitters_[port]->on_pfc(*packet, now);
    world_.packets.release(packet);
    return;
  }
  std::memcpy(receive_buffer_.data(), packet->header, std::min<std::size_t>(packet->datagram_length, kHeaderBytes));
  std::uint32_t length = packet->datagram_length;
  bool trimmed = packet->trimmed;
  world_.packets.release(packet);
  if (trimmed) {
    engine_->on_trimmed(std::span(receive_buffer_).first(length), to_engine_time(now));
  } else {
    engine_->on_datagram(std::span(receive_buffer_).first(length), to_engine_time(now), false);
  }
  deliver_completions(now);
  wake(now);
}

void HostNode::on_event(SimTime now, std::uint32_t tag) {
  if (tag != timer_generation_) return;  // superseded by an earlier deadline
  timer_at_ = kSimNever;
  engine_->on_timer(to_engine_time(now));
  deliver_completions(now);
  wake(now);
}

void HostNode::deliver_completions(SimTime now) {
  WorkCompletion completions[kCompletionBatch];
  for (;;) {
    auto polled = engine_->poll_cq(cq_, completions);
    if (!polled || *polled == 0) return;
    for (std::size_t i = 0; i < *polled; ++i) {
      if (handler_) handler_(id_, completions[i], now);
    }
  }
}

void HostNode::arm_timer() {
  TimeNs deadline = engine_->next_deadline();
  if (deadline == kNever) return;
  SimTime at = deadline * kPicosecondsPerNs;
  if (at >= timer_at_) return;
  timer_at_ = at;
  world_.events.schedule(at, this, ++timer_generation_);
}

}  // namespace uroce::sim
