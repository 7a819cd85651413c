// Turning a fabric's NICs into GPU servers.
#include "sim/gpu_servers.h"

#include <fmt/format.h>

#include <stdexcept>

namespace uroce::sim {

Topology with_gpu_servers(const Topology& fabric, const GpuServerSpec& spec) {
  std::uint32_t gpus = spec.gpus;
  if (gpus == 0) throw std::invalid_argument("a server needs at least one GPU");
  bool rail = spec.nics == ServerNics::rail;
  if (rail && fabric.hosts % gpus != 0) {
    throw std::invalid_argument(fmt::format("{} NICs are not whole servers of {} GPUs with a NIC each", fabric.hosts,
                                            gpus));
  }
  std::uint32_t servers = rail ? fabric.hosts / gpus : fabric.hosts;
  std::uint32_t nvlink_switches = fabric.switches;  // the first server's
  // Rail by rail: NIC r * servers + s is GPU r of server s.
  auto gpu_of_nic = [&](std::uint32_t nic) { return (nic % servers) * gpus + nic / servers; };

  Topology topology;
  topology.framing = fabric.framing;  // the NVLink links frame as the fabric's do
  topology.hosts = servers * gpus;
  topology.switches = fabric.switches + servers;
  std::uint64_t nic_rate = 0;
  for (const TopologyEdge& edge : fabric.edges) {
    TopologyEdge moved = edge;
    for (NodeRef* end : {&moved.a, &moved.b}) {
      if (!end->is_host) continue;
      nic_rate = edge.link.rate_bps;
      *end = rail ? NodeRef{true, gpu_of_nic(end->index)} : NodeRef{false, nvlink_switches + end->index};
    }
    topology.edges.push_back(moved);
  }
  for (std::uint32_t h = 0; h < topology.hosts; ++h) {
    topology.edges.push_back({NodeRef{true, h}, NodeRef{false, nvlink_switches + h / gpus}, spec.nvlink});
  }
  for (const StaticRoute& route : fabric.routes) {
    if (rail) {
      topology.routes.push_back({route.at_switch, gpu_of_nic(route.to_host), route.via_switch});
      continue;
    }
    for (std::uint32_t g = 0; g < gpus; ++g) {
      topology.routes.push_back({route.at_switch, route.to_host * gpus + g, route.via_switch});
    }
  }
  topology.servers = ServerLayout{gpus, rail, nic_rate, spec.nvlink};
  topology.description = fmt::format("{} servers of {} GPUs ({} Gb/s NVLink, {}) on {}", servers, gpus,
                                     static_cast<double>(spec.nvlink.rate_bps) / 1e9,
                                     rail ? "a NIC per GPU, rail-optimized" : "one shared NIC", fabric.description);
  return topology;
}

}  // namespace uroce::sim
