// Ring orders and trees over ranks, flat or on GPU servers.
#include "collective/rank_layout.h"

namespace uroce::collective {

std::vector<std::uint32_t> ring_order(std::uint32_t ranks, const RankLayout& layout) {
  std::vector<std::uint32_t> order;
  order.reserve(ranks);
  std::uint32_t g = layout.gpus_per_server;
  if (g == 0 || ranks % g != 0) {
    for (std::uint32_t r = 0; r < ranks; ++r) order.push_back(r);
    return order;
  }
  std::uint32_t first = layout.channel % g;
  for (std::uint32_t server = 0; server < ranks / g; ++server) {
    for (std::uint32_t i = 0; i < g; ++i) {
      std::uint32_t gpu = server % 2 == 0 ? (first + i) % g : (first + g - 1 - i) % g;
      order.push_back(server * g + gpu);
    }
  }
  return order;
}

std::vector<std::uint32_t> tree_parents(std::uint32_t ranks, const RankLayout& layout, std::uint32_t tree) {
  std::vector<std::uint32_t> parent(ranks);
  // A heap over `count` nodes, mirrored for tree 1: node i's parent.
  auto heap_parent = [tree](std::uint32_t count, std::uint32_t i) -> std::uint32_t {
    std::uint32_t node = tree == 0 ? i : count - 1 - i;
    if (node == 0) return i;
    std::uint32_t up = (node - 1) / 2;
    return tree == 0 ? up : count - 1 - up;
  };
  std::uint32_t g = layout.gpus_per_server;
  if (g == 0 || ranks % g != 0) {
    for (std::uint32_t r = 0; r < ranks; ++r) parent[r] = heap_parent(ranks, r);
    return parent;
  }
  std::uint32_t servers = ranks / g;
  std::uint32_t head = layout.channel % g;
  for (std::uint32_t server = 0; server < servers; ++server) {
    for (std::uint32_t i = 0; i < g; ++i) {
      std::uint32_t rank = server * g + (head + i) % g;
      std::uint32_t up_server = heap_parent(servers, server);
      if (i > 0) {
        parent[rank] = server * g + (head + i - 1) % g;
      } else {
        parent[rank] = up_server == server ? rank : up_server * g + head;
      }
    }
  }
  return parent;
}

}  // namespace uroce::collective
