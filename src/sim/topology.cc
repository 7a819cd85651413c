// Topology builders and their validation.
#include "sim/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

namespace uroce::sim {

namespace {

NodeRef host(std::uint32_t index) { return NodeRef{true, index}; }
NodeRef switch_node(std::uint32_t index) { return NodeRef{false, index}; }

}  // namespace

Topology dumbbell(std::uint32_t hosts_per_side, LinkSpec host_link, LinkSpec bottleneck) {
  Topology topology;
  topology.hosts = 2 * hosts_per_side;
  topology.switches = 2;
  for (std::uint32_t i = 0; i < topology.hosts; ++i) {
    topology.edges.push_back({host(i), switch_node(i < hosts_per_side ? 0 : 1), host_link});
  }
  topology.edges.push_back({switch_node(0), switch_node(1), bottleneck});
  topology.description = fmt::format("dumbbell, {} hosts per side", hosts_per_side);
  return topology;
}

Topology star(std::uint32_t hosts, LinkSpec host_link) {
  Topology topology;
  topology.hosts = hosts;
  topology.switches = 1;
  for (std::uint32_t i = 0; i < hosts; ++i) topology.edges.push_back({host(i), switch_node(0), host_link});
  topology.description = fmt::format("star, {} hosts", hosts);
  return topology;
}

Topology leaf_spine(std::uint32_t leaves, std::uint32_t spines, std::uint32_t hosts_per_leaf, LinkSpec host_link,
                    LinkSpec uplink) {
  Topology topology;
  topology.hosts = leaves * hosts_per_leaf;
  topology.switches = leaves + spines;  // leaves first, then spines
  for (std::uint32_t leaf = 0; leaf < leaves; ++leaf) {
    for (std::uint32_t i = 0; i < hosts_per_leaf; ++i) {
      topology.edges.push_back({host(leaf * hosts_per_leaf + i), switch_node(leaf), host_link});
    }
    for (std::uint32_t spine = 0; spine < spines; ++spine) {
      topology.edges.push_back({switch_node(leaf), switch_node(leaves + spine), uplink});
    }
  }
  double down = static_cast<double>(hosts_per_leaf) * static_cast<double>(host_link.rate_bps);
  double up = static_cast<double>(spines) * static_cast<double>(uplink.rate_bps);
  topology.description = fmt::format("leaf-spine, {} leaves x {} hosts, {} spines, oversubscription {:.2f}:1",
                                     leaves, hosts_per_leaf, spines, down / up);
  return topology;
}

Topology fat_tree(std::uint32_t k, LinkSpec link) {
  Topology topology;
  std::uint32_t half = k / 2;
  topology.hosts = k * half * half;
  // Switches: edges [0, k*half), aggregations [k*half, 2*k*half), cores after.
  std::uint32_t first_aggregation = k * half;
  std::uint32_t first_core = 2 * k * half;
  topology.switches = first_core + half * half;
  for (std::uint32_t pod = 0; pod < k; ++pod) {
    for (std::uint32_t e = 0; e < half; ++e) {
      std::uint32_t edge = pod * half + e;
      for (std::uint32_t i = 0; i < half; ++i) topology.edges.push_back({host(edge * half + i), switch_node(edge), link});
      for (std::uint32_t a = 0; a < half; ++a) {
        topology.edges.push_back({switch_node(edge), switch_node(first_aggregation + pod * half + a), link});
      }
    }
    for (std::uint32_t a = 0; a < half; ++a) {
      for (std::uint32_t c = 0; c < half; ++c) {
        topology.edges.push_back(
            {switch_node(first_aggregation + pod * half + a), switch_node(first_core + a * half + c), link});
      }
    }
  }
  topology.description = fmt::format("3-tier fat-tree, k={}, {} hosts, {} switches", k, topology.hosts,
                                     topology.switches);
  return topology;
}

Topology multi_plane(std::uint32_t planes, std::uint32_t leaves, std::uint32_t spines, std::uint32_t hosts_per_leaf,
                     LinkSpec host_link, LinkSpec uplink, std::uint32_t links_per_spine) {
  Topology topology;
  topology.hosts = leaves * hosts_per_leaf;
  std::uint32_t per_plane = leaves + spines;
  topology.switches = planes * per_plane;
  for (std::uint32_t plane = 0; plane < planes; ++plane) {
    std::uint32_t first = plane * per_plane;
    for (std::uint32_t leaf = 0; leaf < leaves; ++leaf) {
      for (std::uint32_t i = 0; i < hosts_per_leaf; ++i) {
        topology.edges.push_back({host(leaf * hosts_per_leaf + i), switch_node(first + leaf), host_link});
      }
      for (std::uint32_t spine = 0; spine < spines; ++spine) {
        for (std::uint32_t i = 0; i < links_per_spine; ++i) {
          topology.edges.push_back({switch_node(first + leaf), switch_node(first + leaves + spine), uplink});
        }
      }
    }
  }
  double down = static_cast<double>(hosts_per_leaf) * static_cast<double>(host_link.rate_bps);
  double up = static_cast<double>(spines) * links_per_spine * static_cast<double>(uplink.rate_bps);
  topology.description =
      fmt::format("multi-plane leaf-spine, {} planes of {} leaves x {} hosts and {} spines, oversubscription {:.2f}:1",
                  planes, leaves, hosts_per_leaf, spines, down / up);
  return topology;
}

std::vector<std::uint32_t> switch_planes(const Topology& topology) {
  std::vector<std::vector<std::uint32_t>> neighbours(topology.switches);
  for (const TopologyEdge& edge : topology.edges) {
    if (edge.a.is_host || edge.b.is_host) continue;
    if (edge.a.index >= topology.switches || edge.b.index >= topology.switches) continue;
    neighbours[edge.a.index].push_back(edge.b.index);
    neighbours[edge.b.index].push_back(edge.a.index);
  }
  constexpr std::uint32_t kUnseen = UINT32_MAX;
  std::vector<std::uint32_t> plane(topology.switches, kUnseen);
  std::uint32_t planes = 0;
  std::vector<std::uint32_t> frontier;
  for (std::uint32_t start = 0; start < topology.switches; ++start) {
    if (plane[start] != kUnseen) continue;
    plane[start] = planes;
    frontier.assign(1, start);
    while (!frontier.empty()) {
      std::uint32_t s = frontier.back();
      frontier.pop_back();
      for (std::uint32_t n : neighbours[s]) {
        if (plane[n] == kUnseen) {
          plane[n] = planes;
          frontier.push_back(n);
        }
      }
    }
    ++planes;
  }
  return plane;
}

std::uint32_t ServerLayout::whole_servers(const std::vector<std::uint32_t>& hosts) const {
  if (gpus == 0 || hosts.empty() || hosts.size() % gpus != 0) return 0;
  for (std::size_t block = 0; block < hosts.size(); block += gpus) {
    std::vector<bool> seen(gpus, false);
    for (std::size_t i = block; i < block + gpus; ++i) {
      if (!same_server(hosts[block], hosts[i]) || seen[hosts[i] % gpus]) return 0;
      seen[hosts[i] % gpus] = true;
    }
  }
  return gpus;
}

std::optional<std::string> topology_problem(const Topology& topology) {
  if (topology.hosts == 0) return "no hosts";
  if (topology.switches == 0) return "no switches";
  std::vector<std::uint32_t> attachments(topology.hosts, 0);
  std::vector<std::vector<std::uint32_t>> neighbours(topology.switches);
  for (const TopologyEdge& edge : topology.edges) {
    for (const NodeRef& end : {edge.a, edge.b}) {
      std::uint32_t limit = end.is_host ? topology.hosts : topology.switches;
      if (end.index >= limit) {
        return fmt::format("a link names {} {}, but there are only {}", end.is_host ? "host" : "switch", end.index,
                           limit);
      }
    }
    if (edge.a.is_host && edge.b.is_host) return fmt::format("hosts {} and {} are linked directly", edge.a.index, edge.b.index);
    if (edge.link.rate_bps == 0) return "a link has no rate";
    if (edge.link.propagation < 0) return "a link has a negative delay";
    if (edge.a.is_host) ++attachments[edge.a.index];
    if (edge.b.is_host) ++attachments[edge.b.index];
    if (!edge.a.is_host && !edge.b.is_host) {
      neighbours[edge.a.index].push_back(edge.b.index);
      neighbours[edge.b.index].push_back(edge.a.index);
    }
  }
  for (std::uint32_t h = 0; h < topology.hosts; ++h) {
    if (attachments[h] == 0) return fmt::format("host {} has no link", h);
    if (attachments[h] > kMaxHostPorts) {
      return fmt::format("host {} has {} links; a host has at most {} ports", h, attachments[h], kMaxHostPorts);
    }
  }
  // Planes: every host in each plane once, and only once.
  std::vector<std::uint32_t> plane = switch_planes(topology);
  std::uint32_t planes = plane.empty() ? 0 : *std::max_element(plane.begin(), plane.end()) + 1;
  std::vector<std::uint32_t> reached(static_cast<std::size_t>(planes) * topology.hosts, 0);
  for (const TopologyEdge& edge : topology.edges) {
    if (edge.a.is_host == edge.b.is_host) continue;
    const NodeRef& h = edge.a.is_host ? edge.a : edge.b;
    const NodeRef& s = edge.a.is_host ? edge.b : edge.a;
    std::uint32_t& count = reached[static_cast<std::size_t>(plane[s.index]) * topology.hosts + h.index];
    if (++count > 1) {
      return fmt::format("host {} has two links into the plane of switch {}; a host has one port per plane", h.index,
                         s.index);
    }
  }
  const ServerLayout& servers = topology.servers;
  if (servers.gpus != 0 && topology.hosts % servers.gpus != 0) {
    return fmt::format("{} hosts are not whole servers of {} GPUs", topology.hosts, servers.gpus);
  }
  for (std::uint32_t p = 0; p < planes; ++p) {
    // A server's NVLink plane (a NIC per GPU) must reach that server's GPUs only.
    std::uint32_t first = 0, end = topology.hosts;
    if (servers.nvlink_port) {
      for (std::uint32_t h = 0; h < topology.hosts; ++h) {
        if (reached[static_cast<std::size_t>(p) * topology.hosts + h] == 0) continue;
        std::uint32_t server = h / servers.gpus;
        bool local = true;
        for (std::uint32_t other = h; other < topology.hosts && local; ++other) {
          local = reached[static_cast<std::size_t>(p) * topology.hosts + other] == 0 ||
                  servers.same_server(h, other);
        }
        if (local) std::tie(first, end) = std::pair(server * servers.gpus, (server + 1) * servers.gpus);
        break;
      }
    }
    for (std::uint32_t h = first; h < end; ++h) {
      if (reached[static_cast<std::size_t>(p) * topology.hosts + h] != 0) continue;
      std::uint32_t s = static_cast<std::uint32_t>(std::find(plane.begin(), plane.end(), p) - plane.begin());
      return planes == 1 ? fmt::format("host {} is not linked", h)
                         : fmt::format("switch {} is not connected to host {} (every plane must reach every host)",
                                       s, h);
    }
  }
  for (const StaticRoute& route : topology.routes) {
    if (route.at_switch >= topology.switches || route.via_switch >= topology.switches) {
      return fmt::format("a route names switch {}, but there are only {}", std::max(route.at_switch, route.via_switch),
                         topology.switches);
    }
    if (route.to_host >= topology.hosts) {
      return fmt::format("a route names host {}, but there are only {}", route.to_host, topology.hosts);
    }
    const std::vector<std::uint32_t>& next = neighbours[route.at_switch];
    if (std::find(next.begin(), next.end(), route.via_switch) == next.end()) {
      return fmt::format("a route leads from switch {} to switch {}, which are not linked", route.at_switch,
                         route.via_switch);
    }
  }
  return std::nullopt;
}

}  // namespace uroce::sim
