// Where a collective's ranks sit, for the topology-aware rings and trees
// that NCCL builds over GPU servers, and the orders and trees that follow.
//
// On servers of g GPUs (ranks [s * g, (s + 1) * g) on server s), channel
// c's ring enters server s at GPU c (mod g) and visits its GPUs in a row,
// so that it crosses the network once per server, and leaves from the GPU
// on the same rail as the next server's first: even servers run forwards
// from GPU c to GPU c - 1, odd servers backwards from c - 1 to c. The ring
// thus stays on rails c - 1 and c between servers (with an odd number of
// servers, the hop that closes it changes rail). Other channels use other
// rails, so that every NIC carries its share.
//
// Channel c's trees chain each server's GPUs from GPU c (mod g), and join
// the chains' heads in a binary tree over the servers (a heap: server s's
// parent is (s - 1) / 2), which the second tree mirrors (server s as
// servers - 1 - s), so that a server that is a leaf in one is inside the
// other: NCCL's double binary tree between servers, chains within. Flat
// (no servers), the trees are heaps over the ranks, the second mirrored.
#pragma once

#include <cstdint>
#include <vector>

namespace uroce::collective {

struct RankLayout {
  std::uint32_t gpus_per_server = 0;  // 0: flat, no servers
  std::uint32_t channel = 0;
};

// The ranks in ring order.
std::vector<std::uint32_t> ring_order(std::uint32_t ranks, const RankLayout& layout);
// Each rank's parent in tree 0 or 1; the root's is itself.
std::vector<std::uint32_t> tree_parents(std::uint32_t ranks, const RankLayout& layout, std::uint32_t tree);

}  // namespace uroce::collective
