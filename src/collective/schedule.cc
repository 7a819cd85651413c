// Building the collectives' schedules, step by step.
#include "collective/schedule.h"

#include <algorithm>
#include <bit>
#include <string>

namespace uroce::collective {

namespace {

constexpr std::uint32_t kMostRanks = 1u << 20;
// A schedule keeps every rank's every transfer: at about 40 bytes each,
// 2^26 of them are a few GiB. Rings and exchanges grow with ranks squared,
// halving-doubling and the trees with ranks times their logarithm.
constexpr std::uint64_t kMostTransfers = 1ull << 26;

// At least as many transfers as the schedule will hold.
std::uint64_t transfers_bound(Algorithm algorithm, std::uint32_t ranks) {
  std::uint64_t n = ranks;
  std::uint64_t log2 = std::bit_width(n - 1);
  switch (algorithm) {
    case Algorithm::ring: return n * 2 * (n - 1);
    case Algorithm::halving_doubling: return n * 2 * log2;
    case Algorithm::double_binary_tree: return n * 8 * (log2 + kTreeChunks);
    case Algorithm::direct:
    case Algorithm::pairwise: return n * (n - 1);
  }
  return n * n;
}

// Chunk k of n is [boundary(k), boundary(k + 1)): sizes differ by at most a byte.
struct Chunks {
  std::uint64_t bytes;
  std::uint32_t ranks;
  std::uint64_t boundary(std::uint32_t k) const { return bytes * k / ranks; }
  Transfer span(std::uint32_t to, std::uint32_t first, std::uint32_t end) const {
    return {to, boundary(first), boundary(first), boundary(end) - boundary(first)};
  }
};

std::uint32_t wrap(std::int64_t rank, std::uint32_t ranks) {
  return static_cast<std::uint32_t>(((rank % ranks) + ranks) % ranks);
}

// Ring: at step s each rank sends one chunk to the next in the ring's
// order and receives one from the previous. An all-reduce is 2 (n - 1) such
// steps (reduce-scatter, then all-gather of the reduced chunks); the others
// n - 1.
void ring(Schedule& schedule, std::uint32_t steps, std::uint32_t reducing_steps, const Chunks& chunks,
          const std::vector<std::uint32_t>& order) {
  std::uint32_t n = chunks.ranks;
  for (std::uint32_t p = 0; p < n; ++p) {
    for (std::uint32_t s = 0; s < steps; ++s) {
      std::uint32_t chunk = wrap(std::int64_t{p} - s, n);
      Step step;
      step.sends.push_back(chunks.span(order[(p + 1) % n], chunk, chunk + 1));
      step.receives_from.push_back(order[wrap(std::int64_t{p} - 1, n)]);
      step.reduce = s < reducing_steps;
      schedule.ranks[order[p]].push_back(std::move(step));
    }
  }
}

// Recursive halving (reduce-scatter): at step i each rank exchanges half of
// the segment it still reduces with the rank 2^(log n - i - 1) away, and
// keeps the other half. Recursive doubling (all-gather) runs it backwards,
// each rank sending all it holds to a partner 1, 2, 4 ... away.
void halving_doubling(Schedule& schedule, bool halve, bool double_back, const Chunks& chunks) {
  std::uint32_t n = chunks.ranks;
  std::vector<std::uint32_t> low(n, 0), high(n, n);  // each rank's segment, in chunks
  for (std::uint32_t distance = n / 2; distance >= 1; distance /= 2) {
    for (std::uint32_t r = 0; r < n; ++r) {
      std::uint32_t middle = (low[r] + high[r]) / 2;
      bool keeps_low = (r & distance) == 0;
      if (halve) {
        Step step;
        step.sends.push_back(keeps_low ? chunks.span(r ^ distance, middle, high[r])
                                       : chunks.span(r ^ distance, low[r], middle));
        step.receives_from.push_back(r ^ distance);
        step.reduce = true;
        schedule.ranks[r].push_back(std::move(step));
      }
      (keeps_low ? high[r] : low[r]) = middle;
    }
  }
  if (!double_back) return;
  for (std::uint32_t distance = 1; distance < n; distance *= 2) {
    std::vector<std::uint32_t> new_low = low, new_high = high;
    for (std::uint32_t r = 0; r < n; ++r) {
      std::uint32_t partner = r ^ distance;
      Step step;
      step.sends.push_back(chunks.span(partner, low[r], high[r]));
      step.receives_from.push_back(partner);
      schedule.ranks[r].push_back(std::move(step));
      new_low[r] = std::min(low[r], low[partner]);
      new_high[r] = std::max(high[r], high[partner]);
    }
    low = std::move(new_low);
    high = std::move(new_high);
  }
}

// All-to-all: rank r's block q goes to rank q, into its block r; directly,
// all in one step, or pairwise, step k to rank r + k (and from rank r - k).
// Blocks are bytes / n each (as nccl-tests, which sizes all-to-all in
// multiples of the rank count): a remainder is not sent.
void alltoall(Schedule& schedule, bool pairwise, const Chunks& chunks) {
  std::uint32_t n = chunks.ranks;
  std::uint64_t block = chunks.bytes / n;
  for (std::uint32_t r = 0; r < n; ++r) {
    if (!pairwise) schedule.ranks[r].emplace_back();
    for (std::uint32_t k = 1; k < n; ++k) {
      if (pairwise) schedule.ranks[r].emplace_back();
      Step& step = schedule.ranks[r].back();
      std::uint32_t to = (r + k) % n;
      step.sends.push_back({to, to * block, r * block, block});
      step.receives_from.push_back(wrap(std::int64_t{r} - k, n));
    }
  }
}

// The double binary tree, over the parents that rank_layout.h gives each
// tree. Each tree reduces and broadcasts half the buffer in kTreeChunks
// chunks. Going up, a rank at depth d sends chunk c to its parent at step
// (depth - d) + c, where depth is the deepest rank's in either tree: the
// deepest leaves start at once, and each rank sends a chunk the step after
// its children's copies of it arrived. Going down, from step `up` on (when
// the roots hold every chunk), a rank at depth d sends chunk c to its
// children at step up + d + c.
void double_binary_tree(Schedule& schedule, const Chunks& chunks, const RankLayout& layout) {
  std::uint32_t n = chunks.ranks;
  std::vector<std::uint32_t> parents[2] = {tree_parents(n, layout, 0), tree_parents(n, layout, 1)};
  std::vector<std::uint32_t> depths[2];
  std::uint32_t depth = 0;
  for (std::uint32_t tree = 0; tree < 2; ++tree) {
    depths[tree].assign(n, 0);
    for (std::uint32_t r = 0; r < n; ++r) {
      for (std::uint32_t at = r; parents[tree][at] != at; at = parents[tree][at]) ++depths[tree][r];
      depth = std::max(depth, depths[tree][r]);
    }
  }
  std::uint32_t up = depth + kTreeChunks - 1;                   // steps going up
  std::uint32_t down = depth == 0 ? 0 : depth + kTreeChunks - 1;  // steps going down
  for (auto& steps : schedule.ranks) {
    steps.resize(up + down);
    for (std::uint32_t s = 0; s < up; ++s) steps[s].reduce = true;
  }
  // Chunk c of tree t: [boundary(t, c), boundary(t, c + 1)) of the buffer.
  Chunks pieces{chunks.bytes, 2 * kTreeChunks};
  for (std::uint32_t tree = 0; tree < 2; ++tree) {
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint32_t rank = tree == 0 ? i : n - 1 - i;  // tree 1's ranks in its mirrored order
      std::uint32_t parent = parents[tree][rank];
      if (parent == rank) continue;
      std::uint32_t d = depths[tree][rank];
      for (std::uint32_t c = 0; c < kTreeChunks; ++c) {
        std::uint32_t piece = tree * kTreeChunks + c;
        std::uint32_t step_up = (depth - d) + c;
        schedule.ranks[rank][step_up].sends.push_back(pieces.span(parent, piece, piece + 1));
        schedule.ranks[parent][step_up].receives_from.push_back(rank);
        std::uint32_t step_down = up + (d - 1) + c;  // the parent, at depth d - 1, sends it down
        schedule.ranks[parent][step_down].sends.push_back(pieces.span(rank, piece, piece + 1));
        schedule.ranks[rank][step_down].receives_from.push_back(parent);
      }
    }
  }
}

}  // namespace

const char* to_string(Operation operation) {
  switch (operation) {
    case Operation::all_reduce: return "all_reduce";
    case Operation::all_gather: return "all_gather";
    case Operation::reduce_scatter: return "reduce_scatter";
    case Operation::alltoall: return "alltoall";
  }
  return "?";
}

const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return "ring";
    case Algorithm::halving_doubling: return "halving_doubling";
    case Algorithm::double_binary_tree: return "double_binary_tree";
    case Algorithm::direct: return "direct";
    case Algorithm::pairwise: return "pairwise";
  }
  return "?";
}

Expected<Operation, std::string> operation_from(const std::string& name) {
  for (Operation operation :
       {Operation::all_reduce, Operation::all_gather, Operation::reduce_scatter, Operation::alltoall}) {
    if (name == to_string(operation)) return operation;
  }
  return unexpected("'" + name + "' is not one of all_reduce, all_gather, reduce_scatter, alltoall");
}

Expected<Algorithm, std::string> algorithm_from(const std::string& name) {
  for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::double_binary_tree,
                              Algorithm::direct, Algorithm::pairwise}) {
    if (name == to_string(algorithm)) return algorithm;
  }
  return unexpected("'" + name + "' is not one of ring, halving_doubling, double_binary_tree, direct, pairwise");
}

Algorithm default_algorithm(Operation operation) {
  return operation == Operation::alltoall ? Algorithm::direct : Algorithm::ring;
}

std::uint64_t Schedule::bytes_sent_by(std::uint32_t rank) const {
  std::uint64_t sent = 0;
  for (const Step& step : ranks.at(rank)) {
    for (const Transfer& transfer : step.sends) sent += transfer.bytes;
  }
  return sent;
}

std::uint64_t Schedule::largest_transfer() const {
  std::uint64_t largest = 0;
  for (const auto& steps : ranks) {
    for (const Step& step : steps) {
      for (const Transfer& transfer : step.sends) largest = std::max(largest, transfer.bytes);
    }
  }
  return largest;
}

std::uint64_t Schedule::smallest_transfer() const {
  if (forgotten) return forgotten->smallest_transfer;
  std::uint64_t smallest = UINT64_MAX;
  for (const auto& steps : ranks) {
    for (const Step& step : steps) {
      for (const Transfer& transfer : step.sends) smallest = std::min(smallest, transfer.bytes);
    }
  }
  return smallest;
}

void Schedule::forget_ranks_except(const std::vector<bool>& keep) {
  Totals totals{steps(), smallest_transfer()};
  for (std::size_t rank = 0; rank < ranks.size(); ++rank) {
    if (rank >= keep.size() || !keep[rank]) std::vector<Step>().swap(ranks[rank]);
  }
  forgotten = totals;
}

Expected<std::vector<Schedule>, std::string> make_channel_schedules(Operation operation, Algorithm algorithm,
                                                                    std::uint32_t ranks, std::uint64_t bytes,
                                                                    std::uint32_t gpus_per_server,
                                                                    std::uint32_t channels) {
  bool per_channel = gpus_per_server != 0 && channels > 1 &&
                     (algorithm == Algorithm::ring || algorithm == Algorithm::double_binary_tree);
  std::vector<Schedule> schedules;
  for (std::uint32_t channel = 0; channel < (per_channel ? channels : 1); ++channel) {
    auto schedule = make_schedule(operation, algorithm, ranks, bytes, RankLayout{gpus_per_server, channel});
    if (!schedule) return unexpected(schedule.error());
    schedules.push_back(std::move(*schedule));
  }
  return schedules;
}

Expected<Schedule, std::string> make_schedule(Operation operation, Algorithm algorithm, std::uint32_t ranks,
                                              std::uint64_t bytes, const RankLayout& layout) {
  std::string name = std::string(to_string(operation)) + " by " + to_string(algorithm);
  if (ranks < 2 || ranks > kMostRanks) return unexpected(name + ": needs 2 to 1048576 ranks");
  if (std::uint64_t transfers = transfers_bound(algorithm, ranks); transfers > kMostTransfers) {
    return unexpected(name + ": " + std::to_string(ranks) + " ranks make up to " + std::to_string(transfers) +
                      " transfers, more than 2^26 (halving_doubling takes the most ranks)");
  }
  if (bytes < ranks) return unexpected(name + ": needs at least a byte per rank");
  bool exchange = algorithm == Algorithm::direct || algorithm == Algorithm::pairwise;
  if ((operation == Operation::alltoall) != exchange) {
    return unexpected(name + ": all-to-all runs direct or pairwise, the others ring or halving_doubling");
  }
  if (algorithm == Algorithm::halving_doubling && !std::has_single_bit(ranks)) {
    return unexpected(name + ": needs a power of two ranks, not " + std::to_string(ranks));
  }
  if (algorithm == Algorithm::double_binary_tree && operation != Operation::all_reduce) {
    return unexpected(name + ": the double binary tree is an all-reduce");
  }
  if (algorithm == Algorithm::double_binary_tree && bytes < 2 * kTreeChunks) {
    return unexpected(name + ": needs at least " + std::to_string(2 * kTreeChunks) + " bytes");
  }
  if (layout.gpus_per_server != 0 && ranks % layout.gpus_per_server != 0) {
    return unexpected(name + ": " + std::to_string(ranks) + " ranks are not whole servers of " +
                      std::to_string(layout.gpus_per_server) + " GPUs");
  }
  Schedule schedule;
  schedule.operation = operation;
  schedule.algorithm = algorithm;
  schedule.bytes = bytes;
  schedule.ranks.resize(ranks);
  Chunks chunks{bytes, ranks};
  bool reduces = operation != Operation::all_gather;
  bool gathers = operation != Operation::reduce_scatter;
  switch (algorithm) {
    case Algorithm::ring:
      ring(schedule, (reduces && gathers ? 2 : 1) * (ranks - 1), reduces ? ranks - 1 : 0, chunks,
           ring_order(ranks, layout));
      break;
    case Algorithm::double_binary_tree:
      double_binary_tree(schedule, chunks, layout);
      break;
    case Algorithm::halving_doubling:
      halving_doubling(schedule, reduces, gathers, chunks);
      break;
    case Algorithm::direct:
    case Algorithm::pairwise:
      alltoall(schedule, algorithm == Algorithm::pairwise, chunks);
      break;
  }
  return schedule;
}

double bus_factor(Operation operation, std::uint32_t ranks) {
  if (ranks == 0) return 0;
  double share = static_cast<double>(ranks - 1) / static_cast<double>(ranks);
  return operation == Operation::all_reduce ? 2 * share : share;
}

}  // namespace uroce::collective
