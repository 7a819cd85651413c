// Collective schedules: which rank sends how many bytes to which, step by
// step, for all-reduce, all-gather, reduce-scatter and all-to-all, by ring,
// recursive halving-doubling or direct/pairwise exchange. Free of any
// transport or simulator type: the fabric simulator drives one with RDMA
// WRITEs (sim/collective_runner.h), and a runner on a real network could
// drive the same one.
//
// The double binary tree (NCCL's tree all-reduce) cuts each half of the
// buffer into kTreeChunks chunks that flow up one tree level per step,
// summed at each node, then down again from the root; the second tree is
// the first mirrored, so that a rank that is a leaf in one is inside the
// other. Rings and trees follow a RankLayout (collective/rank_layout.h):
// flat, or over GPU servers as NCCL builds them, one per channel.
//
// Steps are aligned across ranks: a transfer in rank a's step s to rank b is
// one of the receives of b's step s. A rank may start step s once its own
// sends of step s - 1 completed and every transfer to it in step s - 1
// arrived. Sizes follow nccl-tests: `bytes` is the all-reduce's buffer, the
// all-gather's output, the reduce-scatter's input, the all-to-all's send
// buffer per rank; a chunk is bytes / ranks. All-to-all is out of place (it
// reads a send buffer and writes a separate receive buffer, as nccl's
// does); the others work in one buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collective/rank_layout.h"
#include "uroce/expected.h"

namespace uroce::collective {

enum class Operation : std::uint8_t { all_reduce, all_gather, reduce_scatter, alltoall };
enum class Algorithm : std::uint8_t {
  ring,              // n - 1 steps per phase, one chunk to the next rank
  halving_doubling,  // recursive halving then doubling (Rabenseifner): log2 n steps per phase; ranks a power of two
  double_binary_tree,  // all-reduce: two mirrored binary trees, half the data each, pipelined in chunks
  direct,            // all-to-all: every send in one step
  pairwise,          // all-to-all: n - 1 steps, step k to rank + k
};

inline constexpr std::uint32_t kTreeChunks = 8;

const char* to_string(Operation operation);
const char* to_string(Algorithm algorithm);
Expected<Operation, std::string> operation_from(const std::string& name);
Expected<Algorithm, std::string> algorithm_from(const std::string& name);
// The algorithm a collective uses when none is named: ring; direct for all-to-all.
Algorithm default_algorithm(Operation operation);

struct Transfer {
  std::uint32_t to = 0;
  std::uint64_t offset = 0;         // in the sender's buffer
  std::uint64_t remote_offset = 0;  // in the receiver's: the same, but for all-to-all (the sender's slot, receive buffer)
  std::uint64_t bytes = 0;
};

struct Step {
  std::vector<Transfer> sends;
  std::vector<std::uint32_t> receives_from;  // the ranks whose transfers to this one are in this step
  bool reduce = false;  // what arrives in this step is summed into the buffer, not copied over it
};

struct Schedule {
  Operation operation = Operation::all_reduce;
  Algorithm algorithm = Algorithm::ring;
  std::uint64_t bytes = 0;
  std::vector<std::vector<Step>> ranks;  // each rank's steps, in order

  // What every rank's steps gave, kept by forget_ranks_except.
  struct Totals {
    std::size_t steps = 0;
    std::uint64_t smallest_transfer = 0;
  };
  std::optional<Totals> forgotten;  // set once some ranks' steps are gone

  std::uint32_t rank_count() const { return static_cast<std::uint32_t>(ranks.size()); }
  std::size_t steps() const {
    if (forgotten) return forgotten->steps;
    return ranks.empty() ? 0 : ranks.front().size();
  }
  // Bytes a rank sends over the whole collective.
  std::uint64_t bytes_sent_by(std::uint32_t rank) const;
  // The largest single transfer.
  std::uint64_t largest_transfer() const;
  // The smallest, over every rank (UINT64_MAX when nothing is sent).
  std::uint64_t smallest_transfer() const;
  // Frees the steps of every rank that keep[rank] is false for: a process
  // that runs only some ranks reads only theirs. steps() and
  // smallest_transfer() still answer for every rank; the rest answer for the
  // kept ones only.
  void forget_ranks_except(const std::vector<bool>& keep);
};

// An error names what does not fit: fewer than 2 ranks, an algorithm that
// does not do this operation, halving-doubling on a rank count that is not a
// power of two, fewer bytes than ranks (or than a tree's pipeline chunks),
// ranks that are not whole servers of the layout.
Expected<Schedule, std::string> make_schedule(Operation operation, Algorithm algorithm, std::uint32_t ranks,
                                              std::uint64_t bytes, const RankLayout& layout = {});
// The schedules a collective's channels follow: on servers (gpus_per_server
// not 0) a ring or tree per channel, each entering the servers elsewhere;
// otherwise one that every channel follows.
Expected<std::vector<Schedule>, std::string> make_channel_schedules(Operation operation, Algorithm algorithm,
                                                                    std::uint32_t ranks, std::uint64_t bytes,
                                                                    std::uint32_t gpus_per_server,
                                                                    std::uint32_t channels);

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw x
// factor, the share of the data each rank must move, so that busbw compares
// with a link's bandwidth whatever the rank count: 2 (n - 1) / n for an
// all-reduce, (n - 1) / n for the others here.
double bus_factor(Operation operation, std::uint32_t ranks);

}  // namespace uroce::collective
