// Replays Chakra traces on the fabric (sim/chakra_plan.h says what runs).
// Each rank runs a node once all its dependencies have finished, on one of
// three resources as ASTRA-sim models a GPU server: the CPU (nodes marked
// is_cpu_op), the GPU's compute (COMP nodes: their duration_micros) and
// the GPU's communication (collectives and sends, one at a time; receives
// wait alongside). Among ready nodes, the earliest in the file goes first.
// A collective is the schedule of collective/schedule.h, in the spec's
// slices (sim/collective_progress.h), each transfer's slice an RDMA WRITE
// with immediate; a member starts it when its node starts and its node
// ends when its own part is done. A sender does not wait for its receiver
// to join (NCCL's connections have buffers posted from the start): what
// lands early counts once the receiver joins. A send is one WRITE with
// immediate to its peer: it ends when the WRITE completes, the matching
// receive when the WRITE lands. A barrier lets its members go a barrier
// delay (the shortest link delay) after the last arrives. Other nodes
// (metadata, memory, collectives uroce does not run) end at once and are
// counted.
//
// Ranks may sit in different partitions (sim/partition.h): a rank's work
// runs on its host's partition and touches only its own state; what a
// WRITE was for reaches its receiver through its QP's queue of WRITEs in
// flight, and barriers are released between windows, so the results are
// bit for bit the same on any number of threads. Over ranks (processes,
// sim/rank_group.h) each process runs the trace ranks on its hosts: what a
// WRITE to another process's rank was for is sent there between windows
// (it cannot land sooner: a window is the shortest link delay), barriers
// and the end are summed over the processes, and the result is gathered
// (sim/chakra_replay_ranks.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/chakra_plan.h"
#include "sim/collective_progress.h"
#include "sim/fabric.h"
#include "sim/rank_group.h"
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

class ChakraReplay {
 public:
  // Throws std::invalid_argument for traces that cannot run together
  // (plan_chakra). job: the job's index among the scenario's. barrier: how
  // long a barrier takes after its last member arrives (at least the
  // partitions' window). Over processes, collective (the QPs are connected
  // across them).
  ChakraReplay(const ChakraSpec& spec, std::uint32_t job, const TransportSpec& transport, Fabric& fabric,
               RankGroup& processes, SimTime barrier);

  // Over processes: this one runs the trace ranks whose hosts process_of
  // gives its number; between_windows and result become collective.
  void spread_over(RankGroup& processes, const std::function<std::uint32_t(std::uint32_t host)>& process_of);

  // Read between windows only (over processes, after between_windows).
  bool running() const;
  // A completion on `host` whose wr_id has kChakraWork set, in that host's partition.
  void completed(std::uint32_t host, const WorkCompletion& completion, SimTime now);
  // Between windows: releases the barriers every member reached (over
  // processes, first sends what WRITEs to other processes were for).
  void between_windows();
  ChakraResult result(SimTime end);

 private:
  enum Resource : std::uint8_t { cpu, gpu_compute, gpu_comm, none };
  static constexpr std::uint32_t kStartTag = 3;        // a rank's event tags: a resource's node ended (0..2),
  static constexpr std::uint32_t kFirstBarrierTag = 4;  // the replay starts, or barrier c is over (4 + c)
  struct Write {  // a WRITE in flight: by its wr_id's slot at the sender, in its QP's queue for the receiver
    bool message = false;
    std::uint32_t collective = 0;              // a collective's slice of a transfer
    CollectiveProgress::TransferId transfer;
    std::uint32_t rank = 0, node = 0;          // a send's
  };
  // A WRITE to a trace rank another process runs: what it was for, on its
  // way to the receiver's queue (receiving_on_'s key).
  struct Shipped {
    std::uint64_t arrivals = 0;
    std::uint32_t to_rank = 0;
    Write write;
  };
  using Channel = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // source, destination, tag
  // A rank: its nodes' state, touched only on its host's partition, on
  // events of its own.
  struct Rank final : public EventHandler {
    ChakraReplay* replay = nullptr;
    std::uint32_t index = 0;
    HostNode* host = nullptr;   // where this process holds it
    SimWorld* world = nullptr;  // its host's partition's
    std::uint32_t rkey = 0;     // its host's region's
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
    SimTime now = 0;      // of the event or completion being handled for it
    bool posted = false;  // WRITEs were posted since its host last woke
    bool failed = false;  // a WRITE of its completed in error
    std::uint64_t nodes_run = 0;
    std::map<std::string, std::uint64_t> skipped;  // by node type
    std::vector<Write> writes;  // in flight, by slot
    std::vector<std::uint64_t> free_writes;
    std::map<Channel, std::uint32_t> arrived;                // messages to it not yet received
    std::map<Channel, std::deque<std::uint32_t>> receiving;  // its receive nodes waiting, per channel
    std::vector<Shipped> shipping;  // since the last window's end, to other processes
    bool here = true;               // this process runs it
    void on_event(SimTime now, std::uint32_t tag) override;
  };
  struct Running {  // a collective as it runs
    std::unique_ptr<CollectiveProgress> progress;
    std::vector<SimTime> joined, done;  // per member (kSimNever: not yet)
  };
  // The WRITEs on one QP in one direction, in the order they were posted
  // (and, RC being in order, land): the sender appends, the receiver takes
  // the oldest when a WRITE with immediate lands; a lock, as they may be
  // in different partitions.
  struct InFlight {
    std::mutex lock;
    std::deque<Write> writes;
  };

  Resource resource_of(std::uint32_t rank, std::uint32_t node) const;
  void make_ready(std::uint32_t rank, std::uint32_t node);
  void pump(std::uint32_t rank);
  void settle(Rank& rank);
  void start(std::uint32_t rank, std::uint32_t node, Resource resource);
  void finish(std::uint32_t rank, std::uint32_t node);
  void account(Rank& rank, SimTime now);
  void join(std::uint32_t collective, std::uint32_t rank);
  std::uint32_t member_of(std::uint32_t collective, std::uint32_t rank) const;
  void post_transfer(std::uint32_t collective, const CollectiveProgress::TransferId& id, std::uint64_t offset,
                     std::uint64_t bytes);
  void member_done(std::uint32_t collective, std::uint32_t member);
  void post_write(std::uint32_t from_rank, std::uint32_t to_rank, std::uint32_t channel, std::uint64_t offset,
                  std::uint64_t remote_offset, std::uint64_t bytes, const Write& write);
  void deliver(Rank& rank, const Channel& channel);
  void sent(Rank& rank, std::uint64_t slot);
  void arrived(Rank& rank, std::uint32_t qpn);
  // Over processes, between windows (sim/chakra_replay_ranks.cc).
  void ship_writes();
  void release_barriers_everywhere();
  // One record per trace rank this process runs, the spans included.
  Bytes rank_records(SimTime last);
  void add_rank_records(const Bytes& records, ChakraResult& out) const;
  const ChakraSpec& spec_;
  std::uint64_t job_bits_;
  ChakraPlan plan_;
  SimTime barrier_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unordered_map<std::uint32_t, std::uint32_t> rank_of_host_;
  std::vector<Running> running_;  // by plan_.collectives' index
  std::vector<std::atomic<std::uint32_t>> barrier_arrivals_;  // by collective; barriers only
  std::vector<std::uint32_t> barriers_waiting_;               // not yet released
  struct Connection {  // one direction of a pair's QPs
    std::uint32_t qpn = 0;  // the sender's
    InFlight* in_flight = nullptr;
    std::uint64_t arrivals = 0;  // receiving_on_'s key for it
  };
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, Connection> sending_;  // (rank, peer, channel)
  std::unordered_map<std::uint64_t, InFlight*> receiving_on_;  // host << 32 | the receiver's QPN -> its arrivals
  std::vector<std::unique_ptr<InFlight>> in_flight_;
  SoloRank solo_;
  RankGroup* processes_ = &solo_;
  std::vector<std::uint32_t> process_of_rank_;  // over processes: by trace rank
  bool running_everywhere_ = true;              // over processes: as the last between_windows summed
};

}  // namespace uroce::sim
