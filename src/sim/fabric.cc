// Building the fabric and its routing tables.
#include "sim/fabric.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include "sim/mix.h"

namespace uroce::sim {

// A node another rank runs, as the links that border it here see it: its
// event group, and nothing to send or receive (frames for it leave through
// an outbox, and its own transmitters here only land what it sent).
class Fabric::RemoteNode final : public Node {
 public:
  explicit RemoteNode(std::uint32_t group) : group_(group) {}
  void receive(Packet*, std::uint16_t, SimTime) override {
    throw std::logic_error("simulated fabric: a frame reached a node another rank runs");
  }
  Packet* next_to_send(std::uint16_t, SimTime) override { return nullptr; }
  bool may_have_more(std::uint16_t) const override { return false; }
  std::uint32_t event_group() const override { return group_; }

 private:
  std::uint32_t group_;
};

Fabric::Fabric(SimWorld& world, const Topology& topology, const SwitchConfig& switch_config,
               const EngineConfig& engine_config, std::uint64_t seed)
    : Fabric({&world}, partition_fabric(topology, 1), topology, switch_config, engine_config, seed) {}

Fabric::Fabric(const std::vector<SimWorld*>& worlds, const Partitioning& partitioning, const Topology& topology,
               const SwitchConfig& switch_config, const EngineConfig& engine_config, std::uint64_t seed)
    : Fabric(worlds, partitioning, topology, switch_config, engine_config, seed, nullptr, nullptr) {}

Fabric::Fabric(const std::vector<SimWorld*>& worlds, const Partitioning& partitioning, const Topology& topology,
               const SwitchConfig& switch_config, const EngineConfig& engine_config, std::uint64_t seed,
               RankGroup& ranks, const std::vector<std::uint32_t>& part_rank)
    : Fabric(worlds, partitioning, topology, switch_config, engine_config, seed, &ranks, &part_rank) {}

Fabric::~Fabric() = default;

Fabric::Fabric(const std::vector<SimWorld*>& worlds, const Partitioning& partitioning, const Topology& topology,
               const SwitchConfig& switch_config, const EngineConfig& engine_config, std::uint64_t seed,
               RankGroup* ranks, const std::vector<std::uint32_t>* part_rank)
    : topology_(topology),
      worlds_(worlds),
      host_part_(partitioning.host_part),
      switch_part_(partitioning.switch_part),
      hosts_(topology.hosts),
      switches_(topology.switches),
      remote_hosts_(topology.hosts),
      remote_switches_(topology.switches) {
  for (SimWorld* world : worlds) {
    for (std::vector<Outbox>& outboxes : world->outboxes) outboxes.resize(worlds.size());
  }
  auto part_of = [&](const NodeRef& node) { return node.is_host ? host_part_[node.index] : switch_part_[node.index]; };
  auto built_here = [&](const NodeRef& node) {
    return part_rank == nullptr || (*part_rank)[part_of(node)] == ranks->rank();
  };
  // Seeds and handler numbers are drawn for every node, built or not.
  std::uint64_t seeds = seed;
  for (std::uint32_t s = 0; s < topology.switches; ++s) {
    std::uint64_t switch_seed = splitmix64(seeds);
    if (built_here(NodeRef{false, s})) {
      switches_[s] = std::make_unique<SwitchNode>(world_of(NodeRef{false, s}), switch_config, s, switch_seed);
    }
  }
  switch_ports_.resize(topology.switches);
  // A host's ports, in the order of its links (one per plane), and the switch each leads to.
  std::vector<std::vector<LinkSpec>> host_links(topology.hosts);
  std::vector<std::vector<std::uint32_t>> host_uplinks(topology.hosts);
  host_ports_.resize(topology.hosts);
  for (const TopologyEdge& edge : topology.edges) {
    for (auto [end, other] : {std::pair{edge.a, edge.b}, std::pair{edge.b, edge.a}}) {
      if (!end.is_host) continue;
      host_links[end.index].push_back(edge.link);
      host_uplinks[end.index].push_back(other.index);
    }
  }
  // The far transmitters of links from hosts left out, by host and port,
  // made where the host's own would be (so their handlers' numbers match).
  std::map<std::pair<std::uint32_t, std::uint16_t>, Transmitter*> border_of_host;
  for (std::uint32_t h = 0; h < topology.hosts; ++h) {
    EngineConfig config = engine_config;
    config.seed = splitmix64(seeds);
    if (!built_here(NodeRef{true, h})) {
      EventHandler::skip_ids(1);  // the host's own
      for (std::uint16_t port = 0; port < host_links[h].size(); ++port) {
        if (!built_here(NodeRef{false, host_uplinks[h][port]})) {
          EventHandler::skip_ids(2);  // a transmitter and its arrivals
          continue;
        }
        border_.push_back(std::make_unique<Transmitter>(world_of(NodeRef{true, h}), host_links[h][port],
                                                        remote(NodeRef{true, h}), port));
        border_of_host[{h, port}] = border_.back().get();
      }
      continue;
    }
    double line_rate = 0;  // a QP may spread over every port; a GPU's paced QPs go through a NIC
    for (const LinkSpec& link : host_links[h]) line_rate += static_cast<double>(link.rate_bps);
    if (topology.servers.gpus != 0) line_rate = static_cast<double>(topology.servers.nic_rate_bps);
    config.congestion.dcqcn.line_rate_bps = line_rate;
    hosts_[h] = std::make_unique<HostNode>(world_of(NodeRef{true, h}), h, config, host_links[h]);
    hosts_[h]->set_servers(topology.servers);
    hosts_[h]->set_framing(topology.framing);
  }
  for (const TopologyEdge& edge : topology.edges) {
    auto link_id = static_cast<std::uint32_t>(links_.size());
    // This end's transmitter towards other: its own, the far side of a
    // link into a node built here, or none.
    auto port_of = [&](const NodeRef& end, const NodeRef& other, std::uint32_t id) -> std::pair<Transmitter*, std::uint16_t> {
      if (end.is_host) {
        auto port = static_cast<std::uint16_t>(host_ports_[end.index].size());
        host_ports_[end.index].push_back({other.index, id});
        if (hosts_[end.index] != nullptr) return {&hosts_[end.index]->transmitter(port), port};
        auto border = border_of_host.find({end.index, port});
        return {border == border_of_host.end() ? nullptr : border->second, port};
      }
      auto port = static_cast<std::uint16_t>(switch_ports_[end.index].size());
      switch_ports_[end.index].push_back({port, other, 0, id});
      if (switches_[end.index] != nullptr) {
        switches_[end.index]->add_port(edge.link);
        return {&switches_[end.index]->transmitter(port), port};
      }
      if (!built_here(other)) {
        EventHandler::skip_ids(2);
        return {nullptr, port};
      }
      border_.push_back(std::make_unique<Transmitter>(world_of(end), edge.link, remote(end), port));
      return {border_.back().get(), port};
    };
    auto [a_side, a_port] = port_of(edge.a, edge.b, link_id);
    auto [b_side, b_port] = port_of(edge.b, edge.a, link_id + 1);
    if (!edge.a.is_host) switch_ports_[edge.a.index].back().peer_port = b_port;
    if (!edge.b.is_host) switch_ports_[edge.b.index].back().peer_port = a_port;
    for (Transmitter* side : {a_side, b_side}) {
      if (side != nullptr) side->set_link_id(static_cast<std::uint32_t>(links_.size()));
      links_.push_back(side);
    }
    auto node_of = [&](const NodeRef& end) -> Node& {
      if (!holds(end)) return remote(end);
      return end.is_host ? static_cast<Node&>(*hosts_[end.index]) : *switches_[end.index];
    };
    std::uint32_t a_part = part_of(edge.a);
    std::uint32_t b_part = part_of(edge.b);
    bool crossing = a_part != b_part;  // then each side sends through its outbox for the other
    if (a_side != nullptr) a_side->connect(node_of(edge.b), b_port, worlds[b_part], crossing ? std::optional(b_part) : std::nullopt);
    if (b_side != nullptr) b_side->connect(node_of(edge.a), a_port, worlds[a_part], crossing ? std::optional(a_part) : std::nullopt);
    if (edge.link.loss > 0) {
      std::uint64_t a_losses = splitmix64(seeds);
      std::uint64_t b_losses = splitmix64(seeds);
      if (a_side != nullptr) a_side->seed_losses(a_losses);
      if (b_side != nullptr) b_side->seed_losses(b_losses);
    }
  }
  down_.assign(links_.size(), false);
  build_routes(topology);
  // Every host's region key, from the rank that holds it.
  std::vector<std::uint64_t> keys(topology.hosts, 0);
  for (std::uint32_t h = 0; h < topology.hosts; ++h) {
    if (hosts_[h] != nullptr) keys[h] = hosts_[h]->region().rkey;
  }
  if (ranks != nullptr) ranks->sum(keys);
  rkeys_.assign(keys.begin(), keys.end());
}

SimWorld& Fabric::world_of(NodeRef node) const {
  return *worlds_[node.is_host ? host_part_[node.index] : switch_part_[node.index]];
}

Node& Fabric::remote(NodeRef node) {
  std::unique_ptr<RemoteNode>& made = node.is_host ? remote_hosts_[node.index] : remote_switches_[node.index];
  if (made == nullptr) {
    made = std::make_unique<RemoteNode>(node.is_host ? node.index : SwitchNode::kSwitchGroups | node.index);
  }
  return *made;
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
    if (switches_[s] == nullptr) continue;  // another rank's: routed there
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
      if (switches_[s] == nullptr) continue;
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
    if (switches_[route.at_switch] == nullptr) continue;
    std::vector<std::uint16_t> ports;
    for (const Neighbour& n : switch_ports_[route.at_switch]) {
      if (!n.node.is_host && n.node.index == route.via_switch) ports.push_back(n.port);
    }
    routes[route.at_switch].host_overrides[route.to_host] = intern(route.at_switch, std::move(ports));
  }
  for (std::uint32_t s = 0; s < switches; ++s) {
    if (switches_[s] != nullptr) switches_[s]->set_routes(std::move(routes[s]));
  }
}

bool Fabric::linked(NodeRef from, NodeRef to) const {
  if (from.is_host) {
    if (from.index >= hosts_.size() || to.is_host || to.index >= switches_.size()) return false;
    const std::vector<HostPort>& ports = host_ports_[from.index];
    return std::any_of(ports.begin(), ports.end(), [&](const HostPort& port) { return port.switch_index == to.index; });
  }
  if (from.index >= switches_.size()) return false;
  const std::vector<Neighbour>& ports = switch_ports_[from.index];
  return std::any_of(ports.begin(), ports.end(), [&](const Neighbour& n) { return n.node == to; });
}

Transmitter* Fabric::transmitter_between(NodeRef from, NodeRef to) {
  if (from.is_host) {
    if (from.index >= hosts_.size() || to.is_host || to.index >= switches_.size()) return nullptr;
    const std::vector<HostPort>& ports = host_ports_[from.index];
    auto it = std::find_if(ports.begin(), ports.end(), [&](const HostPort& port) { return port.switch_index == to.index; });
    if (it == ports.end() || hosts_[from.index] == nullptr) return nullptr;
    return &hosts_[from.index]->transmitter(static_cast<std::uint16_t>(it - ports.begin()));
  }
  if (from.index >= switches_.size() || switches_[from.index] == nullptr) return nullptr;
  for (const Neighbour& n : switch_ports_[from.index]) {
    if (n.node == to) return &switches_[from.index]->transmitter(n.port);
  }
  return nullptr;
}

// Every copy of a link direction on this rank goes down: the sender's
// transmitter, or the far side that holds what is on its wire here.
void Fabric::set_direction_down(std::uint32_t link_id, bool down, SimTime now) {
  down_[link_id] = down;
  if (links_[link_id] != nullptr) links_[link_id]->set_down(down, now);
}

bool Fabric::set_link_down(NodeRef a, NodeRef b, bool down, SimTime now) {
  if (a.is_host && b.is_host) return false;
  if (a.is_host) std::swap(a, b);  // a is a switch
  if (a.index >= switches_.size() || (b.is_host ? b.index >= hosts_.size() : b.index >= switches_.size())) return false;
  bool found = false;
  for (const Neighbour& n : switch_ports_[a.index]) {
    if (!(n.node == b)) continue;
    found = true;
    set_direction_down(n.link_id, down, now);
    if (!b.is_host) {
      for (const Neighbour& back : switch_ports_[b.index]) {
        if (back.node == a) set_direction_down(back.link_id, down, now);
      }
    }
  }
  if (found && b.is_host) {  // the host's first link to the switch
    for (const HostPort& port : host_ports_[b.index]) {
      if (port.switch_index != a.index) continue;
      set_direction_down(port.link_id, down, now);
      break;
    }
  }
  return found;
}

bool Fabric::set_switch_down(std::uint32_t switch_index, bool down, SimTime now) {
  if (switch_index >= switches_.size()) return false;
  for (const Neighbour& n : switch_ports_[switch_index]) set_link_down(NodeRef{false, switch_index}, n.node, down, now);
  return true;
}

void Fabric::close_pauses(SimTime now) {
  for (auto& host : hosts_) {
    if (host == nullptr) continue;
    for (std::uint16_t port = 0; port < host->port_count(); ++port) host->transmitter(port).close_pauses(now);
  }
  for (auto& s : switches_) {
    if (s == nullptr) continue;
    for (std::uint16_t port = 0; port < s->port_count(); ++port) s->transmitter(port).close_pauses(now);
  }
}

}  // namespace uroce::sim
