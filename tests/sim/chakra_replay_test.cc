// Chakra replays on small fabrics, against what can be worked out by hand:
// ASTRA-sim's single-collective traces take exactly what the same
// collective workload takes and stay within the bandwidth bound; compute
// chains add up; a GPU runs one kernel at a time beside the CPU; a message
// takes its serialization time; a barrier releases everyone a link delay after the last
// arrival; groups run apart; unknown nodes are skipped and counted; traces
// that disagree are refused with the file and node named; and traces that
// wait on each other end at the time limit, not in a hang.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <stdexcept>

#include "chakra/example_traces.h"
#include "sim/simulation.h"
#include "tests/sim/example_scenario.h"

namespace uroce::sim {
namespace {

constexpr SimTime kUs = kPicosecondsPerUs;
constexpr LinkSpec k100G{100'000'000'000, 1 * kUs};
const std::string kGolden = UROCE_ASTRA_SIM_TRACES;

chakra::TraceNode compute(std::uint64_t id, std::uint64_t us, std::vector<std::uint64_t> deps = {},
                          bool cpu = false) {
  chakra::TraceNode node;
  node.id = id;
  node.name = "compute" + std::to_string(id);
  node.type = chakra::kCompNode;
  node.duration_us = us;
  node.deps = std::move(deps);
  node.is_cpu_op = cpu;
  return node;
}

chakra::TraceNode collective(std::uint64_t id, chakra::CommType type, std::uint64_t bytes,
                             std::vector<std::uint64_t> deps = {}, std::string group = "") {
  chakra::TraceNode node;
  node.id = id;
  node.name = "collective" + std::to_string(id);
  node.type = chakra::kCommCollNode;
  node.comm_type = type;
  node.comm_size = bytes;
  node.deps = std::move(deps);
  node.pg_name = std::move(group);
  return node;
}

chakra::TraceNode message(std::uint64_t id, bool send, std::uint32_t peer, std::uint64_t bytes,
                          std::vector<std::uint64_t> deps = {}) {
  chakra::TraceNode node;
  node.id = id;
  node.name = send ? "send" : "receive";
  node.type = send ? chakra::kCommSendNode : chakra::kCommRecvNode;
  node.comm_size = bytes;
  (send ? node.comm_dst : node.comm_src) = peer;
  node.deps = std::move(deps);
  return node;
}

// A replay of per-rank node lists on a star of 100 Gb/s links, rank r on host r.
Scenario replay(std::vector<std::vector<chakra::TraceNode>> ranks, SimTime time_limit = 100'000 * kUs) {
  Scenario scenario;
  scenario.time_limit = time_limit;
  scenario.topology = star(static_cast<std::uint32_t>(ranks.size()), k100G);
  ChakraSpec spec;
  spec.traces = "test";
  for (std::uint32_t r = 0; r < ranks.size(); ++r) {
    chakra::Trace trace;
    trace.nodes = std::move(ranks[r]);
    spec.ranks.push_back(std::move(trace));
    spec.hosts.push_back(r);
  }
  scenario.chakra.push_back(std::move(spec));
  return scenario;
}

const ChakraResult& chakra_of(const SimResult& result) {
  if (result.chakra.size() != 1) throw std::runtime_error("not one replay's result");
  return result.chakra[0];
}

std::string plan_error(const Scenario& scenario) {
  try {
    run_simulation(scenario);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(accepted)";
}

// ASTRA-sim's trace of one collective, and the same collective as a
// scenario workload, on the same star.
struct GoldenCase {
  const char* op;
  collective::Operation operation;
  std::uint32_t npus;
};

class AstraSimMicrobenchmark : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(AstraSimMicrobenchmark, TakesWhatTheSameCollectiveWorkloadTakesWithinTheBandwidthBound) {
  GoldenCase c = GetParam();
  std::string prefix = kGolden + "/" + c.op + "/" + std::to_string(c.npus) + "npus_1MB/" + c.op;
  Scenario traced;
  traced.topology = star(c.npus, k100G);
  ChakraSpec spec;
  spec.traces = prefix;
  for (std::uint32_t r = 0; r < c.npus; ++r) {
    auto trace = chakra::read_trace(prefix + "." + std::to_string(r) + ".et");
    ASSERT_TRUE(trace) << trace.error();
    spec.ranks.push_back(std::move(*trace));
    spec.hosts.push_back(r);
  }
  traced.chakra.push_back(std::move(spec));
  SimResult replayed = run_simulation(traced);
  const ChakraResult& result = chakra_of(replayed);
  ASSERT_EQ(result.ranks_finished, c.npus);
  ASSERT_EQ(result.collectives.size(), 1u);

  Scenario workload;
  workload.topology = star(c.npus, k100G);
  CollectiveSpec collective;
  collective.operation = c.operation;
  collective.algorithm = collective::default_algorithm(c.operation);
  // ASTRA-sim's all-gather size is each rank's part; nccl-tests' is the output.
  collective.bytes = (1u << 20) * (c.operation == collective::Operation::all_gather ? c.npus : 1);
  for (std::uint32_t r = 0; r < c.npus; ++r) collective.hosts.push_back(r);
  workload.collective = collective;
  SimResult direct = run_simulation(workload);
  ASSERT_EQ(direct.collective_iterations.size(), 1u);
  // The same WRITEs on the same links, posted in the same order.
  EXPECT_EQ(result.makespan, direct.collective_iterations[0]);

  // Each rank must move bus_factor x the collective's size through its
  // 100 Gb/s link (nccl-tests' busbw): the makespan is at least that, and
  // with headers (about 2%) and a few microseconds per step not much more.
  double bound_us = collective::bus_factor(c.operation, c.npus) * static_cast<double>(collective.bytes) / 12.5e9 * 1e6;
  double makespan_us = static_cast<double>(result.makespan) / kUs;
  EXPECT_GT(makespan_us, bound_us);
  EXPECT_LT(makespan_us, bound_us * 1.1 + 5.0 * 2 * c.npus);
}

INSTANTIATE_TEST_SUITE_P(
    Golden, AstraSimMicrobenchmark,
    ::testing::Values(GoldenCase{"all_reduce", collective::Operation::all_reduce, 4},
                      GoldenCase{"all_reduce", collective::Operation::all_reduce, 8},
                      GoldenCase{"all_gather", collective::Operation::all_gather, 4},
                      GoldenCase{"all_gather", collective::Operation::all_gather, 8},
                      GoldenCase{"reduce_scatter", collective::Operation::reduce_scatter, 8},
                      GoldenCase{"all_to_all", collective::Operation::alltoall, 4},
                      GoldenCase{"all_to_all", collective::Operation::alltoall, 8},
                      GoldenCase{"all_reduce", collective::Operation::all_reduce, 16},
                      GoldenCase{"all_to_all", collective::Operation::alltoall, 16}),
    [](const ::testing::TestParamInfo<GoldenCase>& param) {
      return std::string(param.param.op) + "_" + std::to_string(param.param.npus);
    });

TEST(ChakraReplay, SlicedRingStepsPipelineAndApproachTheBandwidthBound) {
  std::string prefix = kGolden + "/all_reduce/8npus_1MB/all_reduce";
  auto run_with = [&](std::uint32_t slices) {
    Scenario scenario = replay({});
    scenario.topology = star(8, k100G);
    scenario.chakra[0].traces = prefix;
    scenario.chakra[0].slices = slices;
    for (std::uint32_t r = 0; r < 8; ++r) {
      auto trace = chakra::read_trace(prefix + "." + std::to_string(r) + ".et");
      EXPECT_TRUE(trace);
      scenario.chakra[0].ranks.push_back(std::move(*trace));
      scenario.chakra[0].hosts.push_back(r);
    }
    return chakra_of(run_simulation(scenario)).makespan;
  };
  SimTime whole = run_with(1);
  SimTime sliced = run_with(4);
  // One slice: each of the 14 ring steps waits for its WRITE's ACK (a round
  // trip of about 4 us here). Four: the next step's first slice goes while
  // the last is on the wire, and what is left above the bound (146.8 us)
  // is mostly the headers' 2%.
  EXPECT_GT(whole, 200 * kUs);
  EXPECT_LT(sliced, 160 * kUs);
  EXPECT_GT(sliced, 146 * kUs);
}

TEST(ChakraReplay, AstraSimsCustomRingRunsItsSendsReceivesAndReductions) {
  std::string prefix = kGolden + "/custom_ring_allreduce_8npus_1MB/custom_allreduce";
  Scenario scenario = replay({});
  scenario.topology = star(8, k100G);
  scenario.chakra[0].traces = prefix;
  for (std::uint32_t r = 0; r < 8; ++r) {
    auto trace = chakra::read_trace(prefix + "." + std::to_string(r) + ".et");
    ASSERT_TRUE(trace) << trace.error();
    scenario.chakra[0].ranks.push_back(std::move(*trace));
    scenario.chakra[0].hosts.push_back(r);
  }
  const ChakraResult result = chakra_of(run_simulation(scenario));
  EXPECT_EQ(result.ranks_finished, 8u);
  EXPECT_EQ(result.nodes_run, 8u * 35);
  // 14 sends of 128 KiB one after another, each 10.5 us on the wire, and 7
  // reductions of 7 us in the chain: at least 245 us.
  EXPECT_GT(result.makespan, 245 * kUs);
  EXPECT_LT(result.makespan, 400 * kUs);
  for (const ChakraRankResult& rank : result.ranks) EXPECT_EQ(rank.compute, 49 * kUs);
}

// Chakra's own PyTorch-converted trace (tests/sim/chakra_pytorch_trace).
chakra::Trace pytorch_trace() {
  auto trace = chakra::read_trace(std::string(UROCE_PYTORCH_TRACE) + "/chakra.0.et");
  if (!trace) throw std::runtime_error(trace.error());
  return *trace;
}

TEST(ChakraReplay, APyTorchTraceReplaysWithinItsComputeBound) {
  chakra::Trace trace = pytorch_trace();
  EXPECT_EQ(trace.nodes.size(), 3664u);
  EXPECT_EQ(trace.missing_dependencies, 1277u);  // call-tree parents the converter left out
  SimTime gpu = 0, cpu = 0;
  for (const chakra::TraceNode& node : trace.nodes) {
    if (node.type != chakra::kCompNode) continue;
    (node.is_cpu_op ? cpu : gpu) += static_cast<SimTime>(node.duration_us) * kUs;
  }
  Scenario scenario = replay({trace.nodes});
  scenario.chakra[0].ranks[0] = trace;
  scenario.time_limit = 10'000'000 * kUs;
  const ChakraResult result = chakra_of(run_simulation(scenario));
  ASSERT_EQ(result.ranks_finished, 1u);
  // The GPU runs one kernel at a time, so the step takes at least the sum
  // of the GPU kernels (292.8 ms), and the CPU's ops (50.9 ms) run beside.
  EXPECT_EQ(gpu, 292'828 * kUs);
  EXPECT_GE(result.makespan, gpu);
  EXPECT_LT(result.makespan, gpu + cpu);
  EXPECT_EQ(result.ranks[0].compute, result.makespan);
  EXPECT_EQ(result.skipped.at("comm_coll:untyped"), 14u);  // c10d's CPU side; the kernels carry the collective
  EXPECT_EQ(result.skipped.at("comm_coll:broadcast"), 2u);
  EXPECT_EQ(result.collectives.size(), 5u);  // all-reduces of 8 to 31 MB

  // Its control dependencies run both ways between an op and its kernel:
  // enforcing them is refused, with the node named.
  scenario.chakra[0].control_dependencies = true;
  std::string error = plan_error(scenario);
  EXPECT_NE(error.find("id 3317, \"aten::mul(0)\"): its control and data dependencies form a cycle"), std::string::npos)
      << error;
}

TEST(ChakraReplay, APyTorchTraceOnFourRanksAllReducesItsGradientsOverTheFabric) {
  chakra::Trace trace = pytorch_trace();
  Scenario scenario = replay({trace.nodes, trace.nodes, trace.nodes, trace.nodes});
  for (chakra::Trace& rank : scenario.chakra[0].ranks) rank = trace;
  scenario.time_limit = 10'000'000 * kUs;
  const ChakraResult result = chakra_of(run_simulation(scenario));
  ASSERT_EQ(result.ranks_finished, 4u);
  ASSERT_EQ(result.collectives.size(), 5u);
  std::uint64_t bytes = 0;
  for (const ChakraCollectiveResult& c : result.collectives) {
    EXPECT_EQ(c.ranks, 4u);
    ASSERT_NE(c.end, kSimNever);
    bytes += c.bytes;
    // A ring all-reduce moves 1.5 x its size through each rank's 100 Gb/s link.
    EXPECT_GE(static_cast<double>(c.end - c.start), 1.5 * static_cast<double>(c.bytes) / 12.5e9 * 1e12);
  }
  EXPECT_EQ(bytes, 102'228'128u);
  // About 12 ms of all-reduce in all, run beside 293 ms of GPU kernels: all
  // of it hidden, the step as long as its compute.
  EXPECT_GE(result.makespan, 292'828 * kUs);
  for (const ChakraRankResult& rank : result.ranks) {
    EXPECT_EQ(rank.compute + rank.communication + rank.idle, result.makespan);
    EXPECT_EQ(rank.compute, result.makespan);
  }
}

TEST(ChakraReplay, AComputeChainTakesTheSumOfItsDurations) {
  const ChakraResult result =
      chakra_of(run_simulation(replay({{compute(1, 100), compute(2, 200, {1}), compute(3, 50, {2})}})));
  EXPECT_EQ(result.makespan, 350 * kUs);
  EXPECT_EQ(result.ranks[0].compute, 350 * kUs);
  EXPECT_EQ(result.ranks[0].idle, 0);
  EXPECT_EQ(result.nodes_run, 3u);
}

TEST(ChakraReplay, TheGpuRunsOneKernelAtATimeBesideTheCpu) {
  // Two independent GPU kernels queue; a CPU op runs beside them.
  const ChakraResult result =
      chakra_of(run_simulation(replay({{compute(1, 100), compute(2, 100), compute(3, 150, {}, true)}})));
  EXPECT_EQ(result.makespan, 200 * kUs);
  EXPECT_EQ(result.ranks[0].compute, 200 * kUs);
  ASSERT_EQ(result.spans.size(), 3u);
  EXPECT_EQ(result.spans[0].start, 0);
  EXPECT_EQ(result.spans[1].start, 100 * kUs);  // the second kernel waited
  EXPECT_EQ(result.spans[2].start, 0);          // the CPU op did not
}

TEST(ChakraReplay, AMessageTakesItsSerializationAndAReceiveWaitsForIt) {
  // Rank 1's receive is ready at once; rank 0 computes 100 us, then sends 1 MiB.
  const ChakraResult result = chakra_of(run_simulation(
      replay({{compute(1, 100), message(2, true, 1, 1 << 20, {1})}, {message(1, false, 0, 1 << 20)}})));
  ASSERT_EQ(result.ranks_finished, 2u);
  // 1 MiB is 83.9 us at 100 Gb/s; headers add about 2%, two links 2 us and
  // the ACK's way back as much.
  EXPECT_GT(result.ranks[1].finished, (100 + 84) * kUs);
  EXPECT_LT(result.ranks[1].finished, (100 + 95) * kUs);
  EXPECT_EQ(result.ranks[1].communication, result.ranks[1].finished);  // waiting on the receive throughout
  EXPECT_EQ(result.ranks[0].compute, 100 * kUs);
}

TEST(ChakraReplay, EachLinksLoadIsCountedBesideACaptureOfIt) {
  Scenario scenario =
      replay({{compute(1, 100), message(2, true, 1, 1 << 20, {1})}, {message(1, false, 0, 1 << 20)}});
  scenario.captures.push_back({NodeRef{true, 0}, NodeRef{false, 0}});
  std::string dir = ::testing::TempDir();
  SimResult run = run_simulation(scenario, {}, dir);
  ASSERT_EQ(run.chakra[0].ranks_finished, 2u);
  // A star of two hosts: four link directions, each counted by 10 us.
  ASSERT_EQ(run.link_load.size(), 4u);
  std::uint64_t sent = 0;
  for (const LinkLoadSeries& link : run.link_load) {
    if (link.from == NodeRef{true, 0} && link.to == NodeRef{false, 0}) {
      for (std::uint64_t bytes : link.bytes) sent += bytes;
      EXPECT_EQ(link.rate_bps, 100'000'000'000u);
    }
  }
  // 256 packets of 4 KiB and their headers, nothing before the send at 100 us.
  EXPECT_GT(sent, 1u << 20);
  EXPECT_LT(sent, (1u << 20) * 21 / 20);
  // The capture of the same link, tapped first, still has its frames (the
  // 1 MiB payload among them).
  std::ifstream capture(dir + "/" + capture_file_name({true, 0}, {false, 0}), std::ios::binary | std::ios::ate);
  EXPECT_GT(static_cast<std::uint64_t>(capture.tellg()), 1u << 20);
}

// The barrier takes the shortest link delay after the last rank arrives
// (the others learn of it), on any number of threads.
TEST(ChakraReplay, ABarrierReleasesEveryRankWhenTheLastArrives) {
  std::vector<std::vector<chakra::TraceNode>> ranks;
  for (std::uint64_t r = 0; r < 4; ++r) {
    ranks.push_back({compute(1, 100 * r + 1), collective(2, chakra::CommType::barrier, 0, {1}), compute(3, 10, {2})});
  }
  Scenario scenario = replay(ranks);
  SimTime barrier = scenario.topology.edges.front().link.propagation;
  ASSERT_GT(barrier, 0);
  for (std::uint32_t threads : {1u, 2u}) {
    scenario.threads = threads;
    const ChakraResult result = chakra_of(run_simulation(scenario));
    for (const ChakraRankResult& rank : result.ranks) EXPECT_EQ(rank.finished, 311 * kUs + barrier);
    EXPECT_EQ(result.ranks[0].communication, 300 * kUs + barrier);  // rank 0 waited at the barrier
    ASSERT_EQ(result.collectives.size(), 1u);
    EXPECT_EQ(result.collectives[0].end, 301 * kUs + barrier);
  }
}

TEST(ChakraReplay, ProcessGroupsRunTheirOwnCollectives) {
  std::vector<std::vector<chakra::TraceNode>> ranks;
  for (std::uint32_t r = 0; r < 4; ++r) {
    ranks.push_back({collective(1, chakra::CommType::all_reduce, 1 << 20, {}, r < 2 ? "left" : "right"),
                     collective(2, chakra::CommType::all_reduce, 1 << 20, {1})});
  }
  Scenario scenario = replay(ranks);
  scenario.chakra[0].groups = {{"left", {0, 1}}, {"right", {2, 3}}};
  const ChakraResult result = chakra_of(run_simulation(scenario));
  ASSERT_EQ(result.ranks_finished, 4u);
  ASSERT_EQ(result.collectives.size(), 3u);
  std::map<std::string, ChakraCollectiveResult> by_group;
  for (const ChakraCollectiveResult& c : result.collectives) by_group[c.group] = c;
  EXPECT_EQ(by_group["left"].ranks, 2u);
  EXPECT_EQ(by_group["right"].ranks, 2u);
  EXPECT_EQ(by_group[""].ranks, 4u);
  // The two pairs share no link, and the pair that finishes first holds its
  // sends to the others until they join: the pairs take the same time.
  EXPECT_EQ(by_group["left"].end - by_group["left"].start, by_group["right"].end - by_group["right"].start);
  EXPECT_GE(by_group[""].end, by_group["right"].end);
}

TEST(ChakraReplay, NodesUroceDoesNotRunAreSkippedAndCounted) {
  chakra::TraceNode metadata;
  metadata.id = 1;
  metadata.type = chakra::kMetadataNode;
  chakra::TraceNode strange = metadata;
  strange.id = 2;
  strange.type = 42;
  const ChakraResult result = chakra_of(run_simulation(
      replay({{metadata, strange, collective(3, chakra::CommType::broadcast, 4096, {1, 2}), compute(4, 5, {3})}})));
  EXPECT_EQ(result.ranks_finished, 1u);
  EXPECT_EQ(result.makespan, 5 * kUs);
  EXPECT_EQ(result.skipped.at("metadata"), 1u);
  EXPECT_EQ(result.skipped.at("unknown"), 1u);
  EXPECT_EQ(result.skipped.at("comm_coll:broadcast"), 1u);
  EXPECT_EQ(result.nodes_run, 1u);
}

TEST(ChakraReplay, BackwardComputeHidesTheGradientAllReduces) {
  Scenario scenario = example("chakra_data_parallel.toml");
  const ChakraResult result = chakra_of(run_simulation(scenario));
  ASSERT_EQ(result.ranks_finished, 8u);
  chakra::DataParallelStep step;
  SimTime compute = static_cast<SimTime>(step.layers * (step.forward_us + step.backward_us) + step.optimizer_us) * kUs;
  SimTime communication = 0;
  for (const ChakraCollectiveResult& c : result.collectives) communication += c.end - c.start;
  for (const ChakraRankResult& rank : result.ranks) {
    EXPECT_EQ(rank.compute, compute);
    EXPECT_EQ(rank.compute + rank.communication + rank.idle, result.makespan);
  }
  // All but the last bucket's all-reduce ran under backward compute.
  EXPECT_GT(result.makespan, compute);
  EXPECT_LT(result.makespan, compute + communication / 2);
}

TEST(ChakraReplay, TheMixtureOfExpertsStepRunsItsAllToAlls) {
  const ChakraResult result = chakra_of(run_simulation(example("chakra_mixture_of_experts.toml")));
  ASSERT_EQ(result.ranks_finished, 8u);
  chakra::MixtureOfExpertsStep step;
  ASSERT_EQ(result.collectives.size(), 4u * step.layers + 1);
  for (const ChakraCollectiveResult& c : result.collectives) EXPECT_NE(c.end, kSimNever);
}

TEST(ChakraReplay, TheSameScenarioReplaysTheSameToThePicosecond) {
  // Results that do not drift between runs (what SimAI's users ask for).
  Scenario scenario = example("chakra_mixture_of_experts.toml");
  const ChakraResult first = chakra_of(run_simulation(scenario));
  const ChakraResult second = chakra_of(run_simulation(scenario));
  EXPECT_EQ(first.makespan, second.makespan);
  ASSERT_EQ(first.collectives.size(), second.collectives.size());
  for (std::size_t c = 0; c < first.collectives.size(); ++c) {
    EXPECT_EQ(first.collectives[c].start, second.collectives[c].start);
    EXPECT_EQ(first.collectives[c].end, second.collectives[c].end);
  }
  for (std::size_t r = 0; r < first.ranks.size(); ++r) {
    EXPECT_EQ(first.ranks[r].finished, second.ranks[r].finished);
    EXPECT_EQ(first.ranks[r].communication, second.ranks[r].communication);
  }
}

TEST(ChakraReplay, TwoJobsOnOneFabricSlowEachOtherWhereTheyShareLinks) {
  Scenario shared = example("chakra_two_jobs.toml");
  ASSERT_EQ(shared.chakra.size(), 2u);
  SimResult both = run_simulation(shared);
  ASSERT_EQ(both.chakra.size(), 2u);
  Scenario alone = shared;
  alone.chakra.pop_back();
  SimResult one = run_simulation(alone);
  ASSERT_EQ(one.chakra.size(), 1u);
  for (const ChakraResult& job : both.chakra) EXPECT_EQ(job.ranks_finished, 8u);
  EXPECT_EQ(one.chakra[0].ranks_finished, 8u);
  // Every ring step of both jobs crosses the 2:1 oversubscribed spines: job
  // a's all-reduces take longer with job b beside it, and so does its step.
  SimTime alone_reduce = one.chakra[0].collectives[0].end - one.chakra[0].collectives[0].start;
  SimTime shared_reduce = both.chakra[0].collectives[0].end - both.chakra[0].collectives[0].start;
  EXPECT_GT(shared_reduce, alone_reduce * 3 / 2);
  EXPECT_GT(both.chakra[0].makespan, one.chakra[0].makespan * 3 / 2);
  EXPECT_EQ(both.chakra[0].ranks[0].compute, one.chakra[0].ranks[0].compute);  // compute is the job's own
}

TEST(ChakraReplay, ChannelsSpreadTheJobsOverTheSpines) {
  // With one QP per pair of ranks, ECMP pins each ring hop to one spine and
  // some uplinks carry more than their share; eight channels (eight QPs per
  // pair, the slices spread over them) even the load out.
  Scenario one_channel = example("chakra_two_jobs.toml");
  Scenario eight_channels = one_channel;
  for (ChakraSpec& job : eight_channels.chakra) job.channels = 8;
  SimResult narrow = run_simulation(one_channel);
  SimResult wide = run_simulation(eight_channels);
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_EQ(wide.chakra[j].ranks_finished, 8u);
    EXPECT_LT(wide.chakra[j].makespan, narrow.chakra[j].makespan * 9 / 10);
  }
}

TEST(ChakraReplay, TracesThatDisagreeAreRefusedWithTheFileAndNodeNamed) {
  std::string error = plan_error(replay({{collective(5, chakra::CommType::all_reduce, 1 << 20)},
                                         {collective(5, chakra::CommType::all_reduce, 2 << 20)}}));
  EXPECT_NE(error.find("test.1.et: node 0 (id 5"), std::string::npos) << error;
  EXPECT_NE(error.find("2097152"), std::string::npos) << error;

  error = plan_error(replay({{message(1, true, 1, 64)}, {compute(1, 1)}}));
  EXPECT_NE(error.find("rank 0 sends 1 more message(s) with tag 0 than rank 1 receives"), std::string::npos)
      << error;

  error = plan_error(replay({{collective(1, chakra::CommType::all_reduce, 64, {}, "tp")}}));
  EXPECT_NE(error.find("process group \"tp\" is not in [chakra.groups]"), std::string::npos) << error;

  error = plan_error(replay({{collective(1, chakra::CommType::all_reduce, 64)}, {compute(1, 1)}}));
  EXPECT_NE(error.find("test.1.et: has no node for collective #0"), std::string::npos) << error;

  error = plan_error(replay({{message(1, true, 0, 64)}}));
  EXPECT_NE(error.find("comm_dst 0 is not another rank"), std::string::npos) << error;
}

TEST(ChakraReplay, RanksWaitingOnEachOtherEndAtTheTimeLimitNotInAHang) {
  // Each rank runs one communication at a time, and they take the two
  // groups' collectives in opposite orders.
  std::vector<std::vector<chakra::TraceNode>> ranks = {
      {collective(1, chakra::CommType::all_reduce, 1 << 16, {}, "a"),
       collective(2, chakra::CommType::all_reduce, 1 << 16, {1}, "b")},
      {collective(1, chakra::CommType::all_reduce, 1 << 16, {}, "b"),
       collective(2, chakra::CommType::all_reduce, 1 << 16, {1}, "a")}};
  Scenario scenario = replay(ranks, 500 * kUs);
  scenario.chakra[0].groups = {{"a", {0, 1}}, {"b", {0, 1}}};
  SimResult run = run_simulation(scenario);
  const ChakraResult& result = chakra_of(run);
  EXPECT_EQ(result.ranks_finished, 0u);
  EXPECT_EQ(result.makespan, 500 * kUs);
  EXPECT_EQ(run.sim_time, 500 * kUs);
}

}  // namespace
}  // namespace uroce::sim
