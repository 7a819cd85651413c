// Runs a scenario to completion (every flow finished) or to its time limit
// and gathers what summary.json reports. Deterministic: the same scenario and
// seed give the same result, bit for bit; only wall_s differs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/chakra_replay.h"
#include "sim/deadlock_detector.h"
#include "sim/link_load.h"
#include "sim/rank_group.h"
#include "sim/scenario.h"
#include "sim/time_series.h"
#include "sim/world.h"

namespace uroce::sim {

struct FlowResult {
  std::uint32_t id = 0;
  FlowSpec spec;
  SimTime finish = kSimNever;  // when the sender's last WRITE completed
  bool finished() const { return finish != kSimNever; }
};

struct SimResult {
  SimTime sim_time = 0;
  double wall_s = 0;
  std::uint64_t events = 0;
  std::uint64_t seed = 0;
  std::vector<FlowResult> flows;
  std::uint32_t failed_flows = 0;  // completed with an error (retries exhausted...)
  FabricCounters fabric;
  std::uint64_t retransmitted_packets = 0;
  // Multipath QPs (EngineCounters::paths_*), summed over hosts.
  std::uint64_t paths_lost = 0, paths_retired = 0, paths_probes = 0, paths_restored = 0;
  std::uint64_t placed_out_of_order = 0;  // multipath direct placement: WRITE packets placed ahead of a gap
  std::uint64_t cnps = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t peak_switch_buffer_bytes = 0;
  std::uint32_t hosts = 0;
  std::uint32_t switches = 0;
  std::uint32_t partitions = 1;  // threads the run used, over every rank (not a result: any number gives the same)
  std::uint32_t ranks = 1;       // processes the run used (not a result either)
  std::optional<Deadlock> deadlock;  // the run stopped here
  std::vector<SimTime> collective_iterations;  // each finished iteration's duration
  bool collective_failed = false;
  SimTime collective_finished_at = 0;  // when the last finished iteration ended
  std::vector<ChakraResult> chakra;  // each Chakra job's
  std::vector<LinkLoadSeries> link_load;  // per link direction, per sample_interval (Chakra replays only)
  SimTime sample_interval = 0;
  std::vector<FabricSample> samples;
  std::vector<std::vector<std::uint64_t>> flow_delivered;  // [sample][flow], when flows were sampled
};

// Throws std::invalid_argument when the scenario is inconsistent
// (run_simulation checks it too; a caller on ranks checks first: every
// rank finds the same, and says so without ending the others).
void check_scenario(const Scenario& scenario);

// progress(fraction of sim time or flows done, whichever is further) is
// called now and then; it may be empty. The scenario's captures are written
// into capture_dir (none when it is empty). Throws std::invalid_argument
// when the scenario is inconsistent (a flow to a host that does not exist, a
// capture of a link that does not exist...), std::runtime_error when a
// capture file cannot be created.
//
// With ranks (MPI processes), every rank calls it with the same scenario:
// each runs scenario.threads partitions of the fabric and returns the whole
// result; rank 0 ends with every capture in capture_dir (the rank that
// sends on a captured link hands it over, sim/capture_handoff.h).
SimResult run_simulation(const Scenario& scenario, const std::function<void(double)>& progress = {},
                         const std::string& capture_dir = {}, RankGroup* ranks = nullptr);

// capture_<from>-<to>.pcap
std::string capture_file_name(NodeRef from, NodeRef to);

}  // namespace uroce::sim
