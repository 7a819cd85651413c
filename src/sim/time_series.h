// Samples of the fabric's state every interval of simulated time: switch
// buffer occupancy, the deepest egress queue, how many queues are paused, the
// running counters, and each tracked flow's delivered bytes (read from the
// receiver's expected PSN, so sampling costs the packets' path nothing).
// The counters are the fabric's (the partitioned run adds them up before a
// global event); the rest is read from the nodes this rank holds.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/fabric.h"
#include "sim/rank_group.h"

namespace uroce::sim {

struct FabricSample {
  SimTime at = 0;
  std::uint64_t buffer_bytes = 0;        // summed over switches
  std::uint64_t deepest_queue_bytes = 0;  // the largest egress queue anywhere
  std::uint32_t paused_queues = 0;       // (link direction, priority) pairs paused
  FabricCounters counters;               // running totals at this time
};

// A flow whose delivery is sampled: its responder QP and its size.
struct FlowProbe {
  std::uint32_t receiver = 0;  // host index
  std::uint32_t qpn = 0;
  std::uint32_t mtu_bytes = 0;
  std::uint64_t bytes = 0;
};

class TimeSeries final : public EventHandler {
 public:
  TimeSeries(SimWorld& world, Fabric& fabric, SimTime interval, std::vector<FlowProbe> flows);

  void start(SimTime now) { world_.events.schedule(now, this, 0); }
  SimTime interval() const { return interval_; }
  const std::vector<FabricSample>& samples() const { return samples_; }
  // delivered[sample][flow]: bytes the flow had delivered by that sample.
  const std::vector<std::vector<std::uint64_t>>& delivered() const { return delivered_; }

  void on_event(SimTime now, std::uint32_t tag) override;

  // Over ranks, collective: gives every rank the fabric's samples, from
  // each rank's samples of the nodes it holds.
  void gather(RankGroup& ranks);

 private:
  struct Tracked {
    FlowProbe probe;
    std::uint32_t last_psn = 0;
    std::uint64_t packets = 0;
  };

  SimWorld& world_;
  Fabric& fabric_;
  SimTime interval_;
  std::vector<Tracked> flows_;
  std::vector<FabricSample> samples_;
  std::vector<std::vector<std::uint64_t>> delivered_;
};

}  // namespace uroce::sim
