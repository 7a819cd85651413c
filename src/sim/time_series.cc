// Taking one sample of the fabric and of the tracked flows.
#include "sim/time_series.h"

#include <algorithm>
#include <bit>

#include "transport/psn.h"

namespace uroce::sim {

TimeSeries::TimeSeries(SimWorld& world, Fabric& fabric, SimTime interval, std::vector<FlowProbe> flows)
    : world_(world), fabric_(fabric), interval_(interval) {
  for (const FlowProbe& probe : flows) {
    std::uint32_t psn = 0;
    if (fabric_.holds(NodeRef{true, probe.receiver})) {
      auto attr = fabric_.host(probe.receiver).engine().query_qp(probe.qpn);
      if (attr) psn = attr->rq_psn;
    }
    flows_.push_back(Tracked{probe, psn, 0});
  }
}

void TimeSeries::on_event(SimTime now, std::uint32_t) {
  FabricSample sample;
  sample.at = now;
  sample.counters = world_.counters;
  for (std::uint32_t s = 0; s < fabric_.switch_count(); ++s) {
    if (!fabric_.holds(NodeRef{false, s})) continue;
    const SwitchNode& node = fabric_.switch_at(s);
    sample.buffer_bytes += node.buffer_used();
    for (std::uint16_t port = 0; port < node.port_count(); ++port) {
      sample.paused_queues += static_cast<std::uint32_t>(std::popcount(node.transmitter(port).paused_mask()));
      for (std::uint8_t priority = 0; priority < kPriorities; ++priority) {
        sample.deepest_queue_bytes = std::max(sample.deepest_queue_bytes, node.egress_bytes(port, priority));
      }
    }
  }
  for (std::uint32_t h = 0; h < fabric_.host_count(); ++h) {
    if (!fabric_.holds(NodeRef{true, h})) continue;
    HostNode& host = fabric_.host(h);
    for (std::uint16_t port = 0; port < host.port_count(); ++port) {
      sample.paused_queues += static_cast<std::uint32_t>(std::popcount(host.transmitter(port).paused_mask()));
    }
  }
  samples_.push_back(sample);

  std::vector<std::uint64_t> delivered;
  delivered.reserve(flows_.size());
  for (Tracked& flow : flows_) {
    if (!fabric_.holds(NodeRef{true, flow.probe.receiver})) {
      delivered.push_back(0);
      continue;
    }
    auto attr = fabric_.host(flow.probe.receiver).engine().query_qp(flow.probe.qpn);
    if (attr) {
      flow.packets += (attr->rq_psn - flow.last_psn) & transport::kPsnMask;
      flow.last_psn = attr->rq_psn;
    }
    delivered.push_back(std::min(flow.packets * flow.probe.mtu_bytes, flow.probe.bytes));
  }
  delivered_.push_back(std::move(delivered));
  world_.events.schedule(now + interval_, this, 0);
}

void TimeSeries::gather(RankGroup& ranks) {
  if (ranks.size() == 1) return;
  std::vector<std::uint64_t> sums, deepest;
  for (const FabricSample& sample : samples_) {
    sums.push_back(sample.buffer_bytes);
    sums.push_back(sample.paused_queues);
    deepest.push_back(sample.deepest_queue_bytes);
  }
  for (const std::vector<std::uint64_t>& delivered : delivered_) sums.insert(sums.end(), delivered.begin(), delivered.end());
  ranks.sum(sums);
  ranks.max(deepest);
  std::size_t at = 0;
  for (std::size_t i = 0; i < samples_.size(); ++i) {
    samples_[i].buffer_bytes = sums[at++];
    samples_[i].paused_queues = static_cast<std::uint32_t>(sums[at++]);
    samples_[i].deepest_queue_bytes = deepest[i];
  }
  for (std::vector<std::uint64_t>& delivered : delivered_) {
    for (std::uint64_t& bytes : delivered) bytes = sums[at++];
  }
}

}  // namespace uroce::sim
