// Matching a Chakra replay's collectives and messages across ranks.
#include "sim/chakra_plan.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "sim/collective_choice.h"
#include "sim/scenario.h"

namespace uroce::sim {

namespace {

constexpr std::uint64_t kLargestTransfer = 1ull << 30;  // one WRITE's length is 32 bits; kept to 1 GiB
constexpr std::uint64_t kLargestCollective = 1ull << 38;  // its buffers fit a simulated host's region

std::string where(const ChakraSpec& spec, std::uint32_t rank, std::uint32_t node) {
  const chakra::TraceNode& traced = spec.ranks[rank].nodes[node];
  return fmt::format("{}.{}.et: node {} (id {}, \"{}\")", spec.traces, rank, node, traced.id, traced.name);
}

// The ranks of a node's process group, checked to include the node's rank.
const std::vector<std::uint32_t>& group_of(const ChakraSpec& spec, const std::vector<std::uint32_t>& everyone,
                                           std::uint32_t rank, std::uint32_t node) {
  const std::string& name = spec.ranks[rank].nodes[node].pg_name;
  if (name.empty()) return everyone;
  auto found = spec.groups.find(name);
  if (found == spec.groups.end()) {
    throw std::invalid_argument(where(spec, rank, node) + ": process group \"" + name +
                                "\" is not in [chakra.groups]");
  }
  for (std::uint32_t member : found->second) {
    if (member == rank) return found->second;
  }
  throw std::invalid_argument(where(spec, rank, node) + ": rank " + std::to_string(rank) +
                              " is not a member of its process group \"" + name + "\"");
}

void plan_collectives(const ChakraSpec& spec, const Topology& topology, ChakraPlan& plan) {
  auto n = static_cast<std::uint32_t>(spec.ranks.size());
  std::vector<std::uint32_t> everyone(n);
  for (std::uint32_t r = 0; r < n; ++r) everyone[r] = r;
  // Each group's collectives, found in the order of its first member's file.
  std::map<std::string, std::vector<std::uint32_t>> by_group;  // group -> collectives
  std::map<std::pair<std::string, std::uint32_t>, std::uint32_t> seen;  // (group, rank) -> collectives met
  for (std::uint32_t rank = 0; rank < n; ++rank) {
    const auto& nodes = spec.ranks[rank].nodes;
    for (std::uint32_t i = 0; i < nodes.size(); ++i) {
      const chakra::TraceNode& node = nodes[i];
      if (node.type != chakra::kCommCollNode) continue;
      // Without comm_type it is the CPU side of a collective (PyTorch's
      // c10d call, whose GPU kernel is another node): skipped like the
      // types uroce does not run.
      if (!node.comm_type || !replays(*node.comm_type)) continue;
      const std::vector<std::uint32_t>& members = group_of(spec, everyone, rank, i);
      std::uint32_t& met = seen[{node.pg_name, rank}];
      std::vector<std::uint32_t>& collectives = by_group[node.pg_name];
      if (met == collectives.size()) {  // the first member to reach it
        PlannedCollective planned;
        planned.group = node.pg_name;
        planned.index = met;
        planned.type = *node.comm_type;
        planned.bytes = node.comm_size;
        planned.ranks = members;
        planned.nodes.assign(members.size(), kNoCollective);
        collectives.push_back(static_cast<std::uint32_t>(plan.collectives.size()));
        plan.collectives.push_back(std::move(planned));
      }
      std::uint32_t id = collectives[met++];
      PlannedCollective& planned = plan.collectives[id];
      if (planned.type != *node.comm_type || planned.bytes != node.comm_size) {
        std::uint32_t first = UINT32_MAX;  // ranks are read in order: the lowest that reached it
        for (std::size_t m = 0; m < planned.ranks.size(); ++m) {
          if (planned.nodes[m] != kNoCollective) first = std::min(first, planned.ranks[m]);
        }
        throw std::invalid_argument(fmt::format(
            "{}: collective #{} of group \"{}\" is {} of {} bytes here, {} of {} bytes on rank {}",
            where(spec, rank, i), planned.index, planned.group, chakra::comm_type_name(*node.comm_type),
            node.comm_size, chakra::comm_type_name(planned.type), planned.bytes, first));
      }
      for (std::size_t m = 0; m < planned.ranks.size(); ++m) {
        if (planned.ranks[m] == rank) planned.nodes[m] = i;
      }
      plan.collective_of[rank][i] = id;
    }
  }
  for (PlannedCollective& planned : plan.collectives) {
    for (std::size_t m = 0; m < planned.ranks.size(); ++m) {
      if (planned.nodes[m] == kNoCollective) {
        throw std::invalid_argument(fmt::format(
            "{}.{}.et: has no node for collective #{} of group \"{}\" ({} of {} bytes), which its other "
            "members run",
            spec.traces, planned.ranks[m], planned.index, planned.group, chakra::comm_type_name(planned.type),
            planned.bytes));
      }
    }
    auto members = static_cast<std::uint32_t>(planned.ranks.size());
    if (planned.type == chakra::CommType::barrier || members < 2) continue;
    if (planned.bytes > kLargestCollective / members) {
      throw std::invalid_argument(where(spec, planned.ranks[0], planned.nodes[0]) +
                                  ": a collective of more than 256 GiB over its ranks");
    }
    // An all-gather's comm_size is what each rank contributes (as ASTRA-sim
    // reads it); the schedule's size is the gathered output.
    if (planned.type == chakra::CommType::all_gather) planned.bytes *= members;
    planned.bytes = std::max<std::uint64_t>(planned.bytes, members);
    CollectiveSpec as_workload;  // what the choice and the server layout look at
    as_workload.operation = *operation_of(planned.type);  // not a barrier: see above
    as_workload.bytes = planned.bytes;
    as_workload.slices = spec.slices;
    as_workload.channels = spec.channels;
    for (std::uint32_t rank : planned.ranks) as_workload.hosts.push_back(spec.hosts[rank]);
    collective::Algorithm algorithm = spec.choose_algorithm
                                          ? choose_algorithm(as_workload, topology)
                                          : spec.algorithm.value_or(collective::default_algorithm(as_workload.operation));
    auto schedules = collective::make_channel_schedules(as_workload.operation, algorithm, members, planned.bytes,
                                                        topology.servers.whole_servers(as_workload.hosts),
                                                        spec.channels);
    if (!schedules) {
      throw std::invalid_argument(fmt::format("{}: {}", where(spec, planned.ranks[0], planned.nodes[0]),
                                              schedules.error()));
    }
    for (const collective::Schedule& schedule : *schedules) {
      if (schedule.largest_transfer() > kLargestTransfer) {
        throw std::invalid_argument(where(spec, planned.ranks[0], planned.nodes[0]) +
                                    ": a transfer of more than 1 GiB (one WRITE's limit here)");
      }
    }
    planned.schedules = std::move(*schedules);
  }
}

void plan_messages(const ChakraSpec& spec, std::set<std::pair<std::uint32_t, std::uint32_t>>& pairs) {
  auto n = static_cast<std::uint32_t>(spec.ranks.size());
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::int64_t> balance;  // sends - receives
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::pair<std::uint32_t, std::uint32_t>> example;
  for (std::uint32_t rank = 0; rank < n; ++rank) {
    const auto& nodes = spec.ranks[rank].nodes;
    for (std::uint32_t i = 0; i < nodes.size(); ++i) {
      const chakra::TraceNode& node = nodes[i];
      bool send = node.type == chakra::kCommSendNode;
      if (!send && node.type != chakra::kCommRecvNode) continue;
      std::optional<std::uint32_t> peer = send ? node.comm_dst : node.comm_src;
      const char* key = send ? "comm_dst" : "comm_src";
      if (!peer) throw std::invalid_argument(where(spec, rank, i) + ": a " + (send ? "send" : "receive") + " without " + key);
      if (*peer >= n || *peer == rank) {
        throw std::invalid_argument(fmt::format("{}: {} {} is not another rank of the {}", where(spec, rank, i), key,
                                                *peer, n));
      }
      if (send && node.comm_size > kLargestTransfer) {
        throw std::invalid_argument(where(spec, rank, i) + ": a send of more than 1 GiB (one WRITE's limit here)");
      }
      auto channel = send ? std::make_tuple(rank, *peer, node.comm_tag) : std::make_tuple(*peer, rank, node.comm_tag);
      balance[channel] += send ? 1 : -1;
      example.emplace(channel, std::make_pair(rank, i));
      pairs.emplace(std::min(rank, *peer), std::max(rank, *peer));
    }
  }
  for (const auto& [channel, difference] : balance) {
    if (difference == 0) continue;
    auto [rank, node] = example.at(channel);
    auto [from, to, tag] = channel;
    throw std::invalid_argument(fmt::format("{}: rank {} sends {} {} message(s) with tag {} than rank {} receives",
                                            where(spec, rank, node), from, std::abs(difference),
                                            difference > 0 ? "more" : "fewer", tag, to));
  }
}

}  // namespace

std::optional<collective::Operation> operation_of(chakra::CommType type) {
  switch (type) {
    case chakra::CommType::all_reduce: return collective::Operation::all_reduce;
    case chakra::CommType::all_gather: return collective::Operation::all_gather;
    case chakra::CommType::reduce_scatter: return collective::Operation::reduce_scatter;
    case chakra::CommType::all_to_all: return collective::Operation::alltoall;
    default: return std::nullopt;
  }
}

bool replays(chakra::CommType type) { return operation_of(type) || type == chakra::CommType::barrier; }

ChakraPlan plan_chakra(const ChakraSpec& spec, const Topology& topology) {
  if (spec.control_dependencies) {
    for (std::uint32_t rank = 0; rank < spec.ranks.size(); ++rank) {
      if (auto node = chakra::node_on_a_cycle(spec.ranks[rank], true)) {
        throw std::invalid_argument(where(spec, rank, static_cast<std::uint32_t>(*node)) +
                                    ": its control and data dependencies form a cycle (control_dependencies = true)");
      }
    }
  }
  ChakraPlan plan;
  plan.collective_of.resize(spec.ranks.size());
  for (std::size_t r = 0; r < spec.ranks.size(); ++r) {
    plan.collective_of[r].assign(spec.ranks[r].nodes.size(), kNoCollective);
  }
  plan_collectives(spec, topology, plan);
  std::set<std::pair<std::uint32_t, std::uint32_t>> pairs;
  for (const PlannedCollective& planned : plan.collectives) {
    for (const collective::Schedule& schedule : planned.schedules) {
      for (std::size_t m = 0; m < schedule.ranks.size(); ++m) {
        for (const collective::Step& step : schedule.ranks[m]) {
          for (const collective::Transfer& transfer : step.sends) {
            std::uint32_t a = planned.ranks[m];
            std::uint32_t b = planned.ranks[transfer.to];
            pairs.emplace(std::min(a, b), std::max(a, b));
          }
        }
      }
    }
  }
  plan_messages(spec, pairs);
  plan.pairs.assign(pairs.begin(), pairs.end());
  return plan;
}

}  // namespace uroce::sim
