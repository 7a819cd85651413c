// Building the fabric and its routing tables.
#include "sim/fabric.h"

#include <algorithm>
#include <map>
#include <memory>

#include "sim/mix.h"

namespace uroce::sim {

Fabric::Fabric(SimWorld& world, const Topology& topology, const SwitchConfig& switch_config,
               const EngineConfig& engine_config, std::uint64_t seed)
    : Fabric({&world}, partition_fabric(topology, 1), topology, switch_config, engine_config, seed) {}

Fabric::Fabric(const std::vector<SimWorld*>& worlds, const Partitioning& partitioning, const Topology& topology,
               const SwitchConfig& switch_config, const EngineConfig& engine_config, std::uint64_t seed)
    : topology_(topology) {
  for (SimWorld* world : worlds) {
    for (std::vector<Outbox>& outboxes : world->outboxes) outboxes.resize(worlds.size());
  }
  auto part_of = [&](const NodeRef& node) {
    return node.is_host ? partitioning.host_part[node.index] : partitioning.switch_part[node.index];
  };
  auto world_of = [&](const NodeRef& node) -> SimWorld& { return *worlds[part_of(node)]; };
  std::uint64_t seeds = seed;
  for (std::uint32_t s = 0; s < topology.switches; ++s) {
    switches_.push_back(std::make_unique<SwitchNode>(world_of(NodeRef{false, s}), switch_config, s, splitmix64(seeds)));
  }
  switch_ports_.resize(topology.switches);
  // A host's ports, in the order of its links (one per plane).
  std::vector<std::vector<LinkSpec>> host_links(topology.hosts);
  host_ports_.resize(topology.hosts);
  for (const TopologyEdge& edge : topology.edges) {
    if (edge.a.is_host) host_links[edge.a.index].push_back(edge.link);
    if (edge.b.is_host) host_links[edge.b.index].push_back(edge.link);
  }
  for (std::uint32_t h = 0; h < topology.hosts; ++h) {
    EngineConfig config = engine_config;
    config.seed = splitmix64(seeds);
    double line_rate = 0;  // a QP may spread over every port; a GPU's paced QPs go through a NIC
    for (const LinkSpec& link : host_links[h]) line_rate += static_cast<double>(link.rate_bps);
    if (topology.servers.gpus != 0) line_rate = static_cast<double>(topology.servers.nic_rate_bps);
    config.congestion.dcqcn.line_rate_bps = line_rate;
    hosts_.push_back(std::make_unique<HostNode>(world_of(NodeRef{true, h}), h, config, host_links[h]));
    hosts_.back()->set_servers(topology.servers);
  }
  for (const TopologyEdge& edge : topology.edges) {
    auto port_of = [&](const NodeRef& end, const NodeRef& other) -> std::pair<Transmitter*, std::uint16_t> {
      if (end.is_host) {
        auto port = static_cast<std::uint16_t>(host_ports_[end.index].size());
        host_ports_[end.index].push_back(other.index);
        return {&hosts_[end.index]->transmitter(port), port};
      }
      std::uint16_t port = switches_[end.index]->add_port(edge.link);
      switch_ports_[end.index].push_back({port, other});
      return {&switches_[end.index]->transmitter(port), port};
    };
    auto [a_side, a_port] = port_of(edge.a, edge.b);
    auto [b_side, b_port] = port_of(edge.b, edge.a);
    for (Transmitter* side : {a_side, b_side}) {
      side->set_link_id(static_cast<std::uint32_t>(links_.size()));
      links_.push_back(side);
    }
    Node& a_node = edge.a.is_host ? static_cast<Node&>(*hosts_[edge.a.index]) : *switches_[edge.a.index];
    Node& b_node = edge.b.is_host ? static_cast<Node&>(*hosts_[edge.b.index]) : *switches_[edge.b.index];
    std::uint32_t a_part = part_of(edge.a);
    std::uint32_t b_part = part_of(edge.b);
    bool crossing = a_part != b_part;  // then each side sends through its outbox for the other
    a_side->connect(b_node, b_port, worlds[b_part], crossing ? std::optional(b_part) : std::nullopt);
    b_side->connect(a_node, a_port, worlds[a_part], crossing ? std::optional(a_part) : std::nullopt);
    if (edge.link.loss > 0) {
      a_side->seed_losses(splitmix64(seeds));
      b_side->seed_losses(splitmix64(seeds));
    }
  }
  build_routes(topology);
}

// Shortest paths by hop count over the links that are up. Hosts under the same switch share every other
// switch's distances, so one breadth-first search runs per switch that has
// hosts, and each switch interns its distinct sets of equal-cost ports and
// keeps one entry per such target switch. A switch's own hosts and static
// routes are per-host overrides. In a multi-plane fabric each plane routes
// to a host through that host's switch in the plane.
void Fabric::build_routes(const Topology& topology) {
  std::uint32_t switches = topology.switches;
  std::vector<std::uint32_t> plane = switch_planes(topology);
  std::uint32_t planes = *std::max_element(plane.begin(), plane.end()) + 1;
  std::vector<std::vector<std::uint32_t>> attached_to(planes, std::vector<std::uint32_t>(topology.hosts, 0));
  std::vector<bool> has_hosts(switches, false);
  for (std::uint32_t s = 0; s < switches; ++s) {
    for (const Neighbour& n : switch_ports_[s]) {
      if (!n.node.is_host) continue;
      attached_to[plane[s]][n.node.index] = s;
      has_hosts[s] = true;
    }
  }
  std::vector<std::shared_ptr<const std::vector<std::uint32_t>>> switch_of_host;
  for (auto& attachments : attached_to) {
    switch_of_host.push_back(std::make_shared<const std::vector<std::uint32_t>>(std::move(attachments)));
  }
  std::vector<SwitchNode::Routes> routes(switches);
  for (std::uint32_t s = 0; s < switches; ++s) {
    routes[s].switch_of_host = switch_of_host[plane[s]];
    routes[s].group_of_switch.assign(switches, 0);
  }
  std::vector<std::map<std::vector<std::uint16_t>, std::uint32_t>> interned(switches);
  auto intern = [&](std::uint32_t s, std::vector<std::uint16_t> ports) {
    auto [it, fresh] = interned[s].try_emplace(ports, static_cast<std::uint32_t>(routes[s].groups.size()));
    if (fresh) routes[s].groups.push_back(std::move(ports));
    return it->second;
  };

  constexpr std::uint32_t kUnreached = UINT32_MAX;
  std::vector<std::uint32_t> distance(switches);
  std::vector<std::uint32_t> frontier, next;
  for (std::uint32_t target = 0; target < switches; ++target) {
    if (!has_hosts[target]) continue;
    std::fill(distance.begin(), distance.end(), kUnreached);
    distance[target] = 0;
    frontier.assign(1, target);
    while (!frontier.empty()) {
      next.clear();
      for (std::uint32_t s : frontier) {
        for (const Neighbour& n : switch_ports_[s]) {
          if (n.node.is_host || distance[n.node.index] != kUnreached || !link_up(s, n.port)) continue;
          distance[n.node.index] = distance[s] + 1;
          next.push_back(n.node.index);
        }
      }
      frontier.swap(next);
    }
    for (std::uint32_t s = 0; s < switches; ++s) {
      if (s == target) {
        for (const Neighbour& n : switch_ports_[s]) {
          if (n.node.is_host) routes[s].host_overrides[n.node.index] = intern(s, {n.port});
        }
        continue;
      }
      if (plane[s] != plane[target]) continue;
      std::vector<std::uint16_t> ports;
      for (const Neighbour& n : switch_ports_[s]) {
        if (n.node.is_host || !link_up(s, n.port) || distance[s] == kUnreached) continue;
        if (distance[n.node.index] != kUnreached && distance[n.node.index] + 1 == distance[s]) ports.push_back(n.port);
      }
      routes[s].group_of_switch[target] = intern(s, std::move(ports));
    }
  }
  for (const StaticRoute& route : topology.routes) {
    std::vector<std::uint16_t> ports;
    for (const Neighbour& n : switch_ports_[route.at_switch]) {
      if (!n.node.is_host && n.node.index == route.via_switch) ports.push_back(n.port);
    }
    routes[route.at_switch].host_overrides[route.to_host] = intern(route.at_switch, std::move(ports));
  }
  for (std::uint32_t s = 0; s < switches; ++s) switches_[s]->set_routes(std::move(routes[s]));
}

Transmitter* Fabric::transmitter_between(NodeRef from, NodeRef to) {
  if (from.is_host) {
    if (from.index >= hosts_.size() || to.is_host || to.index >= switches_.size()) return nullptr;
    const std::vector<std::uint32_t>& ports = host_ports_[from.index];
    auto it = std::find(ports.begin(), ports.end(), to.index);
    if (it == ports.end()) return nullptr;
    return &hosts_[from.index]->transmitter(static_cast<std::uint16_t>(it - ports.begin()));
  }
  if (from.index >= switches_.size()) return nullptr;
  for (const Neighbour& n : switch_ports_[from.index]) {
    if (n.node == to) return &switches_[from.index]->transmitter(n.port);
  }
  return nullptr;
}

bool Fabric::set_link_down(NodeRef a, NodeRef b, bool down, SimTime now) {
  if (a.is_host && b.is_host) return false;
  if (a.is_host) std::swap(a, b);  // a is a switch
  if (a.index >= switches_.size() || (b.is_host ? b.index >= hosts_.size() : b.index >= switches_.size())) return false;
  bool found = false;
  for (const Neighbour& n : switch_ports_[a.index]) {
    if (!(n.node == b)) continue;
    found = true;
    switches_[a.index]->transmitter(n.port).set_down(down, now);
    if (!b.is_host) {
      for (const Neighbour& back : switch_ports_[b.index]) {
        if (back.node == a) switches_[b.index]->transmitter(back.port).set_down(down, now);
      }
    }
  }
  if (found && b.is_host) transmitter_between(b, a)->set_down(down, now);
  return found;
}

bool Fabric::set_switch_down(std::uint32_t switch_index, bool down, SimTime now) {
  if (switch_index >= switches_.size()) return false;
  for (const Neighbour& n : switch_ports_[switch_index]) set_link_down(NodeRef{false, switch_index}, n.node, down, now);
  return true;
}

void Fabric::close_pauses(SimTime now) {
  for (auto& host : hosts_) {
    for (std::uint16_t port = 0; port < host->port_count(); ++port) host->transmitter(port).close_pauses(now);
  }
  for (auto& s : switches_) {
    for (std::uint16_t port = 0; port < s->port_count(); ++port) s->transmitter(port).close_pauses(now);
  }
}

}  // namespace uroce::sim
