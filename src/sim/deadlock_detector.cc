// The wait-for graph of paused queues and its cycle search.
#include "sim/deadlock_detector.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace uroce::sim {

namespace {

struct QueueKey {
  std::uint32_t switch_index;
  std::uint16_t port;
  std::uint8_t priority;
  auto operator<=>(const QueueKey&) const = default;
};

// Stuck queue `from` waits on stuck queue `to` (their places in the sorted list).
struct WaitsOn {
  std::uint32_t from;
  std::uint32_t to;
  auto operator<=>(const WaitsOn&) const = default;
};

// A switch egress queue that is stuck: paused long enough, packets waiting,
// and sending to another switch (hosts never forward, so never close a cycle).
bool stuck(const Fabric& fabric, const QueueKey& key, SimTime paused_before) {
  const SwitchNode& node = fabric.switch_at(key.switch_index);
  const Transmitter& transmitter = node.transmitter(key.port);
  return transmitter.paused(key.priority) && transmitter.paused_since(key.priority) <= paused_before &&
         node.egress_bytes(key.port, key.priority) > 0 && !fabric.neighbour(key.switch_index, key.port).is_host;
}

// Every rank's items, in the order of their values (each rank finds those
// of the switches it holds).
template <typename Item>
std::vector<Item> gather_sorted(RankGroup& ranks, const std::vector<Item>& mine) {
  Bytes bytes(mine.size() * sizeof(Item));
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  std::vector<Item> all;
  for (const Bytes& theirs : ranks.gather_all(bytes)) {
    std::size_t at = all.size();
    all.resize(at + theirs.size() / sizeof(Item));
    if (!theirs.empty()) std::memcpy(all.data() + at, theirs.data(), theirs.size() / sizeof(Item) * sizeof(Item));
  }
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

std::optional<std::vector<PausedHop>> find_paused_cycle(const Fabric& fabric, SimTime paused_before,
                                                        RankGroup& ranks) {
  std::vector<QueueKey> stuck_here;
  for (std::uint32_t s = 0; s < fabric.switch_count(); ++s) {
    if (!fabric.holds(NodeRef{false, s})) continue;
    const SwitchNode& node = fabric.switch_at(s);
    for (std::uint16_t port = 0; port < node.port_count(); ++port) {
      for (std::uint8_t priority = 0; priority < kPriorities; ++priority) {
        QueueKey key{s, port, priority};
        if (stuck(fabric, key, paused_before)) stuck_here.push_back(key);
      }
    }
  }
  std::vector<QueueKey> nodes = gather_sorted(ranks, stuck_here);
  std::map<QueueKey, std::uint32_t> index;
  for (std::uint32_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i], i);
  // A stuck queue waits on the stuck queues downstream that hold packets it sent.
  std::vector<WaitsOn> edges_here;
  for (std::uint32_t i = 0; i < nodes.size(); ++i) {
    const QueueKey& key = nodes[i];
    std::uint32_t downstream = fabric.neighbour(key.switch_index, key.port).index;
    if (!fabric.holds(NodeRef{false, downstream})) continue;  // its rank finds these edges
    std::uint16_t ingress = fabric.neighbour_port(key.switch_index, key.port);
    const SwitchNode& next = fabric.switch_at(downstream);
    for (std::uint16_t port = 0; port < next.port_count(); ++port) {
      auto found = index.find(QueueKey{downstream, port, key.priority});
      if (found != index.end() && next.holds_from(port, key.priority, ingress)) edges_here.push_back({i, found->second});
    }
  }
  std::vector<std::vector<std::uint32_t>> waits_on(nodes.size());
  for (const auto& [from, to] : gather_sorted(ranks, edges_here)) waits_on[from].push_back(to);
  // Depth-first search; a grey node met again closes a cycle along the stack.
  enum Colour : std::uint8_t { white, grey, black };
  std::vector<Colour> colour(nodes.size(), white);
  for (std::uint32_t root = 0; root < nodes.size(); ++root) {
    if (colour[root] != white) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> stack{{root, 0}};
    colour[root] = grey;
    while (!stack.empty()) {
      auto& [at, next_edge] = stack.back();
      if (next_edge == waits_on[at].size()) {
        colour[at] = black;
        stack.pop_back();
        continue;
      }
      std::uint32_t to = waits_on[at][next_edge++];
      if (colour[to] == white) {
        colour[to] = grey;
        stack.emplace_back(to, 0);
        continue;
      }
      if (colour[to] != grey) continue;
      std::vector<PausedHop> cycle;
      std::size_t from = 0;
      while (stack[from].first != to) ++from;
      for (std::size_t k = from; k < stack.size(); ++k) {
        const QueueKey& key = nodes[stack[k].first];
        cycle.push_back({key.switch_index, key.port, fabric.neighbour(key.switch_index, key.port), key.priority});
      }
      return cycle;
    }
  }
  return std::nullopt;
}

void DeadlockDetector::on_event(SimTime now, std::uint32_t) {
  if (found_) return;
  if (auto cycle = find_paused_cycle(fabric_, now - interval_, ranks_)) {
    found_ = Deadlock{now, std::move(*cycle)};
    return;
  }
  world_.events.schedule(now + interval_, this, 0);
}

}  // namespace uroce::sim
