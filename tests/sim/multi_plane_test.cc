// Multi-plane fabrics: hosts with a port in each plane, planes routed apart.
// The generator's counts; a validation error for a host with two ports in
// one plane; a permutation whose multipath QPs use every plane and finish
// at least 1.5 times sooner than QPs confined to one plane of two (111 us
// against 181 us: twice the bandwidth, the same latency); and a spine of
// one plane failing, which multipath QPs route around without a timeout
// while every data packet still reaches its host.
#include <gtest/gtest.h>

#include "sim/scenario_file.h"
#include "sim/simulation.h"
#include "sim/topology.h"

namespace uroce::sim {
namespace {

constexpr const char* kTwoPlanes = R"(
seed = 1
[topology]
kind = "multi_plane"
planes = 2
leaves = 2
spines = 2
hosts_per_leaf = 4
link_gbps = 50
uplink_gbps = 100
delay_ns = 1000
[switch]
pfc = true
[transport]
recovery = "selective_repeat"
multipath_evs = 64
timeout = 10
[[workloads]]
kind = "permutation"
bytes = 1048576
)";

Scenario two_planes() {
  auto scenario = parse_scenario(kTwoPlanes, "two_planes.toml");
  if (!scenario) throw std::runtime_error(scenario.error());
  return *scenario;
}

SimTime slowest(const SimResult& result) {
  SimTime longest = 0;
  for (const FlowResult& flow : result.flows) {
    EXPECT_TRUE(flow.finished());
    longest = std::max(longest, flow.finish - flow.spec.start);
  }
  return longest;
}

TEST(MultiPlane, TheGeneratorGivesEachHostAPortInEveryPlane) {
  LinkSpec link{100'000'000'000, 1'000'000};
  Topology topology = multi_plane(4, 3, 2, 5, link, link, 2);
  EXPECT_EQ(topology.hosts, 15u);
  EXPECT_EQ(topology.switches, 20u);
  EXPECT_EQ(topology.edges.size(), 4u * (15 + 3 * 2 * 2));
  EXPECT_FALSE(topology_problem(topology).has_value());
  std::vector<std::uint32_t> plane = switch_planes(topology);
  EXPECT_EQ(plane[0], 0u);
  EXPECT_EQ(plane[4], 0u);
  EXPECT_EQ(plane[5], 1u);
  EXPECT_EQ(plane[19], 3u);
  topology.edges.push_back({NodeRef{true, 0}, NodeRef{false, 1}, link});  // a second port into plane 0
  ASSERT_TRUE(topology_problem(topology).has_value());
  EXPECT_NE(topology_problem(topology)->find("one port per plane"), std::string::npos);
}

TEST(MultiPlane, MultipathQpsUseBothPlanesAndFinishSooner) {
  Scenario spread = two_planes();
  SimResult both = run_simulation(spread);
  Scenario confined = spread;
  confined.transport.multipath.entropy_values = 0;
  SimResult one = run_simulation(confined);
  ASSERT_EQ(both.flows.size(), 8u);
  // 1 MiB at 2 x 50 Gb/s takes 84 us of data; at 50 Gb/s, 168 us.
  EXPECT_LT(slowest(both) * 3, slowest(one) * 2);
  EXPECT_EQ(both.timeouts, 0u);
}

TEST(MultiPlane, AFailedSpineInOnePlaneIsRoutedAround) {
  Scenario scenario = two_planes();
  scenario.reconverge = 1'000'000 * kPicosecondsPerUs;  // the routes never learn of it
  // Plane 1's first spine (switches 4 to 7 are plane 1: leaves 4, 5, spines 6, 7).
  scenario.failures.push_back(Failure{NodeRef{false, 6}, std::nullopt, 20 * kPicosecondsPerUs, kSimNever});
  SimResult result = run_simulation(scenario);
  ASSERT_EQ(result.flows.size(), 8u);
  for (const FlowResult& flow : result.flows) EXPECT_TRUE(flow.finished());
  EXPECT_GT(result.fabric.failure_losses, 0u);
  EXPECT_GT(result.paths_retired, 0u);
  EXPECT_EQ(result.timeouts, 0u);
  EXPECT_FALSE(result.collective_failed);
}

}  // namespace
}  // namespace uroce::sim
