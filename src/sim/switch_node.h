// A shared-buffer Ethernet switch: per-priority egress queues served in strict
// priority order or by deficit-weighted round robin, per-ingress (port,
// priority) accounting with PFC XOFF/XON and headroom, RED-style ECN marking, drops for lossy overflow and for headroom
// exhausted (a lossless violation), and ECMP or per-packet spraying over the
// equal-cost ports its routing table lists for each destination host.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/switch_config.h"
#include "sim/transmitter.h"

namespace uroce::sim {

class SwitchNode final : public Node {
 public:
  SwitchNode(SimWorld& world, const SwitchConfig& config, std::uint32_t id, std::uint64_t seed);

  // Adds a port whose transmitter uses spec; returns its index.
  std::uint16_t add_port(const LinkSpec& spec);
  Transmitter& transmitter(std::uint16_t port) { return *ports_[port].transmitter; }
  std::size_t port_count() const { return ports_.size(); }
  std::uint32_t event_group() const override { return kSwitchGroups | id_; }
  static constexpr std::uint32_t kSwitchGroups = 1u << 31;  // after every host's
  std::uint32_t id() const { return id_; }

  // Routing. Hosts sit under one switch each (switch_of_host, shared by all
  // switches); group_of_switch gives, for every other switch with hosts, the
  // index in groups of the equal-cost ports towards it. host_overrides
  // names the group for this switch's own hosts and for static routes.
  struct Routes {
    std::shared_ptr<const std::vector<std::uint32_t>> switch_of_host;
    std::vector<std::uint32_t> group_of_switch;
    std::unordered_map<std::uint32_t, std::uint32_t> host_overrides;
    std::vector<std::vector<std::uint16_t>> groups;
  };
  void set_routes(Routes routes);

  // State for deadlock detection and reports.
  std::uint64_t egress_bytes(std::uint16_t port, std::uint8_t priority) const {
    return ports_[port].egress[priority].bytes();
  }
  // Whether the egress queue (port, priority) holds a packet that came in on
  // ingress_port (a scan: for the deadlock detector, not the hot path).
  bool holds_from(std::uint16_t port, std::uint8_t priority, std::uint16_t ingress_port) const;
  const Transmitter& transmitter(std::uint16_t port) const { return *ports_[port].transmitter; }
  std::uint64_t buffer_used() const { return used_; }
  std::uint64_t peak_buffer_used() const { return peak_used_; }

  void receive(Packet* packet, std::uint16_t port, SimTime now) override;
  Packet* next_to_send(std::uint16_t port, SimTime now) override;
  bool may_have_more(std::uint16_t port) const override;

 private:
  // Laid out for the cache: what every packet's egress reads first (its
  // transmitter and marking thresholds), then the queues, then what its
  // ingress reads (the pause flag beside the bytes held).
  struct Port {
    std::unique_ptr<Transmitter> transmitter;
    std::uint64_t ecn_kmin = 0;               // marking thresholds of this egress, bytes
    std::uint64_t ecn_kmax = 0;
    PacketQueue egress[kPriorities];
    bool pause_sent[kPriorities] = {};
    std::uint64_t ingress_bytes[kPriorities] = {};  // held here, by the port it came in on
    std::uint64_t deficit[kPriorities] = {};  // DWRR credit, bytes
    std::uint8_t dwrr_turn = 0;               // the priority whose turn it is
    bool turn_credited = false;               // its quantum was added this turn
  };
  bool sendable(const Port& port, int priority) const {
    return !port.egress[priority].empty() && !port.transmitter->paused(static_cast<std::uint8_t>(priority));
  }
  int dwrr_pick(Port& port);
  Packet* take(Port& egress, int priority, SimTime now);
  bool lossless(std::uint8_t priority) const {
    return config_.pfc && ((config_.lossless_priorities >> priority) & 1u);
  }
  std::uint64_t xoff_threshold() const;
  // The egress port for a packet, or kNoRoute when the routes have none.
  std::uint16_t route(Packet& packet);
  static constexpr std::uint16_t kNoRoute = UINT16_MAX;
  bool admit(Packet& packet, Port& ingress, const PacketQueue& egress, SimTime now);
  void mark_if_congested(Packet& packet, const Port& egress, const PacketQueue& queue);
  bool should_trim(const Packet& packet, const Port& egress) const;
  void trim(Packet& packet);
  std::uint64_t next_random();

  // The fields every packet reads come first, the settings after them.
  SimWorld& world_;
  std::vector<Port> ports_;
  std::uint64_t used_ = 0;
  std::uint64_t peak_used_ = 0;
  std::uint64_t random_state_;
  std::uint32_t hash_salt_;
  std::uint32_t spray_next_ = 0;
  std::uint32_t id_;
  // Routes (see Routes) as route() reads them: a group's ports lie together
  // in group_ports_, at group_spans_[group].
  struct GroupSpan {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
  };
  std::shared_ptr<const std::vector<std::uint32_t>> switch_of_host_;
  // Routes::group_of_switch, a byte each where this switch has at most 256
  // groups (every fat-tree and plane here; 7% faster at k = 32, where this
  // table is the first miss of every hop), else as given. One is empty.
  std::vector<std::uint8_t> small_group_of_switch_;
  std::vector<std::uint32_t> group_of_switch_;
  std::unordered_map<std::uint32_t, std::uint32_t> host_overrides_;
  std::vector<GroupSpan> group_spans_;
  std::vector<std::uint16_t> group_ports_;
  SwitchConfig config_;
};

}  // namespace uroce::sim
