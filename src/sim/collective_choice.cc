// Predicting collectives' times from their schedules, without contention.
#include "sim/collective_choice.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <optional>

#include "sim/collective_progress.h"

namespace uroce::sim {

namespace {

constexpr double kMtuBytes = 4096;
// The most step entries (ranks x steps x channels) a candidate's schedules
// may have to be predicted; a tree beyond it (tens of thousands of GPUs)
// is not a candidate, and the ring runs.
constexpr std::uint64_t kMostStepEntries = 1ull << 22;

// A path's one-way latency (propagation and an MTU's serialization per
// link) and its slowest link's rate.
struct PathCost {
  double latency_s = 0;
  double rate_bps = 0;
};

// The fewest-hops path from one host to another; hosts forward nothing.
PathCost path_between(const Topology& topology, std::uint32_t from, std::uint32_t to) {
  std::uint32_t nodes = topology.hosts + topology.switches;
  auto id = [&](const NodeRef& n) { return n.is_host ? n.index : topology.hosts + n.index; };
  std::vector<std::vector<std::pair<std::uint32_t, const LinkSpec*>>> next(nodes);
  for (const TopologyEdge& edge : topology.edges) {
    next[id(edge.a)].emplace_back(id(edge.b), &edge.link);
    next[id(edge.b)].emplace_back(id(edge.a), &edge.link);
  }
  std::vector<PathCost> cost(nodes);
  std::vector<bool> seen(nodes, false);
  std::deque<std::uint32_t> frontier{from};
  seen[from] = true;
  cost[from].rate_bps = std::numeric_limits<double>::infinity();
  while (!frontier.empty()) {
    std::uint32_t at = frontier.front();
    frontier.pop_front();
    if (at == to) return cost[at];
    if (at < topology.hosts && at != from) continue;  // a host is an end, never a hop
    for (auto [n, link] : next[at]) {
      if (seen[n]) continue;
      seen[n] = true;
      double rate = static_cast<double>(link->rate_bps);
      cost[n] = {cost[at].latency_s + static_cast<double>(link->propagation) * 1e-12 + kMtuBytes * 8 / rate,
                 std::min(cost[at].rate_bps, rate)};
      frontier.push_back(n);
    }
  }
  return {};
}

struct Links {
  PathCost within, between;  // a server's GPUs over NVLink; hosts over the fabric
  std::uint32_t gpus = 0;    // per server, 0: flat
  bool shared_nic = false;
};

Links links_of(const CollectiveSpec& spec, const Topology& topology) {
  Links links;
  const ServerLayout& servers = topology.servers;
  links.gpus = servers.whole_servers(spec.hosts);
  links.shared_nic = links.gpus != 0 && !servers.nvlink_port;
  if (links.gpus != 0) {
    double rate = static_cast<double>(servers.nvlink.rate_bps);
    links.within = {2 * (static_cast<double>(servers.nvlink.propagation) * 1e-12 + kMtuBytes * 8 / rate), rate};
  }
  std::uint32_t far = links.gpus != 0 && links.gpus < spec.hosts.size() ? links.gpus : 1;
  links.between = path_between(topology, spec.hosts[0], spec.hosts[far]);
  return links;
}

// One step of every channel at once, each carrying a slice of its
// transfers (each schedule stands for `copies` channels): the slowest
// port's time to carry it, and its longest path one way.
struct StepCost {
  double busiest_s = 0;
  double latency_s = 0;
};
StepCost step_cost(const std::vector<collective::Schedule>& channels, double copies, std::uint32_t step,
                   double slice_share, const Links& links) {
  std::map<std::uint32_t, double> nic_bytes, nvlink_bytes;  // by NIC (rank or server), by rank
  double latency_s = 0;
  for (const collective::Schedule& schedule : channels) {
    for (std::uint32_t rank = 0; rank < schedule.rank_count(); ++rank) {
      for (const collective::Transfer& transfer : schedule.ranks[rank][step].sends) {
        bool within = links.gpus != 0 && rank / links.gpus == transfer.to / links.gpus;
        latency_s = std::max(latency_s, (within ? links.within : links.between).latency_s);
        double bytes = static_cast<double>(transfer.bytes) * slice_share * copies;
        if (within) {
          nvlink_bytes[rank] += bytes;
        } else {
          nic_bytes[links.shared_nic ? rank / links.gpus : rank] += bytes;
        }
      }
    }
  }
  double busiest = 0;
  for (auto [nic, bytes] : nic_bytes) busiest = std::max(busiest, bytes * 8 / links.between.rate_bps);
  for (auto [rank, bytes] : nvlink_bytes) busiest = std::max(busiest, bytes * 8 / links.within.rate_bps);
  return {busiest, latency_s};
}

// When each rank of each channel may start its next step, after one more
// step: a rank's step ends when its WRITEs were acknowledged (a round trip
// after it started) and the WRITEs to it arrived (one way after their
// senders started), as sim/collective_progress.h steps it; `seconds` is the
// step's serialization.
void advance_step(const std::vector<collective::Schedule>& channels, std::uint32_t step, double seconds,
                  const Links& links, std::vector<std::vector<double>>& ready) {
  for (std::size_t c = 0; c < channels.size(); ++c) {
    const collective::Schedule& schedule = channels[c];
    std::vector<double> next = ready[c];
    for (std::uint32_t rank = 0; rank < schedule.rank_count(); ++rank) {
      for (const collective::Transfer& transfer : schedule.ranks[rank][step].sends) {
        bool within = links.gpus != 0 && rank / links.gpus == transfer.to / links.gpus;
        double latency = (within ? links.within : links.between).latency_s;
        next[rank] = std::max(next[rank], ready[c][rank] + 2 * latency + seconds);
        next[transfer.to] = std::max(next[transfer.to], ready[c][rank] + latency + seconds);
      }
    }
    ready[c] = std::move(next);
  }
}

// A ring's steps all move the same chunk to the same neighbour: one step,
// built from the ring's order, stands for all of them (a whole ring
// schedule is ranks^2 steps, too big to build while reading a scenario).
collective::Schedule one_ring_step(const CollectiveSpec& spec, std::uint32_t ranks, const collective::RankLayout& layout) {
  collective::Schedule step;
  step.operation = spec.operation;
  step.bytes = spec.bytes;
  step.ranks.resize(ranks);
  std::vector<std::uint32_t> order = collective::ring_order(ranks, layout);
  for (std::uint32_t p = 0; p < ranks; ++p) {
    collective::Step only;
    only.sends.push_back({order[(p + 1) % ranks], 0, 0, spec.bytes / ranks});
    step.ranks[order[p]].push_back(std::move(only));
  }
  return step;
}

// The candidate's time, or nothing when it cannot run this collective.
std::optional<double> predicted_seconds(const CollectiveSpec& spec, collective::Algorithm algorithm,
                                        const Links& links) {
  auto ranks = static_cast<std::uint32_t>(spec.hosts.size());
  std::uint32_t channels = std::max(spec.channels, 1u);
  std::vector<collective::Schedule> schedules;
  std::uint64_t steps = 0;
  bool ring = algorithm == collective::Algorithm::ring;
  if (ring) {
    for (std::uint32_t c = 0; c < channels; ++c) {
      schedules.push_back(one_ring_step(spec, ranks, {links.gpus, links.gpus != 0 ? c : 0}));
    }
    bool reduces = spec.operation != collective::Operation::all_gather;
    bool gathers = spec.operation != collective::Operation::reduce_scatter;
    steps = (reduces && gathers ? 2 : 1) * std::uint64_t{ranks - 1};
  } else {
    auto built = collective::make_channel_schedules(spec.operation, algorithm, ranks, spec.bytes, links.gpus, channels);
    if (!built || built->front().steps() * ranks * channels > kMostStepEntries) return std::nullopt;
    schedules = std::move(*built);
    steps = schedules.front().steps();
  }
  double copies = static_cast<double>(channels) / static_cast<double>(schedules.size());
  std::uint32_t slices = slices_over(spec.slices, channels);
  double slice_share = 1.0 / slices;
  // The first slice's way through the steps, then one slowest step per slice after it.
  std::vector<std::vector<double>> ready(schedules.size(), std::vector<double>(ranks, 0.0));
  double slowest = 0;
  for (std::uint64_t step = 0; step < (ring ? 1 : steps); ++step) {
    StepCost cost = step_cost(schedules, copies, static_cast<std::uint32_t>(step), slice_share, links);
    advance_step(schedules, static_cast<std::uint32_t>(step), cost.busiest_s, links, ready);
    slowest = std::max(slowest, 2 * cost.latency_s + cost.busiest_s);
  }
  double total = 0;
  for (const std::vector<double>& channel : ready) total = std::max(total, *std::max_element(channel.begin(), channel.end()));
  if (ring) total *= static_cast<double>(steps);  // every step the same
  return total + (static_cast<double>(slices) / channels - 1) * slowest;
}

}  // namespace

std::vector<PredictedTime> predict_algorithms(const CollectiveSpec& spec, const Topology& topology) {
  using collective::Algorithm;
  std::vector<Algorithm> candidates;
  switch (spec.operation) {
    case collective::Operation::all_reduce: candidates = {Algorithm::ring, Algorithm::double_binary_tree}; break;
    case collective::Operation::alltoall: candidates = {Algorithm::direct}; break;
    default: candidates = {Algorithm::ring}; break;
  }
  std::vector<PredictedTime> predicted;
  if (spec.hosts.size() < 2) return predicted;
  Links links = links_of(spec, topology);
  // NCCL builds its trees between servers: inside one, only the ring.
  if (links.gpus != 0 && links.gpus == spec.hosts.size()) candidates = {Algorithm::ring};
  for (Algorithm algorithm : candidates) {
    if (auto seconds = predicted_seconds(spec, algorithm, links)) predicted.push_back({algorithm, *seconds});
  }
  return predicted;
}

collective::Algorithm choose_algorithm(const CollectiveSpec& spec, const Topology& topology) {
  if (spec.operation != collective::Operation::all_reduce) return collective::default_algorithm(spec.operation);
  std::vector<PredictedTime> predicted = predict_algorithms(spec, topology);
  if (predicted.empty()) return collective::default_algorithm(spec.operation);
  return std::min_element(predicted.begin(), predicted.end(),
                          [](const PredictedTime& a, const PredictedTime& b) { return a.seconds < b.seconds; })
      ->algorithm;
}

}  // namespace uroce::sim
