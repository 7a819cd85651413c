// The wait-for graph of paused queues and its cycle search.
#include "sim/deadlock_detector.h"

#include <map>

namespace uroce::sim {

namespace {

struct QueueKey {
  std::uint32_t switch_index;
  std::uint16_t port;
  std::uint8_t priority;
  auto operator<=>(const QueueKey&) const = default;
};

// A switch egress queue that is stuck: paused long enough, packets waiting,
// and sending to another switch (hosts never forward, so never close a cycle).
bool stuck(const Fabric& fabric, const QueueKey& key, SimTime paused_before) {
  const SwitchNode& node = fabric.switch_at(key.switch_index);
  const Transmitter& transmitter = node.transmitter(key.port);
  return transmitter.paused(key.priority) && transmitter.paused_since(key.priority) <= paused_before &&
         node.egress_bytes(key.port, key.priority) > 0 && !fabric.neighbour(key.switch_index, key.port).is_host;
}

}  // namespace

std::optional<std::vector<PausedHop>> find_paused_cycle(const Fabric& fabric, SimTime paused_before) {
  std::vector<QueueKey> nodes;
  std::map<QueueKey, std::uint32_t> index;
  for (std::uint32_t s = 0; s < fabric.switch_count(); ++s) {
    const SwitchNode& node = fabric.switch_at(s);
    for (std::uint16_t port = 0; port < node.port_count(); ++port) {
      for (std::uint8_t priority = 0; priority < kPriorities; ++priority) {
        QueueKey key{s, port, priority};
        if (!stuck(fabric, key, paused_before)) continue;
        index.emplace(key, static_cast<std::uint32_t>(nodes.size()));
        nodes.push_back(key);
      }
    }
  }
  // A stuck queue waits on the stuck queues downstream that hold packets it sent.
  std::vector<std::vector<std::uint32_t>> waits_on(nodes.size());
  for (std::uint32_t i = 0; i < nodes.size(); ++i) {
    const QueueKey& key = nodes[i];
    std::uint32_t downstream = fabric.neighbour(key.switch_index, key.port).index;
    std::uint16_t ingress = fabric.switch_at(key.switch_index).transmitter(key.port).peer_port();
    const SwitchNode& next = fabric.switch_at(downstream);
    for (std::uint16_t port = 0; port < next.port_count(); ++port) {
      auto found = index.find(QueueKey{downstream, port, key.priority});
      if (found != index.end() && next.holds_from(port, key.priority, ingress)) waits_on[i].push_back(found->second);
    }
  }
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
  if (auto cycle = find_paused_cycle(fabric_, now - interval_)) {
    found_ = Deadlock{now, std::move(*cycle)};
    return;
  }
  world_.events.schedule(now + interval_, this, 0);
}

}  // namespace uroce::sim
