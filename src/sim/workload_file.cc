// Reading [[flows]] and [[workloads]].
#include "sim/workload_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>

#include "sim/collective_choice.h"
#include "sim/flow_size_cdf.h"
#include "sim/mix.h"
#include "sim/toml_fields.h"

namespace uroce::sim {

namespace {

constexpr std::uint64_t kMaxFlowBytes = 64ull << 30;
constexpr std::size_t kMaxGeneratedFlows = 2'000'000;

// A collective: kind "allreduce" (an all-reduce, by ring unless `algorithm`
// says halving_doubling) or kind "collective" with `operation` (all_reduce,
// all_gather, reduce_scatter, alltoall) and `algorithm` (ring,
// halving_doubling, double_binary_tree; direct, pairwise for alltoall; auto:
// the fastest predicted, sim/collective_choice.h, the default on whole GPU
// servers, where channels default to one per GPU). Hosts: a list in rank
// order, or the first `count`; iterations, the compute between them
// (iteration_gap_us), per-step compute, slices and channels (as in
// [chakra], sim/collective_progress.h), and a straggler
// that is slow to compute (straggler_delay_us per step) or sits behind a slow
// link (straggler_link_gbps replaces its link's rate).
void collective_from(const toml::table& entry, const std::string& where, std::uint64_t bytes, SimTime start,
                     Scenario& scenario) {
  bool general = entry["kind"].value_or(std::string()) == "collective";
  if (general) {
    only_keys(entry, where,
              {"kind", "bytes", "start_us", "hosts", "count", "iterations", "step_compute_us", "straggler",
               "straggler_delay_us", "straggler_link_gbps", "algorithm", "operation", "iteration_gap_us", "slices",
               "channels"});
  } else {
    only_keys(entry, where,
              {"kind", "bytes", "start_us", "hosts", "count", "iterations", "step_compute_us", "straggler",
               "straggler_delay_us", "straggler_link_gbps", "algorithm", "iteration_gap_us", "slices", "channels"});
  }
  if (scenario.collective) throw ScenarioError(where + ": a scenario has one collective at most");
  std::uint32_t hosts = scenario.topology.hosts;
  CollectiveSpec ring;
  if (general) {
    std::string name = text(entry, where, "operation", "", {"all_reduce", "all_gather", "reduce_scatter", "alltoall"});
    if (name.empty()) throw ScenarioError(where + ".operation: all_reduce, all_gather, reduce_scatter or alltoall");
    ring.operation = *collective::operation_from(name);
  }
  ring.hosts = host_list(entry, where, "hosts", hosts);
  if (ring.hosts.empty()) {
    auto count = number<std::uint32_t>(entry, where, "count", hosts, 2, hosts);
    for (std::uint32_t h = 0; h < count; ++h) ring.hosts.push_back(h);
  }
  // On whole GPU servers NCCL's defaults: its choice of algorithm, a channel per GPU (per rail).
  std::uint32_t gpus = scenario.topology.servers.whole_servers(ring.hosts);
  std::string algorithm = text(entry, where, "algorithm", gpus != 0 ? "auto" : "",
                               {"auto", "ring", "halving_doubling", "double_binary_tree", "direct", "pairwise"});
  ring.algorithm_chosen = algorithm == "auto";
  ring.algorithm = algorithm.empty() || ring.algorithm_chosen ? collective::default_algorithm(ring.operation)
                                                               : *collective::algorithm_from(algorithm);
  ring.bytes = bytes;
  ring.start = start;
  ring.iterations = number<std::uint32_t>(entry, where, "iterations", 1, 1, 1'000'000);
  ring.step_compute = microseconds_field(entry, where, "step_compute_us", 0, 1e6);
  ring.iteration_gap = microseconds_field(entry, where, "iteration_gap_us", 0, 1e7);
  ring.slices = number<std::uint32_t>(entry, where, "slices", 1, 1, 64);
  ring.channels = number<std::uint32_t>(entry, where, "channels", std::max(gpus, 1u), 1, 32);
  if (entry.contains("straggler")) {
    ring.straggler = number<std::uint32_t>(entry, where, "straggler", 0, 0, hosts - 1);
    ring.straggler_delay = microseconds_field(entry, where, "straggler_delay_us", 0, 1e6);
    if (entry.contains("straggler_link_gbps")) {
      double gbps = number<double>(entry, where, "straggler_link_gbps", 0, 0.001, 1600);
      for (TopologyEdge& edge : scenario.topology.edges) {
        bool attached = (edge.a.is_host && edge.a.index == *ring.straggler) ||
                        (edge.b.is_host && edge.b.index == *ring.straggler);
        if (attached) edge.link.rate_bps = static_cast<std::uint64_t>(gbps * 1e9);
      }
    }
  } else if (entry.contains("straggler_delay_us") || entry.contains("straggler_link_gbps")) {
    throw ScenarioError(where + ": straggler_delay_us and straggler_link_gbps need a straggler (a host number)");
  }
  if (ring.algorithm_chosen) ring.algorithm = choose_algorithm(ring, scenario.topology);
  scenario.collective = std::move(ring);
}

// Poisson arrivals at every listed host (all by default) for duration_us,
// at a rate that loads its link to `load` with sizes from the CDF, each to
// another listed host chosen uniformly.
void cdf_flows_from(const toml::table& entry, const std::string& where, Scenario& scenario, std::uint64_t& random,
                    const std::filesystem::path& base_dir) {
  only_keys(entry, where, {"kind", "cdf", "cdf_file", "load", "duration_us", "start_us", "hosts"});
  std::optional<FlowSizeCdf> cdf;
  if (auto file = entry.get_as<std::string>("cdf_file")) {
    std::filesystem::path path = base_dir / file->get();
    std::ifstream in(path);
    if (!in) throw ScenarioError(fmt::format("{}.cdf_file: cannot read {}", where, path.string()));
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = FlowSizeCdf::parse_csv(text.str());
    if (!parsed) throw ScenarioError(fmt::format("{}.cdf_file: {}: {}", where, path.string(), parsed.error()));
    cdf = std::move(*parsed);
  } else {
    cdf = FlowSizeCdf::builtin(text(entry, where, "cdf", "", {"web_search", "hadoop"}));
    if (!cdf) throw ScenarioError(where + ": cdf (web_search or hadoop) or cdf_file is required");
  }
  double load = number<double>(entry, where, "load", 0, 0.001, 1);
  SimTime duration = microseconds_field(entry, where, "duration_us", 0, 1e7);
  if (load == 0 || duration == 0) throw ScenarioError(where + ": load and duration_us are required");
  SimTime start = start_time(entry, where);
  std::vector<std::uint32_t> members = host_list(entry, where, "hosts", scenario.topology.hosts);
  if (members.empty()) {
    for (std::uint32_t h = 0; h < scenario.topology.hosts; ++h) members.push_back(h);
  }
  if (members.size() < 2) throw ScenarioError(where + ": a CDF workload needs two hosts");
  std::vector<double> link_bps(scenario.topology.hosts, 0);
  for (const TopologyEdge& edge : scenario.topology.edges) {
    if (edge.a.is_host) link_bps[edge.a.index] = static_cast<double>(edge.link.rate_bps);
    if (edge.b.is_host) link_bps[edge.b.index] = static_cast<double>(edge.link.rate_bps);
  }
  for (std::uint32_t src : members) {
    double flows_per_ps = load * link_bps[src] / 8 / cdf->mean_bytes() / static_cast<double>(kPicosecondsPerSecond);
    double at = static_cast<double>(start);
    for (;;) {
      at += -std::log(1 - unit_interval(random)) / flows_per_ps;
      if (at >= static_cast<double>(start + duration)) break;
      std::uint32_t dst = src;
      while (dst == src) dst = members[splitmix64(random) % members.size()];
      scenario.flows.push_back({src, dst, cdf->sample(unit_interval(random)), static_cast<SimTime>(at)});
      if (scenario.flows.size() > kMaxGeneratedFlows) {
        throw ScenarioError(fmt::format("{}: more than {} flows; shorten duration_us or lower load", where,
                                        kMaxGeneratedFlows));
      }
    }
  }
}

}  // namespace

void flows_from(const toml::array& flows, Scenario& scenario) {
  for (std::size_t i = 0; i < flows.size(); ++i) {
    std::string where = fmt::format("flows[{}]", i);
    const toml::table* entry = flows.get(i)->as_table();
    if (entry == nullptr) throw ScenarioError(where + ": expected a table");
    only_keys(*entry, where, {"src", "dst", "bytes", "start_us", "dscp"});
    FlowSpec flow;
    std::uint32_t last_host = scenario.topology.hosts - 1;
    flow.src = number<std::uint32_t>(*entry, where, "src", UINT32_MAX, 0, last_host);
    flow.dst = number<std::uint32_t>(*entry, where, "dst", UINT32_MAX, 0, last_host);
    if (flow.src == UINT32_MAX || flow.dst == UINT32_MAX) throw ScenarioError(where + ": src and dst are required");
    if (flow.src == flow.dst) throw ScenarioError(where + ": src and dst are the same host");
    flow.bytes = number<std::uint64_t>(*entry, where, "bytes", 0, 1, kMaxFlowBytes);
    if (flow.bytes == 0) throw ScenarioError(where + ": bytes is required");
    flow.start = start_time(*entry, where);
    if (entry->contains("dscp")) flow.dscp = number<std::uint8_t>(*entry, where, "dscp", 0, 0, 63);
    scenario.flows.push_back(flow);
  }
}

// incast: senders (a list, or `count` hosts other than the receiver) all to
// one receiver; permutation: every host to another, a random derangement;
// all_to_all: a flow for every ordered pair, all at once; allreduce and
// collective: the collectives above, step by step; cdf: Poisson arrivals of
// sizes from a CDF at a target load.
void workloads_from(const toml::array& workloads, Scenario& scenario, std::uint64_t& random,
                    const std::filesystem::path& base_dir) {
  std::uint32_t hosts = scenario.topology.hosts;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    std::string where = fmt::format("workloads[{}]", i);
    const toml::table* entry = workloads.get(i)->as_table();
    if (entry == nullptr) throw ScenarioError(where + ": expected a table");
    std::string kind =
        text(*entry, where, "kind", "", {"incast", "permutation", "all_to_all", "allreduce", "collective", "cdf"});
    if (kind.empty()) {
      throw ScenarioError(where + ".kind: incast, permutation, all_to_all, allreduce, collective or cdf");
    }
    if (kind == "cdf") {
      cdf_flows_from(*entry, where, scenario, random, base_dir);
      continue;
    }
    auto bytes = number<std::uint64_t>(*entry, where, "bytes", 0, 1, kMaxFlowBytes);
    if (bytes == 0) throw ScenarioError(where + ": bytes is required");
    SimTime start = start_time(*entry, where);
    if (kind == "allreduce" || kind == "collective") {
      collective_from(*entry, where, bytes, start, scenario);
    } else if (kind == "incast") {
      only_keys(*entry, where, {"kind", "bytes", "start_us", "receiver", "senders", "count"});
      auto receiver = number<std::uint32_t>(*entry, where, "receiver", 0, 0, hosts - 1);
      std::vector<std::uint32_t> senders = host_list(*entry, where, "senders", hosts);
      if (senders.empty()) {
        auto count = number<std::uint32_t>(*entry, where, "count", hosts - 1, 1, hosts - 1);
        for (std::uint32_t h = 0; senders.size() < count; ++h) {
          if (h != receiver) senders.push_back(h);
        }
      }
      for (std::uint32_t sender : senders) {
        if (sender == receiver) throw ScenarioError(where + ": the receiver cannot be a sender");
        scenario.flows.push_back({sender, receiver, bytes, start});
      }
    } else if (kind == "permutation") {
      only_keys(*entry, where, {"kind", "bytes", "start_us"});
      if (hosts < 2) throw ScenarioError(where + ": a permutation needs two hosts");
      std::vector<std::uint32_t> order(hosts);
      std::iota(order.begin(), order.end(), 0);
      for (std::uint32_t h = hosts - 1; h > 0; --h) {  // Sattolo: one cycle, so no host sends to itself
        std::swap(order[h], order[splitmix64(random) % h]);
      }
      for (std::uint32_t h = 0; h < hosts; ++h) scenario.flows.push_back({h, order[h], bytes, start});
    } else {
      only_keys(*entry, where, {"kind", "bytes", "start_us"});
      for (std::uint32_t a = 0; a < hosts; ++a) {
        for (std::uint32_t b = 0; b < hosts; ++b) {
          if (a != b) scenario.flows.push_back({a, b, bytes, start});
        }
      }
    }
  }
}

}  // namespace uroce::sim
