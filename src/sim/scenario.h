// A simulation scenario: the fabric, its switches, the transport settings of
// every host, and the flows to run. Scenario files (TOML) load into this;
// tests build it directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective/schedule.h"
#include "sim/chakra_plan.h"
#include "sim/switch_config.h"
#include "sim/topology.h"
#include "uroce/engine.h"

namespace uroce::sim {

struct FlowSpec {
  FlowSpec() = default;
  FlowSpec(std::uint32_t from, std::uint32_t to, std::uint64_t size, SimTime at,
           std::optional<std::uint8_t> traffic_class = std::nullopt)
      : src(from), dst(to), bytes(size), start(at), dscp(traffic_class) {}

  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  std::uint64_t bytes = 0;
  SimTime start = 0;
  std::optional<std::uint8_t> dscp;  // instead of TransportSpec::data_dscp
};

// A collective (collective/schedule.h): an all-reduce, all-gather,
// reduce-scatter or all-to-all among `hosts` (rank order), by ring, recursive
// halving-doubling, or direct or pairwise exchange. Every transfer of a step
// is one RDMA WRITE (one per slice, in slices pipelined slices; see
// sim/collective_progress.h). A member starts a step once its own previous
// step's WRITEs and those sent to it in that step have completed, and
// after step_compute (plus straggler_delay on the straggler). The next iteration
// starts iteration_gap after every member has finished its last step (a
// training step's compute between two collectives).
struct CollectiveSpec {
  std::vector<std::uint32_t> hosts;  // rank order (the ring's, for a ring)
  std::uint64_t bytes = 0;           // the collective's size, as nccl-tests counts it
  std::uint32_t iterations = 1;
  SimTime start = 0;
  SimTime step_compute = 0;
  std::optional<std::uint32_t> straggler;  // a host of the collective
  SimTime straggler_delay = 0;
  collective::Operation operation = collective::Operation::all_reduce;
  collective::Algorithm algorithm = collective::Algorithm::ring;
  SimTime iteration_gap = 0;
  std::uint32_t slices = 1;    // each transfer in this many pipelined slices (sim/collective_progress.h)
  std::uint32_t channels = 1;  // QPs per pair of members; slice j on channel j mod channels
  bool algorithm_chosen = false;  // `algorithm` was chosen by predicted time (sim/collective_choice.h)
};

// A failure at `at` that recovers at `recover` (kSimNever: never): the link
// between a and b (both directions, every parallel link between them), or,
// without b, switch a and every link it has. Where failures overlap, the
// latest event wins (a switch that recovers brings all its links up).
struct Failure {
  NodeRef a;
  std::optional<NodeRef> b;
  SimTime at = 0;
  SimTime recover = kSimNever;
};

// How every flow's QPs are set up.
struct TransportSpec {
  PathMtu mtu = PathMtu::mtu4096;
  LossRecovery recovery = LossRecovery::go_back_n;
  std::uint8_t timeout = 10;    // local ACK timeout exponent: 4.096 us << 10 = 4.2 ms
  std::uint8_t retry_cnt = 7;
  TimeNs tail_timeout_ns = 0;  // QpInitAttr::tail_timeout_ns (IRN's RTO_low); 0: off
  std::uint32_t tail_timeout_packets = 3;
  TimeNs loss_probe_ns = 0;  // QpInitAttr::loss_probe_ns (a tail loss probe); 0: off
  std::uint8_t data_dscp = 26;  // priority 3 (DSCP >> 3); CNPs use CongestionConfig::cnp_dscp
  MultipathConfig multipath;    // QpInitAttr::multipath: MRC-style spraying; off by default
};

struct Scenario {
  std::string name = "scenario";
  std::uint64_t seed = 1;
  SimTime time_limit = 100'000 * kPicosecondsPerUs;  // stop here even if flows are unfinished
  Topology topology;
  SwitchConfig switches;
  TransportSpec transport;
  EngineConfig engine;  // congestion control and window; the address and seed are per host
  std::vector<FlowSpec> flows;
  std::optional<CollectiveSpec> collective;
  // Jobs replaying Chakra traces (sim/chakra_replay.h), sharing the fabric;
  // listed: they came as [[chakra]], and summary.json lists them.
  std::vector<ChakraSpec> chakra;
  bool chakra_listed = false;
  std::vector<Failure> failures;
  // How long after a link fails or recovers every switch's routes are
  // recomputed around it (the routing protocol's convergence); until then
  // packets routed into a failed link are lost.
  SimTime reconverge = 1'000 * kPicosecondsPerUs;
  // PFC deadlock checks, this often (0: never); a run stops at a deadlock.
  SimTime deadlock_check = 200 * kPicosecondsPerUs;
  // Time series: a sample this often (0: none); each flow's delivery is
  // sampled too when there are at most series_flow_limit flows.
  SimTime sample_interval = 10 * kPicosecondsPerUs;
  std::uint32_t series_flow_limit = 64;
  // Link directions to record as pcap files (capture_<from>-<to>.pcap), up
  // to capture_frames frames each.
  std::vector<std::pair<NodeRef, NodeRef>> captures;
  std::uint64_t capture_frames = 100'000;
  // Threads to run the fabric's partitions on (see PartitionedRun): the
  // results are the same for any number. A collective or a Chakra replay
  // runs on one.
  std::uint32_t threads = 1;
};

}  // namespace uroce::sim
