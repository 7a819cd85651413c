// Cutting a fabric into partitions that run on their own threads. Hosts go
// to partitions in contiguous ranges (hosts under one switch, and a
// fat-tree's pods, stay together); each switch joins the partition most of
// its already placed neighbours are in, breadth-first from the hosts. The
// window, the time the partitions run between exchanges, is the shortest
// propagation delay of any link: a frame sent in a window arrives after it.
// The window depends on the topology alone, never on how many partitions
// there are, because a run stops only at a window's end (see
// PartitionedRun): one partition and several stop at the same events.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/topology.h"

namespace uroce::sim {

struct Partitioning {
  std::uint32_t parts = 1;
  std::vector<std::uint32_t> host_part;    // per host
  std::vector<std::uint32_t> switch_part;  // per switch
  SimTime window = 0;
};

// Links without propagation delay leave no window: one partition then,
// with a 1 us window for the stop checks.
inline constexpr SimTime kWindowWithoutDelay = 1 * kPicosecondsPerUs;

// parts is capped at the number of hosts (and is at least 1).
Partitioning partition_fabric(const Topology& topology, std::uint32_t parts);

}  // namespace uroce::sim
