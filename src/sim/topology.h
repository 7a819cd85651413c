// Topologies as plain graphs of hosts, switches and links, built from a few
// parameters (dumbbell, star, leaf-spine, 3-tier fat-tree, multi-plane
// leaf-spine) or listed edge by edge. A host hangs off one switch, or, with
// several ports, off one switch in each plane: the planes are networks of
// switches with no link between them, and a host's ports are numbered in
// the order of its links.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/transmitter.h"

namespace uroce::sim {

struct NodeRef {
  bool is_host = false;
  std::uint32_t index = 0;
  bool operator==(const NodeRef&) const = default;
};

struct TopologyEdge {
  NodeRef a, b;
  LinkSpec link;  // both directions
};

// Overrides shortest-path routing at one switch for one destination host:
// packets for to_host leave at_switch towards via_switch. Routing loops and
// detours (a failed link's reroute) are built from these.
struct StaticRoute {
  std::uint32_t at_switch = 0;
  std::uint32_t to_host = 0;
  std::uint32_t via_switch = 0;
};

// Hosts that are the GPUs of servers (sim/gpu_servers.h): hosts
// [s * gpus, (s + 1) * gpus) are server s's, joined by its NVLink switch.
struct ServerLayout {
  std::uint32_t gpus = 0;  // per server; 0: the hosts are not GPUs of servers
  // Each GPU has a NIC of its own and its last port leads to the NVLink
  // switch, which carries what goes to the server's other GPUs; otherwise
  // the GPU's one port leads to the NVLink switch, which also holds the
  // server's shared NIC.
  bool nvlink_port = false;
  std::uint64_t nic_rate_bps = 0;  // a NIC's rate: where DCQCN starts for a QP between servers
  LinkSpec nvlink;                 // each GPU's link to its NVLink switch
  bool same_server(std::uint32_t a, std::uint32_t b) const { return gpus != 0 && a / gpus == b / gpus; }
  // The GPUs per server when `hosts` are whole servers, each one's GPUs in a
  // row (member k * gpus + g on server k's GPU, each once); 0 otherwise.
  std::uint32_t whole_servers(const std::vector<std::uint32_t>& hosts) const;
};

struct Topology {
  std::uint32_t hosts = 0;
  std::uint32_t switches = 0;
  std::vector<TopologyEdge> edges;
  std::vector<StaticRoute> routes;
  std::string description;
  ServerLayout servers;
  Framing framing = Framing::ethernet;  // every link's (sim/packet.h)
};

// Two switches joined by one bottleneck link, hosts_per_side hosts on each:
// hosts [0, n) on the left, [n, 2n) on the right.
Topology dumbbell(std::uint32_t hosts_per_side, LinkSpec host_link, LinkSpec bottleneck);
// One switch, every host on it.
Topology star(std::uint32_t hosts, LinkSpec host_link);
// Every leaf linked once to every spine; hosts numbered leaf by leaf.
Topology leaf_spine(std::uint32_t leaves, std::uint32_t spines, std::uint32_t hosts_per_leaf, LinkSpec host_link,
                    LinkSpec uplink);
// The 3-tier k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches,
// (k/2)^2 cores, k^3/4 hosts (k even).
Topology fat_tree(std::uint32_t k, LinkSpec link);
// planes copies of a leaf-spine (every leaf linked to every spine by
// links_per_spine parallel links), each host with one port in every plane
// (port p in plane p). Plane p's switches are [p * (leaves + spines),
// (p + 1) * (leaves + spines)), leaves first.
Topology multi_plane(std::uint32_t planes, std::uint32_t leaves, std::uint32_t spines, std::uint32_t hosts_per_leaf,
                     LinkSpec host_link, LinkSpec uplink, std::uint32_t links_per_spine = 1);

// The most ports a host may have (planes it may join).
inline constexpr std::uint32_t kMaxHostPorts = 16;
// Each switch's plane: the connected component of the switch-to-switch
// links it belongs to, numbered from 0 in order of their lowest switch.
std::vector<std::uint32_t> switch_planes(const Topology& topology);

// What is wrong with a topology, if anything: indices out of range, a host
// with no link or more than kMaxHostPorts, a link between two hosts, a host
// with two links into one plane, a plane that does not reach every host (a
// server's own NVLink plane reaches its GPUs only), a static route over a
// link that does not exist.
std::optional<std::string> topology_problem(const Topology& topology);

}  // namespace uroce::sim
