// The simulation run: build the fabric (in partitions, one per thread),
// connect every flow's QP pair, start each flow at its time with WRITEs of
// its size, run events until every flow completed or the time limit, then
// add up the counters.
#include "sim/simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "sim/capture_handoff.h"
#include "sim/chakra_replay.h"
#include "sim/collective_runner.h"
#include "sim/fabric.h"
#include "sim/failure_runner.h"
#include "sim/link_capture.h"
#include "sim/partitioned_run.h"
#include "sim/qp_setup.h"
#include "sim/rank_frames.h"

namespace uroce::sim {

namespace {

constexpr std::uint64_t kLargestWrite = 1ull << 30;
constexpr std::uint32_t kLargestFlowWrites = 64;
constexpr std::uint64_t kEventsPerProgressReport = 1 << 18;
// A replay's timeline tracks every link's load up to this many links.
constexpr std::size_t kLinkLoadMaxEdges = 2048;

}  // namespace

void check_scenario(const Scenario& scenario) {
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
  if (const auto& spec = scenario.collective) {
    std::string name = std::string("collective (") + collective::to_string(spec->operation) + " by " +
                       collective::to_string(spec->algorithm) + ")";
    if (spec->hosts.size() < 2) throw std::invalid_argument(name + ": needs at least two hosts");
    std::vector<bool> member(scenario.topology.hosts, false);
    for (std::uint32_t host : spec->hosts) {
      if (host >= scenario.topology.hosts) throw std::invalid_argument(name + ": no host " + std::to_string(host));
      if (member[host]) throw std::invalid_argument(name + ": host " + std::to_string(host) + " is listed twice");
      member[host] = true;
    }
    if (spec->iterations == 0) throw std::invalid_argument(name + ": iterations must be at least 1");
    if (spec->straggler && !member[*spec->straggler]) {
      throw std::invalid_argument(name + ": the straggler is not a member");
    }
    // The schedule itself (rank count, sizes, algorithm) is checked as
    // CollectiveRunner makes it.
  }
  if (scenario.chakra.size() > (1u << 20)) throw std::invalid_argument("chakra: more than 2^20 jobs");
  for (const ChakraSpec& spec : scenario.chakra) {  // the traces themselves are checked by plan_chakra
    std::string name = "chakra job " + spec.name;
    if (spec.hosts.size() != spec.ranks.size()) throw std::invalid_argument(name + ": one host per rank is needed");
    std::vector<bool> used(scenario.topology.hosts, false);
    for (std::uint32_t host : spec.hosts) {
      if (host >= scenario.topology.hosts || used[host]) {
        throw std::invalid_argument(name + ": host " + std::to_string(host) + " does not exist or runs two ranks");
      }
      used[host] = true;
    }
  }
}

namespace {

// Starts flows at their times and records their completions.
class FlowRunner final : public EventHandler {
 public:
  // Each flow starts in its sender's partition, on the rank that holds it.
  FlowRunner(const Scenario& scenario, Fabric& fabric, RankGroup& ranks) : fabric_(fabric) {
    QpConnections connections(fabric, scenario.transport);
    for (const FlowSpec& spec : scenario.flows) {
      connections.add(spec.src, spec.dst, kLargestFlowWrites, 16, std::nullopt, spec.dscp);
    }
    connections.connect(ranks);
    flows_.reserve(scenario.flows.size());
    for (std::uint32_t id = 0; id < scenario.flows.size(); ++id) {
      const FlowSpec& spec = scenario.flows[id];
      auto [src_qpn, dst_qpn] = connections.qpns(id);
      flows_.push_back(Flow{FlowResult{id, spec, kSimNever}, src_qpn, dst_qpn, false});
      if (fabric.holds(NodeRef{true, spec.src})) fabric.host(spec.src).world().events.schedule(spec.start, this, id);
    }
    unfinished_ = static_cast<std::uint32_t>(flows_.size());
  }

  std::uint32_t unfinished() const { return unfinished_.load(std::memory_order_relaxed); }
  // Over ranks: every rank's finished flows (each counts its senders').
  std::uint32_t unfinished_everywhere(RankGroup& ranks) const {
    std::uint64_t finished = flows_.size() - unfinished();
    ranks.sum(std::span(&finished, 1));
    return static_cast<std::uint32_t>(flows_.size() - finished);
  }
  std::vector<FlowProbe> probes(std::uint32_t mtu_bytes) const {
    std::vector<FlowProbe> out;
    for (const Flow& flow : flows_) out.push_back({flow.result.spec.dst, flow.dst_qpn, mtu_bytes, flow.result.spec.bytes});
    return out;
  }
  std::uint32_t failed() const { return failed_.load(std::memory_order_relaxed); }
  // Over ranks: a flow's finish is its sender's rank's.
  std::vector<FlowResult> results(RankGroup& ranks) const {
    std::vector<std::int64_t> finish;
    finish.reserve(flows_.size());
    for (const Flow& flow : flows_) finish.push_back(flow.result.finish);
    ranks.min(finish);
    std::vector<FlowResult> out;
    out.reserve(flows_.size());
    for (const Flow& flow : flows_) {
      out.push_back(flow.result);
      out.back().finish = finish[out.size() - 1];
    }
    return out;
  }

  void completed(const WorkCompletion& completion, SimTime now) {
    if (completion.wr_id >= flows_.size()) return;
    Flow& flow = flows_[completion.wr_id];
    if (flow.result.finished() || flow.failed) return;
    if (completion.status != WcStatus::success) {  // the first error; flushes of later WRITEs follow it
      flow.failed = true;
      ++failed_;
      --unfinished_;
      return;
    }
    flow.result.finish = now;
    --unfinished_;
  }

  void on_event(SimTime now, std::uint32_t id) override {
    Flow& flow = flows_[id];
    HostNode& src = fabric_.host(flow.result.spec.src);
    std::uint32_t dst_rkey = fabric_.rkey_of(flow.result.spec.dst);
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
      write.rdma = {HostNode::kRegionBase + offset, dst_rkey};
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
    std::uint32_t dst_qpn;
    bool failed = false;
  };

  Fabric& fabric_;
  std::vector<Flow> flows_;  // a flow's entry is its sender's partition's
  std::atomic<std::uint32_t> unfinished_ = 0;
  std::atomic<std::uint32_t> failed_ = 0;
};

}  // namespace

std::string capture_file_name(NodeRef from, NodeRef to) {
  return fmt::format("capture_{}{}-{}{}.pcap", from.is_host ? 'h' : 's', from.index, to.is_host ? 'h' : 's',
                     to.index);
}

SimResult run_simulation(const Scenario& scenario, const std::function<void(double)>& progress,
                         const std::string& capture_dir, RankGroup* rank_group) {
  SoloRank solo;
  RankGroup& ranks = rank_group != nullptr ? *rank_group : solo;
  check_scenario(scenario);
  auto wall_start = std::chrono::steady_clock::now();
  std::uint32_t wanted = std::max<std::uint32_t>(scenario.threads, 1) * ranks.size();
  std::uint32_t first_handler = EventHandler::ids_made();
  Partitioning partitioning = partition_fabric(scenario.topology, wanted);
  std::vector<std::unique_ptr<SimWorld>> part_worlds;
  std::vector<SimWorld*> parts;
  std::vector<std::uint32_t> part_rank, owned;
  for (std::uint32_t p = 0; p < partitioning.parts; ++p) {
    part_worlds.push_back(std::make_unique<SimWorld>());
    parts.push_back(part_worlds.back().get());
    part_rank.push_back(rank_of_part(p, partitioning.parts, ranks.size()));
    if (part_rank.back() == ranks.rank()) owned.push_back(p);
  }
  SimWorld global;  // samplers, deadlock checks and failures: they see every partition
  global.events.set_order_basis(scenario.seed, first_handler);
  for (SimWorld* part : parts) part->events.set_order_basis(scenario.seed, first_handler);
  // Each rank builds its own partitions' nodes only.
  Fabric fabric(parts, partitioning, scenario.topology, scenario.switches, scenario.engine, scenario.seed, ranks,
                part_rank);
  std::vector<std::unique_ptr<LinkCapture>> captures;
  std::vector<HandedCapture> handed;  // over ranks: to rank 0 at the end
  for (const auto& [from, to] : scenario.captures) {
    if (!fabric.linked(from, to)) {
      throw std::invalid_argument("capture: " + capture_file_name(from, to) + " names a link that does not exist");
    }
    if (capture_dir.empty() || !fabric.holds(from)) continue;  // the rank that sends on it takes it
    Transmitter* transmitter = fabric.transmitter_between(from, to);
    std::string path = capture_path_on_rank(capture_dir, capture_file_name(from, to), ranks.rank());
    if (ranks.rank() != 0) handed.push_back({path, capture_file_name(from, to)});
    auto capture = LinkCapture::create(path, from, to, scenario.capture_frames);
    if (!capture) throw std::runtime_error("capture: " + capture.error());
    transmitter->set_tap(capture->get());
    captures.push_back(std::move(*capture));
  }
  std::optional<LinkLoad> link_load;
  if (!scenario.chakra.empty() && scenario.sample_interval > 0 && scenario.topology.edges.size() <= kLinkLoadMaxEdges) {
    link_load.emplace(fabric, scenario.topology, scenario.sample_interval);
  }
  FlowRunner flows(scenario, fabric, ranks);
  FailureRunner failures(scenario, fabric, global);
  std::optional<CollectiveRunner> collective;
  if (scenario.collective) {
    collective.emplace(*scenario.collective, scenario.transport, fabric, ranks, global, partitioning.window);
  }
  std::vector<std::unique_ptr<ChakraReplay>> jobs;
  for (std::uint32_t job = 0; job < scenario.chakra.size(); ++job) {
    jobs.push_back(
        std::make_unique<ChakraReplay>(scenario.chakra[job], job, scenario.transport, fabric, ranks, partitioning.window));
    if (ranks.size() > 1) {
      jobs.back()->spread_over(ranks, [&](std::uint32_t host) { return part_rank[partitioning.host_part[host]]; });
    }
  }
  for (std::uint32_t h = 0; h < fabric.host_count(); ++h) {
    if (!fabric.holds(NodeRef{true, h})) continue;
    fabric.host(h).on_completion([&](std::uint32_t host, const WorkCompletion& completion, SimTime now) {
      if ((completion.wr_id & kCollectiveWork) != 0) {
        if (collective) collective->completed(host, completion, now);
      } else if ((completion.wr_id & kChakraWork) != 0) {
        std::uint32_t job = chakra_job_of(completion.wr_id);
        if (job < jobs.size()) jobs[job]->completed(host, completion, now);
      } else {
        flows.completed(completion, now);
      }
    });
  }
  DeadlockDetector deadlocks(global, fabric, scenario.deadlock_check, ranks);
  if (scenario.switches.pfc && scenario.deadlock_check > 0) deadlocks.start(0);
  bool sample_flows = scenario.flows.size() <= scenario.series_flow_limit;
  TimeSeries series(global, fabric, scenario.sample_interval,
                    sample_flows ? flows.probes(mtu_bytes(scenario.transport.mtu)) : std::vector<FlowProbe>{});
  if (scenario.sample_interval > 0) series.start(0);

  RankFrames frames(ranks, fabric, parts, part_rank);
  std::optional<PartitionedRun> partitioned;
  if (ranks.size() > 1) {
    partitioned.emplace(parts, owned, ranks, frames, global, partitioning.window, scenario.time_limit);
  } else {
    partitioned.emplace(parts, global, partitioning.window, scenario.time_limit);
  }
  PartitionedRun& run = *partitioned;
  auto keep_going = [&] {
    if (collective) collective->between_windows();
    for (auto& job : jobs) job->between_windows();
    bool replaying = std::any_of(jobs.begin(), jobs.end(), [](const auto& job) { return job->running(); });
    bool flowing = flows.unfinished_everywhere(ranks) > 0;
    return (flowing || (collective && collective->running()) || replaying) && !deadlocks.found();
  };
  std::size_t total_flows = std::max<std::size_t>(scenario.flows.size(), 1);
  std::uint64_t next_report = kEventsPerProgressReport;
  auto report = [&](SimTime now) {
    if (run.events_run_here() < next_report) return;
    next_report = run.events_run_here() + kEventsPerProgressReport;
    double by_time = static_cast<double>(now) / static_cast<double>(scenario.time_limit);
    double by_flows = 1.0 - static_cast<double>(flows.unfinished()) / static_cast<double>(total_flows);
    progress(std::max(by_time, by_flows));
  };
  run.run(keep_going, progress ? std::function<void(SimTime)>(report) : std::function<void(SimTime)>{});
  if (progress) progress(1.0);

  SimResult result;
  result.sim_time = run.now();
  result.events = run.events_run();
  result.partitions = partitioning.parts;
  result.ranks = ranks.size();
  result.seed = scenario.seed;
  result.flows = flows.results(ranks);
  std::uint64_t failed_flows = flows.failed();
  ranks.sum(std::span(&failed_flows, 1));
  result.failed_flows = static_cast<std::uint32_t>(failed_flows);
  result.deadlock = deadlocks.found();
  if (scenario.sample_interval > 0) {
    series.gather(ranks);
    result.sample_interval = scenario.sample_interval;
    result.samples = series.samples();
    if (sample_flows) result.flow_delivered = series.delivered();
  }
  if (collective) {
    result.collective_iterations = collective->iteration_times();
    result.collective_failed = collective->failed();
    result.collective_finished_at = collective->finished_at();
  }
  for (auto& job : jobs) result.chakra.push_back(job->result(result.sim_time));
  if (link_load) {
    result.link_load = link_load->series();
    add_up_over_ranks(ranks, result.link_load);
  }
  fabric.close_pauses(result.sim_time);
  result.fabric = run.counters();
  result.hosts = fabric.host_count();
  result.switches = fabric.switch_count();
  // Each rank counts the hosts it holds.
  std::uint64_t engine[8] = {};
  for (std::uint32_t h = 0; h < fabric.host_count(); ++h) {
    if (!fabric.holds(NodeRef{true, h})) continue;
    const EngineCounters& counters = fabric.host(h).engine().counters();
    std::uint64_t host[] = {counters.retransmitted_packets, counters.paths_lost,    counters.paths_retired,
                            counters.paths_probes,          counters.paths_restored, counters.placed_out_of_order,
                            counters.cnps_sent,             counters.timeouts};
    for (std::size_t i = 0; i < std::size(engine); ++i) engine[i] += host[i];
  }
  ranks.sum(engine);
  result.retransmitted_packets = engine[0];
  result.paths_lost = engine[1];
  result.paths_retired = engine[2];
  result.paths_probes = engine[3];
  result.paths_restored = engine[4];
  result.placed_out_of_order = engine[5];
  result.cnps = engine[6];
  result.timeouts = engine[7];
  for (std::uint32_t s = 0; s < fabric.switch_count(); ++s) {
    if (!fabric.holds(NodeRef{false, s})) continue;
    result.peak_switch_buffer_bytes = std::max(result.peak_switch_buffer_bytes, fabric.switch_at(s).peak_buffer_used());
  }
  ranks.max(std::span(&result.peak_switch_buffer_bytes, 1));
  for (auto& capture : captures) capture->flush();
  if (ranks.size() > 1 && !capture_dir.empty()) hand_captures_to_rank_0(ranks, handed, capture_dir);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace uroce::sim
