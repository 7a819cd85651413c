// summary.json's "chakra" object, its summary line, and timeline.json.
#include "sim/chakra_report.h"

#include <fmt/format.h>

#include "sim/collective_bandwidth.h"

namespace uroce::sim {

namespace {

nlohmann::ordered_json time_or_null(SimTime t) {
  return t == kSimNever ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(microseconds(t));
}

// Timeline tracks within a rank's process.
constexpr int kCpuTrack = 0;
constexpr int kGpuComputeTrack = 1;
constexpr int kCommunicationTrack = 2;
constexpr int kReceiveTrack = 3;

}  // namespace

nlohmann::ordered_json chakra_json(const ChakraSpec& spec, const ChakraResult& result) {
  nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
  for (const ChakraCollectiveResult& c : result.collectives) {
    nlohmann::ordered_json entry = {{"group", c.group},
                                    {"index", c.index},
                                    {"operation", chakra::comm_type_name(c.type)},
                                    {"algorithm", c.algorithm ? collective::to_string(*c.algorithm) : "none"},
                                    {"bytes", c.bytes},
                                    {"ranks", c.ranks}};
    bool finished = c.end != kSimNever;
    entry["start_us"] = time_or_null(c.start);
    entry["end_us"] = time_or_null(c.end);
    entry["duration_us"] = finished ? nlohmann::ordered_json(microseconds(c.end - c.start)) : nullptr;
    if (auto operation = operation_of(c.type); operation && finished && c.ranks > 1) {
      CollectiveBandwidth bandwidth = collective_bandwidth(*operation, c.bytes, c.ranks, c.end - c.start);
      entry["algbw_gb_per_s"] = bandwidth.algbw_gb_per_s;
      entry["busbw_gb_per_s"] = bandwidth.busbw_gb_per_s;
    }
    collectives.push_back(std::move(entry));
  }
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (std::size_t r = 0; r < result.ranks.size(); ++r) {
    const ChakraRankResult& rank = result.ranks[r];
    ranks.push_back({{"rank", r},
                     {"host", rank.host},
                     {"finished_us", time_or_null(rank.finished)},
                     {"compute_us", microseconds(rank.compute)},
                     {"communication_us", microseconds(rank.communication)},
                     {"idle_us", microseconds(rank.idle)}});
  }
  nlohmann::ordered_json skipped = nlohmann::ordered_json::object();
  for (const auto& [type, count] : result.skipped) skipped[type] = count;
  std::uint64_t missing = 0;
  for (const chakra::Trace& trace : spec.ranks) missing += trace.missing_dependencies;
  return {{"job", spec.name},
          {"traces", spec.traces},
          {"ranks", spec.ranks.size()},
          {"makespan_us", microseconds(result.makespan)},
          {"ranks_finished", result.ranks_finished},
          {"failed", result.failed},
          {"nodes_run", result.nodes_run},
          {"nodes_skipped", skipped},
          {"dependencies_not_in_trace", missing},
          {"collectives", collectives},
          {"per_rank", ranks}};
}

namespace {

std::string job_summary(const ChakraSpec& spec, const ChakraResult& result, bool named) {
  std::string job = named ? " " + spec.name : "";
  std::uint64_t skipped = 0;
  for (const auto& [type, count] : result.skipped) skipped += count;
  SimTime communication = 0, compute = 0;
  for (const ChakraRankResult& rank : result.ranks) {
    communication += rank.communication;
    compute += rank.compute;
  }
  auto n = static_cast<SimTime>(std::max<std::size_t>(result.ranks.size(), 1));
  return fmt::format(
      "chakra replay{} ({} ranks): {} of {} ranks finished{}, makespan {:.1f} us; {} nodes run, {} skipped, {} "
      "collectives; per rank on average {:.1f} us computing, {:.1f} us communicating only\n",
      job, spec.ranks.size(), result.ranks_finished, spec.ranks.size(), result.failed ? " (a WRITE failed)" : "",
      microseconds(result.makespan), result.nodes_run, skipped, result.collectives.size(), microseconds(compute / n),
      microseconds(communication / n));
}

void add_job_tracks(const ChakraSpec& spec, const ChakraResult& result, bool named, int first_pid,
                    nlohmann::ordered_json& events) {
  auto name_track = [&](int pid, int tid, const std::string& name) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  };
  for (std::size_t r = 0; r < spec.ranks.size(); ++r) {
    int pid = first_pid + static_cast<int>(r);
    std::string process = fmt::format("rank {} (host {})", r, spec.hosts[r]);
    if (named) process = spec.name + " " + process;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", process}}}});
    name_track(pid, kCpuTrack, "CPU");
    name_track(pid, kGpuComputeTrack, "GPU compute");
    name_track(pid, kCommunicationTrack, "communication");
    name_track(pid, kReceiveTrack, "receives");
  }
  for (const ChakraSpan& span : result.spans) {
    const chakra::TraceNode& node = spec.ranks[span.rank].nodes[span.node];
    int track = node.type == chakra::kCompNode ? (node.is_cpu_op ? kCpuTrack : kGpuComputeTrack)
                : node.type == chakra::kCommRecvNode ? kReceiveTrack
                                                     : kCommunicationTrack;
    nlohmann::ordered_json args = {{"id", node.id}, {"type", chakra::node_type_name(node.type)}};
    if (node.comm_type) args["operation"] = chakra::comm_type_name(*node.comm_type);
    if (node.type != chakra::kCompNode) args["bytes"] = node.comm_size;
    events.push_back({{"name", node.name.empty() ? fmt::format("node {}", node.id) : node.name},
                      {"cat", chakra::node_type_name(node.type)},
                      {"ph", "X"},
                      {"pid", first_pid + static_cast<int>(span.rank)},
                      {"tid", track},
                      {"ts", microseconds(span.start)},
                      {"dur", microseconds(span.end - span.start)},
                      {"args", args}});
  }
}

}  // namespace

nlohmann::ordered_json chakra_summary_json(const Scenario& scenario, const SimResult& result) {
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (std::size_t j = 0; j < scenario.chakra.size() && j < result.chakra.size(); ++j) {
    jobs.push_back(chakra_json(scenario.chakra[j], result.chakra[j]));
  }
  if (scenario.chakra_listed || jobs.size() != 1) return jobs;
  return jobs[0];
}

std::string chakra_summary(const Scenario& scenario, const SimResult& result) {
  std::string out;
  for (std::size_t j = 0; j < scenario.chakra.size() && j < result.chakra.size(); ++j) {
    out += job_summary(scenario.chakra[j], result.chakra[j], scenario.chakra_listed);
  }
  return out;
}

std::string chakra_timeline(const Scenario& scenario, const SimResult& result) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  int pid = 0;
  for (std::size_t j = 0; j < scenario.chakra.size() && j < result.chakra.size(); ++j) {
    add_job_tracks(scenario.chakra[j], result.chakra[j], scenario.chakra_listed, pid, events);
    pid += static_cast<int>(scenario.chakra[j].ranks.size());
  }
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", "fabric"}}}});
  for (const FabricSample& sample : result.samples) {
    double ts = microseconds(sample.at);
    events.push_back({{"name", "switch buffers (bytes)"}, {"ph", "C"}, {"pid", pid}, {"ts", ts},
                      {"args", {{"bytes", sample.buffer_bytes}}}});
    events.push_back({{"name", "deepest egress queue (bytes)"}, {"ph", "C"}, {"pid", pid}, {"ts", ts},
                      {"args", {{"bytes", sample.deepest_queue_bytes}}}});
    events.push_back({{"name", "paused queues"}, {"ph", "C"}, {"pid", pid}, {"ts", ts},
                      {"args", {{"queues", sample.paused_queues}}}});
  }
  // Each link direction's load, in Gb/s per sample interval, as a counter
  // that changes only when the load does.
  double interval_s = static_cast<double>(result.sample_interval) / static_cast<double>(kPicosecondsPerSecond);
  for (const LinkLoadSeries& link : result.link_load) {
    if (interval_s <= 0) break;
    std::string name = fmt::format("link {}{}->{}{} (Gb/s)", link.from.is_host ? 'h' : 's', link.from.index,
                                   link.to.is_host ? 'h' : 's', link.to.index);
    double last = -1;
    for (std::size_t i = 0; i <= link.bytes.size(); ++i) {
      double gbps = i < link.bytes.size() ? static_cast<double>(link.bytes[i]) * 8 / interval_s / 1e9 : 0.0;
      if (gbps == last) continue;
      last = gbps;
      events.push_back({{"name", name}, {"ph", "C"}, {"pid", pid}, {"ts", microseconds(result.sample_interval * static_cast<SimTime>(i))},
                        {"args", {{"Gb/s", gbps}}}});
    }
  }
  nlohmann::ordered_json trace = {{"displayTimeUnit", "ns"}, {"traceEvents", events}};
  return trace.dump() + "\n";
}

}  // namespace uroce::sim
