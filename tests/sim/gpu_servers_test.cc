// GPU servers ([servers], sim/gpu_servers.h) and NCCL's choice of algorithm
// (sim/collective_choice.h). The checks against something outside the
// model are the arithmetic of the links: an all-reduce inside one server
// runs at NVLink's rate, not the NIC's, even with DCQCN on (NVLink QPs are
// not paced); rail-optimized rings on an even number of servers never
// touch the spine (a spine 100 times slower than the rails does not slow
// them); and the choice takes the tree for a small all-reduce on 32 GPUs
// and the ring for a large one, as NCCL does, and it is the one that the
// simulation then finds faster.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/collective_choice.h"
#include "sim/gpu_servers.h"
#include "sim/scenario_file.h"
#include "sim/chakra_replay.h"
#include "sim/simulation.h"

namespace uroce::sim {
namespace {

Scenario parse(const std::string& text) {
  auto scenario = parse_scenario(text, "servers.toml");
  if (!scenario) throw std::runtime_error(scenario.error());
  return *scenario;
}

// `servers` servers of `gpus` GPUs, a NIC per GPU, rail r on leaf r.
std::string rails(std::uint32_t servers, std::uint32_t gpus, double uplink_gbps, const std::string& workload) {
  return "time_limit_us = 1000000\n[topology]\nkind = \"leaf_spine\"\nleaves = " + std::to_string(gpus) +
         "\nspines = 1\nhosts_per_leaf = " + std::to_string(servers) +
         "\nlink_gbps = 400\nuplink_gbps = " + std::to_string(uplink_gbps) + "\ndelay_ns = 500\n[servers]\ngpus = " +
         std::to_string(gpus) + "\n[[workloads]]\n" + workload;
}

double iteration_us(const SimResult& result) {
  EXPECT_FALSE(result.collective_failed);
  EXPECT_EQ(result.collective_iterations.size(), 1u);
  return result.collective_iterations.empty() ? 0 : static_cast<double>(result.collective_iterations[0]) / 1e6;
}

TEST(GpuServers, TheNicsBecomeServersGpusWithAnNvlinkSwitchEach) {
  LinkSpec nic{400'000'000'000, 500'000};
  Topology fabric = leaf_spine(4, 2, 2, nic, nic);  // 8 NICs, rails 0 to 3 on leaves 0 to 3
  GpuServerSpec spec;
  spec.gpus = 4;
  Topology rail = with_gpu_servers(fabric, spec);
  EXPECT_EQ(rail.hosts, 8u);
  EXPECT_EQ(rail.switches, 6u + 2u);
  EXPECT_EQ(rail.edges.size(), fabric.edges.size() + 8);
  EXPECT_FALSE(topology_problem(rail).has_value()) << *topology_problem(rail);
  // NIC 5 (leaf 2's second) is rail 2 of server 1: GPU 1 * 4 + 2, on leaf 2 and NVLink switch 7.
  std::vector<NodeRef> linked;
  for (const TopologyEdge& edge : rail.edges) {
    if (edge.a == NodeRef{true, 6}) linked.push_back(edge.b);
    if (edge.b == NodeRef{true, 6}) linked.push_back(edge.a);
  }
  EXPECT_EQ(linked, (std::vector<NodeRef>{NodeRef{false, 2}, NodeRef{false, 7}}));
  EXPECT_TRUE(rail.servers.nvlink_port);
  EXPECT_TRUE(rail.servers.same_server(4, 7));
  EXPECT_FALSE(rail.servers.same_server(3, 4));
  EXPECT_EQ(rail.servers.whole_servers({4, 5, 6, 7, 0, 1, 2, 3}), 4u);
  EXPECT_EQ(rail.servers.whole_servers({0, 1, 2, 4}), 0u);
  EXPECT_EQ(rail.servers.whole_servers({0, 1, 1, 2}), 0u);

  spec.nics = ServerNics::shared;
  Topology shared = with_gpu_servers(leaf_spine(2, 1, 1, nic, nic), spec);
  EXPECT_EQ(shared.hosts, 8u);
  EXPECT_FALSE(shared.servers.nvlink_port);
  EXPECT_FALSE(topology_problem(shared).has_value()) << *topology_problem(shared);

  spec.nics = ServerNics::rail;
  spec.gpus = 3;
  EXPECT_THROW(with_gpu_servers(fabric, spec), std::invalid_argument);
  std::string text = rails(2, 4, 400, "kind = \"allreduce\"\nbytes = 65536\n");
  text.replace(text.find("gpus = 4"), 8, "gpus = 3");
  auto wrong = parse_scenario(text, "servers.toml");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().find("not whole servers of 3 GPUs"), std::string::npos) << wrong.error();
}

TEST(GpuServers, InsideAServerTheRingRunsAtNvlinkRateEvenWithDcqcnOn) {
  // One server of 8 GPUs, 100 Gb/s NICs, NVLink at 3600 Gb/s: 8 MiB all-reduced.
  std::string text = rails(1, 8, 100,
                           "kind = \"collective\"\noperation = \"all_reduce\"\nalgorithm = \"ring\"\n"
                           "bytes = 8388608\nslices = 8\n") +
                     "[dcqcn]\nenabled = true\n";
  text.replace(text.find("link_gbps = 400"), 15, "link_gbps = 100");
  Scenario scenario = parse(text);
  SimResult result = run_simulation(scenario);
  // Each GPU sends 2 * 7/8 * 8 MiB: 33 us at 450 GB/s. With the NVLink QPs
  // paced by DCQCN from the NIC's 100 Gb/s, it took 158 us.
  double us = iteration_us(result);
  EXPECT_GT(us, 33);
  EXPECT_LT(us, 80);
}

TEST(GpuServers, RailOptimizedRingsOnAnEvenNumberOfServersStayOffTheSpine) {
  std::string ring = "kind = \"collective\"\noperation = \"all_reduce\"\nalgorithm = \"ring\"\nbytes = 16777216\n"
                     "slices = 8\n";
  double fast_spine = iteration_us(run_simulation(parse(rails(2, 4, 400, ring))));
  double slow_spine = iteration_us(run_simulation(parse(rails(2, 4, 4, ring))));
  EXPECT_DOUBLE_EQ(fast_spine, slow_spine);
  // The flat ring over the same 8 GPUs (channels and orders not server-aware) does cross it.
  std::string flat = ring + "hosts = [0, 4, 1, 5, 2, 6, 3, 7]\n";
  double flat_slow = iteration_us(run_simulation(parse(rails(2, 4, 4, flat))));
  EXPECT_GT(flat_slow, 10 * slow_spine);
}

TEST(GpuServers, TheChoiceTakesTheTreeWhenSmallAndTheRingWhenLargeAndTheSimulationAgrees) {
  auto all_reduce = [](std::uint64_t bytes, const std::string& algorithm) {
    return rails(4, 8, 400, "kind = \"collective\"\noperation = \"all_reduce\"\nbytes = " + std::to_string(bytes) +
                                "\nalgorithm = \"" + algorithm + "\"\nslices = 16\n");
  };
  Scenario small = parse(all_reduce(1 << 20, "auto"));
  ASSERT_TRUE(small.collective);
  EXPECT_TRUE(small.collective->algorithm_chosen);
  EXPECT_EQ(small.collective->channels, 8u);  // a channel per rail
  EXPECT_EQ(small.collective->algorithm, collective::Algorithm::double_binary_tree);
  Scenario large = parse(all_reduce(128 << 20, "auto"));
  EXPECT_EQ(large.collective->algorithm, collective::Algorithm::ring);
  double tree = iteration_us(run_simulation(parse(all_reduce(1 << 20, "double_binary_tree"))));
  double ring = iteration_us(run_simulation(parse(all_reduce(1 << 20, "ring"))));
  EXPECT_LT(tree, ring);
  for (const PredictedTime& predicted : predict_algorithms(*small.collective, small.topology)) {
    double simulated = predicted.algorithm == collective::Algorithm::ring ? ring : tree;
    EXPECT_NEAR(predicted.seconds * 1e6, simulated, 0.3 * simulated) << collective::to_string(predicted.algorithm);
  }
}

// A Chakra replay on GPU servers: the data-parallel example's 8 ranks as 2
// servers of 4 GPUs (its 100 Gb/s NICs as rails, NVLink inside) run their
// gradient all-reduces by NCCL's choice, each no faster than the NICs
// allow and faster than the same trace on the 8 plain hosts.
TEST(GpuServers, AChakraReplayOnServersRunsItsCollectivesAsNcclWould) {
  std::string path = std::string(UROCE_EXAMPLES_DIR) + "/chakra_data_parallel.toml";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string plain = text.str();
  plain.replace(plain.find("traces = \""), 10, "traces = \"" + std::string(UROCE_EXAMPLES_DIR) + "/");
  std::string servers = plain;
  servers.insert(servers.find("[chakra]"), "[servers]\ngpus = 4\n\n");
  SimResult flat = run_simulation(parse(plain));
  SimResult on_servers = run_simulation(parse(servers));
  ASSERT_EQ(flat.chakra.size(), 1u);
  ASSERT_EQ(on_servers.chakra.size(), 1u);
  EXPECT_EQ(on_servers.chakra[0].ranks_finished, 8u);
  ASSERT_EQ(on_servers.chakra[0].collectives.size(), 4u);
  for (const ChakraCollectiveResult& collective : on_servers.chakra[0].collectives) {
    ASSERT_TRUE(collective.algorithm);
    // 8 MiB by the tree between 2 servers: each server's NIC pair moves half
    // the buffer up and half down per tree, 8 MiB in all over 4 x 12.5 GB/s.
    double us = static_cast<double>(collective.end - collective.start) / 1e6;
    EXPECT_GT(us, 8.0 * 1048576 / (4 * 12.5e9) * 1e6) << collective::to_string(*collective.algorithm);
  }
  EXPECT_LT(on_servers.chakra[0].makespan, flat.chakra[0].makespan);
}

// Reading a scenario makes the choice, so it must not build what a run of
// it would: 250 servers of 8 GPUs (a ring's schedule there is 2000 x 3998
// steps per channel; the scenario fuzzer found reading it out of memory).
TEST(GpuServers, TheChoiceOnTwoThousandGpusIsMadeWithoutBuildingTheRing) {
  std::string text =
      "[topology]\nkind = \"leaf_spine\"\nleaves = 500\n[servers]\ngpus = 8\n[[workloads]]\n"
      "kind = \"collective\"\noperation = \"all_reduce\"\nbytes = 1048576\nslices = 16\n";
  Scenario scenario = parse(text);
  ASSERT_TRUE(scenario.collective);
  EXPECT_EQ(scenario.collective->hosts.size(), 2000u);
  EXPECT_EQ(scenario.collective->algorithm, collective::Algorithm::double_binary_tree);
}

// The shipped example (docs/simulator/chakra.md): the tree is chosen at 1 MiB
// and takes about the 45 us quoted.
TEST(GpuServers, TheShippedExampleRunsAsItsPageSays) {
  auto scenario = load_scenario(std::string(UROCE_EXAMPLES_DIR) + "/nccl_gpu_servers.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  ASSERT_TRUE(scenario->collective);
  EXPECT_EQ(scenario->topology.hosts, 32u);
  EXPECT_EQ(scenario->collective->algorithm, collective::Algorithm::double_binary_tree);
  double us = iteration_us(run_simulation(*scenario));
  EXPECT_GT(us, 45);
  EXPECT_LT(us, 65);
}

}  // namespace
}  // namespace uroce::sim
