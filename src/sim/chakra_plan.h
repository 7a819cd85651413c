// What a Chakra replay runs, worked out before the run and checked: which
// nodes of which ranks make up each collective, which sends feed which
// receives, and which pairs of hosts need a connection. Everything a trace
// can get wrong across ranks is found here, with the files and nodes named.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "chakra/trace.h"
#include "collective/schedule.h"
#include "sim/topology.h"
#include "sim/sim_time.h"

namespace uroce::sim {

// A scenario's [chakra] table: the traces of every rank, read when the
// scenario loads, and how they map onto the fabric.
struct ChakraSpec {
  std::string name = "chakra";         // the job's, where a scenario has several
  std::string traces;                  // DIR/PREFIX, as the scenario names it
  std::vector<chakra::Trace> ranks;    // PREFIX.<rank>.et, in rank order
  std::vector<std::uint32_t> hosts;    // rank r runs on hosts[r]
  std::map<std::string, std::vector<std::uint32_t>> groups;  // a process group's ranks, by pg_name
  std::optional<collective::Algorithm> algorithm;  // each operation's default when absent
  // Each collective's algorithm chosen by predicted time, as NCCL chooses
  // (sim/collective_choice.h); `algorithm` is then ignored.
  bool choose_algorithm = false;
  std::uint32_t slices = 1;  // each transfer cut into this many pipelined slices (sim/collective_progress.h)
  // Connections per pair of ranks, as NCCL's channels: slice j goes on
  // channel j mod channels, each its own QP (and so its own ECMP path).
  std::uint32_t channels = 1;
  // Whether control dependencies hold a node back too. Off by default, as in
  // Chakra's reference feeder and ASTRA-sim: in PyTorch-converted traces
  // they link an op and its kernels both ways round (Chakra's own test trace
  // has 2,283 nodes on such cycles), while data dependencies order the step.
  bool control_dependencies = false;
  SimTime start = 0;
};

inline constexpr std::uint32_t kNoCollective = UINT32_MAX;

// One collective as every member's node joins it. Members are in the
// group's order (the ring's).
struct PlannedCollective {
  std::string group;  // pg_name; empty: every rank
  std::uint32_t index = 0;  // the group's index-th collective
  chakra::CommType type = chakra::CommType::all_reduce;
  std::uint64_t bytes = 0;  // nccl-tests' size, as the schedule takes it (see plan_chakra)
  std::vector<std::uint32_t> ranks;
  std::vector<std::uint32_t> nodes;  // each member's node index in its trace
  // One schedule, or one per channel where the members are whole GPU
  // servers (NCCL's rings and trees, collective/rank_layout.h); none for a
  // barrier or a group of one.
  std::vector<collective::Schedule> schedules;
};

struct ChakraPlan {
  std::vector<PlannedCollective> collectives;
  // collective_of[rank][node]: the collective the node joins (kNoCollective:
  // not a collective uroce runs).
  std::vector<std::vector<std::uint32_t>> collective_of;
  // Rank pairs (lower first) that exchange data and need an RC connection.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
};

// The schedule (collective/schedule.h) a Chakra collective type runs; none
// for a barrier and the types uroce does not run.
std::optional<collective::Operation> operation_of(chakra::CommType type);
// Whether uroce runs collectives of this type (the others are skipped and counted).
bool replays(chakra::CommType type);

// Matches collectives: the k-th collective node of group g (in file order)
// on each member is the group's k-th collective; every member must agree on
// its type and size. Sizes are read as ASTRA-sim reads them: comm_size is
// the all-reduce's buffer, the reduce-scatter's input, the all-to-all's
// send buffer, and what each rank contributes to an all-gather; a planned
// collective's bytes are nccl-tests' (collective/schedule.h: the
// all-gather's output, comm_size x ranks). A size smaller than the group
// is raised to one byte per rank. Sends and receives
// match by (source, destination, tag) in order; each must have its
// counterpart. On GPU servers (the topology's), a group of whole servers
// runs NCCL's rings and trees, one per channel. Throws
// std::invalid_argument naming the trace and node.
ChakraPlan plan_chakra(const ChakraSpec& spec, const Topology& topology);

}  // namespace uroce::sim
