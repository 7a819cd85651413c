// The simulation run: build the fabric, connect every flow's QP pair, start
// each flow at its time with WRITEs of its size, run events until every flow
// completed or the time limit, then add up the counters.
#include "sim/simulation.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "sim/fabric.h"
#include "sim/qp_setup.h"

namespace uroce::sim {

namespace {

constexpr std::uint64_t kLargestWrite = 1ull << 30;
constexpr std::uint32_t kLargestFlowWrites = 64;
constexpr std::uint64_t kEventsPerProgressReport = 1 << 18;

void check(const Scenario& scenario) {
  if (auto problem = topology_problem(scenario.topology)) throw std::invalid_argument("topology: " + *problem);
  for (std::size_t i = 0; i < scenario.flows.size(); ++i) {
    const FlowSpec& flow = scenario.flows[i];
    std::string name = "flow " + std::to_string(i);
    if (flow.src >= scenario.topology.hosts || flow.dst >= scenario.topology.hosts) {
      throw std::invalid_argument(name + " names a host beyond the " + std::to_string(scenario.topology.hosts) +
                                  " the topology has");
    }
    if (flow.src == flow.dst) throw std::invalid_argument(name + " goes from a host to itself");
    if (flow.bytes == 0 || flow.bytes > kLargestWrite * kLargestFlowWrites) {
      throw std::invalid_argument(name + " must carry between 1 byte and 64 GiB");
    }
    if (flow.start < 0) throw std::invalid_argument(name + " starts before time 0");
  }
}

// Starts flows at their times and records their completions.
class FlowRunner final : public EventHandler {
 public:
  FlowRunner(const Scenario& scenario, Fabric& fabric, SimWorld& world) : fabric_(fabric) {
    flows_.reserve(scenario.flows.size());
    for (std::uint32_t id = 0; id < scenario.flows.size(); ++id) {
      const FlowSpec& spec = scenario.flows[id];
      auto [src_qpn, dst_qpn] = connect_rc_pair(fabric.host(spec.src), fabric.host(spec.dst), scenario.transport,
                                                kLargestFlowWrites);
      flows_.push_back(Flow{FlowResult{id, spec, kSimNever}, src_qpn});
      world.events.schedule(spec.start, this, id);
    }
    unfinished_ = static_cast<std::uint32_t>(flows_.size());
    for (std::uint32_t h = 0; h < fabric.host_count(); ++h) {
      fabric.host(h).on_completion(
          [this](std::uint32_t host, const WorkCompletion& completion, SimTime now) { completed(host, completion, now); });
    }
  }

  std::uint32_t unfinished() const { return unfinished_; }
  std::uint32_t failed() const { return failed_; }
  std::vector<FlowResult> results() const {
    std::vector<FlowResult> out;
    out.reserve(flows_.size());
    for (const Flow& flow : flows_) out.push_back(flow.result);
    return out;
  }

  void on_event(SimTime now, std::uint32_t id) override {
    Flow& flow = flows_[id];
    HostNode& src = fabric_.host(flow.result.spec.src);
    const HostNode& dst = fabric_.host(flow.result.spec.dst);
    std::uint64_t remaining = flow.result.spec.bytes;
    std::uint64_t offset = 0;
    while (remaining > 0) {
      std::uint64_t length = std::min(remaining, kLargestWrite);
      remaining -= length;
      Sge sge{HostNode::kRegionBase + offset, static_cast<std::uint32_t>(length), src.region().lkey};
      SendWr write;
      write.wr_id = id;
      write.opcode = WrOpcode::rdma_write;
      write.send_flags = remaining == 0 ? std::uint32_t{kSendSignaled} : 0u;
      write.sg_list = {&sge, 1};
      write.rdma = {HostNode::kRegionBase + offset, dst.region().rkey};
      if (src.engine().post_send(flow.src_qpn, write) != std::errc{}) {
        throw std::runtime_error("flow " + std::to_string(id) + ": post_send refused");
      }
      offset += length;
    }
    src.wake(now);
  }

 private:
  struct Flow {
    FlowResult result;
    std::uint32_t src_qpn;
  };

  void completed(std::uint32_t, const WorkCompletion& completion, SimTime now) {
    if (completion.wr_id >= flows_.size()) return;
    Flow& flow = flows_[completion.wr_id];
    if (flow.result.finished()) return;
    if (completion.status != WcStatus::success) {
      ++failed_;
      --unfinished_;
      return;
    }
    flow.result.finish = now;
    --unfinished_;
  }

  Fabric& fabric_;
  std::vector<Flow> flows_;
  std::uint32_t unfinished_ = 0;
  std::uint32_t failed_ = 0;
};

}  // namespace

SimResult run_simulation(const Scenario& scenario, const std::function<void(double)>& progress) {
  check(scenario);
  auto wall_start = std::chrono::steady_clock::now();
  SimWorld world;
  Fabric fabric(world, scenario.topology, scenario.switches, scenario.engine, scenario.seed);
  FlowRunner flows(scenario, fabric, world);
  std::size_t total_flows = scenario.flows.size();
  DeadlockDetector deadlocks(world, fabric, scenario.deadlock_check);
  if (scenario.switches.pfc && scenario.deadlock_check > 0) deadlocks.start(0);

  EventQueue& events = world.events;
  std::uint64_t next_report = kEventsPerProgressReport;
  while (flows.unfinished() > 0 && !deadlocks.found() && !events.empty() &&
         events.next_time() <= scenario.time_limit) {
    events.run_next();
    if (progress && events.events_run() >= next_report) {
      next_report += kEventsPerProgressReport;
      double by_time = static_cast<double>(events.now()) / static_cast<double>(scenario.time_limit);
      double by_flows = 1.0 - static_cast<double>(flows.unfinished()) / static_cast<double>(total_flows);
      progress(std::max(by_time, by_flows));
    }
  }
  if (progress) progress(1.0);

  SimResult result;
  result.sim_time = events.now();
  result.events = events.events_run();
  result.seed = scenario.seed;
  result.flows = flows.results();
  result.failed_flows = flows.failed();
  result.deadlock = deadlocks.found();
  fabric.close_pauses(events.now());
  result.fabric = world.counters;
  result.hosts = fabric.host_count();
  result.switches = fabric.switch_count();
  for (std::uint32_t h = 0; h < fabric.host_count(); ++h) {
    const EngineCounters& counters = fabric.host(h).engine().counters();
    result.retransmitted_packets += counters.retransmitted_packets;
    result.cnps += counters.cnps_sent;
    result.timeouts += counters.timeouts;
  }
  for (std::uint32_t s = 0; s < fabric.switch_count(); ++s) {
    result.peak_switch_buffer_bytes = std::max(result.peak_switch_buffer_bytes, fabric.switch_at(s).peak_buffer_used());
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace uroce::sim
