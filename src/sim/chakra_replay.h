// Replays Chakra traces on the fabric (sim/chakra_plan.h says what runs).
// Each rank runs a node once all its dependencies have finished, on one of
// three resources as ASTRA-sim models a GPU server: the CPU (nodes marked
// is_cpu_op), the GPU's compute (COMP nodes: their duration_micros) and
// the GPU's communication (collectives and sends, one at a time; receives
// wait alongside). Among ready nodes, the earliest in the file goes first.
// A collective is the schedule of collective/schedule.h, in the spec's
// slices (sim/collective_progress.h), each transfer's slice an RDMA WRITE (with immediate);
// a member starts it when its node starts and its node ends when its own
// part is done. A send is one WRITE with immediate to its peer: it ends
// when the WRITE completes, the matching receive when the WRITE lands (its
// immediate names the WRITE). Other nodes (metadata,
// memory, collectives uroce does not run) end at once and are counted.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/chakra_plan.h"
#include "sim/collective_progress.h"
#include "sim/fabric.h"
#include "sim/scenario.h"

namespace uroce::sim {

// Work requests of a replay carry this bit in their wr_id, the job's index
// in bits 40..61 and a slot of the job's WRITEs in flight below.
inline constexpr std::uint64_t kChakraWork = 1ull << 62;
inline constexpr int kChakraJobShift = 40;
inline std::uint32_t chakra_job_of(std::uint64_t wr_id) {
  return static_cast<std::uint32_t>((wr_id & ~kChakraWork) >> kChakraJobShift);
}

struct ChakraCollectiveResult {
  std::string group;
  std::uint32_t index = 0;
  chakra::CommType type = chakra::CommType::all_reduce;
  std::optional<collective::Algorithm> algorithm;  // none for a barrier or a group of one
  std::uint64_t bytes = 0;
  std::uint32_t ranks = 0;
  SimTime start = kSimNever;  // when its first member's node started
  SimTime end = kSimNever;    // when its last member's part was done
};

struct ChakraRankResult {
  std::uint32_t host = 0;
  SimTime finished = kSimNever;
  // Over [start, makespan end]: computing (a compute node running), else
  // communicating (a communication node running), else idle.
  SimTime compute = 0, communication = 0, idle = 0;
};

// One node's run, for the timeline.
struct ChakraSpan {
  std::uint32_t rank = 0;
  std::uint32_t node = 0;
  SimTime start = 0, end = 0;
};

struct ChakraResult {
  SimTime makespan = 0;  // from the replay's start to the last rank's end (or the run's end)
  std::uint32_t ranks_finished = 0;
  bool failed = false;   // a WRITE completed in error
  std::uint64_t nodes_run = 0;
  std::map<std::string, std::uint64_t> skipped;  // by node type ("comm_coll:broadcast" for collectives)
  std::vector<ChakraCollectiveResult> collectives;
  std::vector<ChakraRankResult> ranks;
  std::vector<ChakraSpan> spans;
};

class ChakraReplay final : public EventHandler {
 public:
  // Throws std::invalid_argument for traces that cannot run together
  // (plan_chakra). job: the job's index among the scenario's.
  ChakraReplay(const ChakraSpec& spec, std::uint32_t job, const TransportSpec& transport, Fabric& fabric,
               SimWorld& world);

  bool running() const { return ranks_left_ > 0 && !failed_; }
  // A completion whose wr_id has kChakraWork set.
  void completed(const WorkCompletion& completion, SimTime now);
  void on_event(SimTime now, std::uint32_t tag) override;
  ChakraResult result(SimTime end);

 private:
  enum Resource : std::uint8_t { cpu, gpu_compute, gpu_comm, none };
  struct Rank {
    HostNode* host = nullptr;
    std::vector<std::uint32_t> waiting;  // dependencies left, per node
    std::vector<std::vector<std::uint32_t>> dependents;
    std::vector<SimTime> started, ended;
    std::set<std::uint32_t> ready[3];  // per resource, by file order
    std::deque<std::uint32_t> instant;  // ready nodes that need no resource
    std::uint32_t running[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
    std::size_t left = 0;
    SimTime finished = kSimNever;
    std::uint32_t computing = 0, communicating = 0;
    SimTime since = 0;
    SimTime compute = 0, communication = 0, idle = 0;
    bool waking = false;  // in to_wake_
  };
  struct Running {  // a collective as it runs
    std::unique_ptr<CollectiveProgress> progress;
    std::uint32_t members_done = 0;
    SimTime start = kSimNever, end = kSimNever;
  };
  struct Write {  // a WRITE in flight, by its wr_id's slot (and its immediate)
    bool message = false;
    std::uint32_t collective = 0;              // a collective's slice of a transfer
    CollectiveProgress::TransferId transfer;
    std::uint32_t rank = 0, node = 0;          // a send's
    std::uint32_t to_rank = 0;
    bool sent = false, arrived = false;        // the slot is free again after both
  };
  using Channel = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // source, destination, tag

  Resource resource_of(std::uint32_t rank, std::uint32_t node) const;
  void make_ready(std::uint32_t rank, std::uint32_t node);
  void pump(std::uint32_t rank, SimTime now);
  void drain(SimTime now);
  void start(std::uint32_t rank, std::uint32_t node, Resource resource, SimTime now);
  void finish(std::uint32_t rank, std::uint32_t node, SimTime now);
  void account(Rank& rank, SimTime now);
  void join(std::uint32_t collective, std::uint32_t rank, SimTime now);
  void post_transfer(std::uint32_t collective, const CollectiveProgress::TransferId& id, std::uint64_t offset,
                     std::uint64_t bytes);
  void member_done(std::uint32_t collective, std::uint32_t member);
  void post_write(std::uint32_t from_rank, std::uint32_t to_rank, std::uint32_t channel, std::uint64_t offset,
                  std::uint64_t remote_offset, std::uint64_t bytes, const Write& write);
  void deliver(const Channel& channel, SimTime now);
  void sent(std::uint64_t slot, SimTime now);
  void arrived(std::uint64_t slot, std::uint32_t qpn, SimTime now);
  void release_slot(std::uint64_t slot);

  const ChakraSpec& spec_;
  std::uint64_t job_bits_;
  ChakraPlan plan_;
  SimWorld& world_;
  std::vector<Rank> ranks_;
  std::vector<Running> running_;  // by plan_.collectives' index
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> qpn_;  // (rank, peer, channel) -> QPN
  std::vector<Write> writes_;
  std::vector<std::uint64_t> free_writes_;
  std::map<Channel, std::uint32_t> arrived_;                    // messages not yet received
  std::map<Channel, std::deque<std::uint32_t>> receiving_;      // receive nodes waiting, per channel
  std::set<std::uint32_t> dirty_;  // ranks with ready nodes to start
  std::vector<std::uint32_t> to_wake_;  // ranks whose hosts were given WRITEs since the last drain, in that order
  SimTime now_ = 0;                // of the event being handled (progress callbacks have none)
  bool draining_ = false;
  std::size_t ranks_left_ = 0;
  bool failed_ = false;
  std::uint64_t nodes_run_ = 0;
  std::map<std::string, std::uint64_t> skipped_;
};

}  // namespace uroce::sim
