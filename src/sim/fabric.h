// The fabric built from a topology: host NICs running engines, switches, the
// transmitters of every link joined to their far ends, and shortest-path
// routing tables whose equal-cost ports ECMP chooses among.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/host_node.h"
#include "sim/partition.h"
#include "sim/switch_node.h"
#include "sim/topology.h"

namespace uroce::sim {

class Fabric {
 public:
  // topology must be valid (topology_problem returns nothing).
  Fabric(SimWorld& world, const Topology& topology, const SwitchConfig& switch_config,
         const EngineConfig& engine_config, std::uint64_t seed);
  // Each node in its partition's world (worlds: one per partition); a link
  // between partitions sends through the sender's outbox for the far one.
  Fabric(const std::vector<SimWorld*>& worlds, const Partitioning& partitioning, const Topology& topology,
         const SwitchConfig& switch_config, const EngineConfig& engine_config, std::uint64_t seed);

  std::uint32_t host_count() const { return static_cast<std::uint32_t>(hosts_.size()); }
  std::uint32_t switch_count() const { return static_cast<std::uint32_t>(switches_.size()); }
  HostNode& host(std::uint32_t index) { return *hosts_[index]; }
  SwitchNode& switch_at(std::uint32_t index) { return *switches_[index]; }
  const Topology& topology() const { return topology_; }
  const SwitchNode& switch_at(std::uint32_t index) const { return *switches_[index]; }
  // What a switch's port is linked to.
  NodeRef neighbour(std::uint32_t switch_index, std::uint16_t port) const {
    return switch_ports_[switch_index][port].node;
  }
  // The transmitter that sends from one node to a neighbour, or nullptr when
  // they are not linked (the first of parallel links).
  Transmitter* transmitter_between(NodeRef from, NodeRef to);
  // Every link direction by its link_id: an edge's a-to-b side, then its b-to-a.
  std::uint32_t link_count() const { return static_cast<std::uint32_t>(links_.size()); }
  Transmitter& link(std::uint32_t id) { return *links_[id]; }
  // Ends every pause still in force in the counters (the end of a run).
  void close_pauses(SimTime now);

  // Fails (or restores) the link between two neighbours, both directions
  // (every parallel link between them). Routes do not change: a switch
  // keeps sending into a failed link until reroute() runs. Returns false
  // when the two are not linked.
  bool set_link_down(NodeRef a, NodeRef b, bool down, SimTime now);
  // Fails (or restores) every link of a switch. Returns false for no such switch.
  bool set_switch_down(std::uint32_t switch_index, bool down, SimTime now);
  // Recomputes every switch's shortest-path routes over the links that are
  // up (the routing protocol has converged).
  void reroute() { build_routes(topology_); }

 private:
  void build_routes(const Topology& topology);
  bool link_up(std::uint32_t switch_index, std::uint16_t port) const {
    return !switches_[switch_index]->transmitter(port).down();
  }

  Topology topology_;
  std::vector<std::unique_ptr<HostNode>> hosts_;
  std::vector<std::unique_ptr<SwitchNode>> switches_;
  struct Neighbour {
    std::uint16_t port;
    NodeRef node;
  };
  std::vector<std::vector<Neighbour>> switch_ports_;  // per switch, by port index
  std::vector<std::vector<std::uint32_t>> host_ports_;  // per host, by port: the switch it leads to
  std::vector<Transmitter*> links_;
};

}  // namespace uroce::sim
