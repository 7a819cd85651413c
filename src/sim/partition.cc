// Placing hosts and switches into partitions.
#include "sim/partition.h"

#include <algorithm>

namespace uroce::sim {

namespace {

constexpr std::uint32_t kUnplaced = UINT32_MAX;

}  // namespace

Partitioning partition_fabric(const Topology& topology, std::uint32_t parts) {
  Partitioning out;
  out.window = kSimNever;
  for (const TopologyEdge& edge : topology.edges) out.window = std::min(out.window, edge.link.propagation);
  if (out.window <= 0 || out.window == kSimNever) {
    out.window = kWindowWithoutDelay;
    parts = 1;
  }
  out.parts = std::clamp<std::uint32_t>(parts, 1, std::max<std::uint32_t>(topology.hosts, 1));
  out.host_part.resize(topology.hosts);
  for (std::uint32_t h = 0; h < topology.hosts; ++h) {
    out.host_part[h] = static_cast<std::uint32_t>(std::uint64_t{h} * out.parts / topology.hosts);
  }
  out.switch_part.assign(topology.switches, kUnplaced);
  if (out.parts == 1) {
    std::fill(out.switch_part.begin(), out.switch_part.end(), 0);
    return out;
  }
  // Each switch's neighbours, hosts first as parts.
  std::vector<std::vector<NodeRef>> neighbours(topology.switches);
  for (const TopologyEdge& edge : topology.edges) {
    if (!edge.a.is_host) neighbours[edge.a.index].push_back(edge.b);
    if (!edge.b.is_host) neighbours[edge.b.index].push_back(edge.a);
  }
  auto part_of = [&](const NodeRef& node) { return node.is_host ? out.host_part[node.index] : out.switch_part[node.index]; };
  std::vector<std::uint32_t> votes(out.parts);
  for (bool placed_any = true; placed_any;) {
    placed_any = false;
    std::vector<std::uint32_t> round(topology.switches, kUnplaced);  // a layer decides on the one before it
    for (std::uint32_t s = 0; s < topology.switches; ++s) {
      if (out.switch_part[s] != kUnplaced) continue;
      std::fill(votes.begin(), votes.end(), 0);
      bool any = false;
      for (const NodeRef& n : neighbours[s]) {
        std::uint32_t part = part_of(n);
        if (part == kUnplaced) continue;
        ++votes[part];
        any = true;
      }
      if (!any) continue;
      std::uint32_t best = *std::max_element(votes.begin(), votes.end());
      // A tie (a core switch between pods) goes round the partitions.
      std::uint32_t tied = static_cast<std::uint32_t>(std::count(votes.begin(), votes.end(), best));
      std::uint32_t pick = s % tied;
      for (std::uint32_t part = 0; part < out.parts; ++part) {
        if (votes[part] != best) continue;
        if (pick-- == 0) {
          round[s] = part;
          break;
        }
      }
    }
    for (std::uint32_t s = 0; s < topology.switches; ++s) {
      if (round[s] == kUnplaced) continue;
      out.switch_part[s] = round[s];
      placed_any = true;
    }
  }
  for (std::uint32_t s = 0; s < topology.switches; ++s) {
    if (out.switch_part[s] == kUnplaced) out.switch_part[s] = s % out.parts;  // linked to nothing
  }
  return out;
}

}  // namespace uroce::sim
