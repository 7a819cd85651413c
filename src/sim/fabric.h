// The fabric built from a topology: host NICs running engines, switches, the
// transmitters of every link joined to their far ends, and shortest-path
// routing tables whose equal-cost ports ECMP chooses among. Over ranks, a
// rank builds only its own partitions' nodes and the far sides of the links
// that lead into them; what it knows of the rest is the topology.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/host_node.h"
#include "sim/partition.h"
#include "sim/rank_group.h"
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
  // Over ranks: builds only the nodes of the partitions this rank runs
  // (part_rank[p] == ranks.rank()), and for each link from a node it leaves
  // out to one it builds, that link's far transmitter, which lands the
  // frames another rank sends on it. Every node and handler it builds is
  // the one one process builds (the same seeds, the same handler numbers).
  // Collective: the ranks share their hosts' region keys.
  Fabric(const std::vector<SimWorld*>& worlds, const Partitioning& partitioning, const Topology& topology,
         const SwitchConfig& switch_config, const EngineConfig& engine_config, std::uint64_t seed,
         RankGroup& ranks, const std::vector<std::uint32_t>& part_rank);
  ~Fabric();

  // Nodes in the topology, built here or not.
  std::uint32_t host_count() const { return static_cast<std::uint32_t>(hosts_.size()); }
  std::uint32_t switch_count() const { return static_cast<std::uint32_t>(switches_.size()); }
  // Whether this rank built the node (always, in one process).
  bool holds(NodeRef node) const {
    return node.is_host ? hosts_[node.index] != nullptr : switches_[node.index] != nullptr;
  }
  // Only a node this rank holds.
  HostNode& host(std::uint32_t index) { return *hosts_[index]; }
  SwitchNode& switch_at(std::uint32_t index) { return *switches_[index]; }
  const SwitchNode& switch_at(std::uint32_t index) const { return *switches_[index]; }
  // Any node's: the world of its partition, and a host's region key.
  SimWorld& world_of(NodeRef node) const;
  std::uint32_t rkey_of(std::uint32_t host) const { return rkeys_[host]; }
  const Topology& topology() const { return topology_; }
  // What a switch's port is linked to, and that link's port at the far end.
  NodeRef neighbour(std::uint32_t switch_index, std::uint16_t port) const {
    return switch_ports_[switch_index][port].node;
  }
  std::uint16_t neighbour_port(std::uint32_t switch_index, std::uint16_t port) const {
    return switch_ports_[switch_index][port].peer_port;
  }
  // Whether a link goes from one node to the other.
  bool linked(NodeRef from, NodeRef to) const;
  // The transmitter that sends from one node to a neighbour, or nullptr when
  // they are not linked (the first of parallel links) or this rank does not
  // hold the sender.
  Transmitter* transmitter_between(NodeRef from, NodeRef to);
  // Every link direction by its link_id: an edge's a-to-b side, then its
  // b-to-a. A direction this rank holds neither end of is nullptr.
  std::uint32_t link_count() const { return static_cast<std::uint32_t>(links_.size()); }
  Transmitter* link(std::uint32_t id) { return links_[id]; }
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
  class RemoteNode;
  struct Neighbour {
    std::uint16_t port;
    NodeRef node;
    std::uint16_t peer_port;  // the link's port at node
    std::uint32_t link_id;    // this side's direction
  };
  struct HostPort {
    std::uint32_t switch_index;
    std::uint32_t link_id;  // the host's direction
  };

  Fabric(const std::vector<SimWorld*>& worlds, const Partitioning& partitioning, const Topology& topology,
         const SwitchConfig& switch_config, const EngineConfig& engine_config, std::uint64_t seed,
         RankGroup* ranks, const std::vector<std::uint32_t>* part_rank);
  void build_routes(const Topology& topology);
  bool link_up(std::uint32_t switch_index, std::uint16_t port) const {
    return !down_[switch_ports_[switch_index][port].link_id];
  }
  void set_direction_down(std::uint32_t link_id, bool down, SimTime now);
  // The stand-in for a node this rank leaves out (made once, when a link needs it).
  Node& remote(NodeRef node);

  Topology topology_;
  std::vector<SimWorld*> worlds_;
  std::vector<std::uint32_t> host_part_, switch_part_;
  std::vector<std::unique_ptr<HostNode>> hosts_;  // nullptr: another rank's
  std::vector<std::unique_ptr<SwitchNode>> switches_;
  std::vector<std::vector<Neighbour>> switch_ports_;  // per switch, by port index
  std::vector<std::vector<HostPort>> host_ports_;  // per host, by port
  std::vector<Transmitter*> links_;
  std::vector<bool> down_;  // per link direction
  std::vector<std::uint32_t> rkeys_;  // per host
  // Far transmitters of links from nodes another rank runs, and their stand-ins.
  std::vector<std::unique_ptr<Transmitter>> border_;
  std::vector<std::unique_ptr<RemoteNode>> remote_hosts_, remote_switches_;
};

}  // namespace uroce::sim
