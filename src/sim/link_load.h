// How busy each link direction is over time, for a replay's timeline: a
// tap on every transmitter (after a capture's, if the link has one) adds
// each frame's wire bytes to the sampling interval it starts in. Each tap
// belongs to its link's partition, so nothing is shared between threads,
// and a link without a tap pays nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/fabric.h"
#include "sim/rank_group.h"
#include "sim/topology.h"

namespace uroce::sim {

// One link direction's bytes per interval.
struct LinkLoadSeries {
  NodeRef from, to;
  std::uint64_t rate_bps = 0;
  std::vector<std::uint64_t> bytes;  // per interval, from time 0
};

// Over ranks, collective: each rank's series hold the frames its partitions
// sent (the others' links stay empty there); after this every rank holds
// their sums, as long as the longest.
void add_up_over_ranks(RankGroup& ranks, std::vector<LinkLoadSeries>& series);

class LinkLoad {
 public:
  // Taps every link direction of the topology (the first of parallel links).
  LinkLoad(Fabric& fabric, const Topology& topology, SimTime interval);
  LinkLoad(const LinkLoad&) = delete;
  LinkLoad& operator=(const LinkLoad&) = delete;
  ~LinkLoad();

  SimTime interval() const { return interval_; }
  std::vector<LinkLoadSeries> series() const;

 private:
  class Tap;
  SimTime interval_;
  std::vector<std::unique_ptr<Tap>> taps_;
};

}  // namespace uroce::sim
