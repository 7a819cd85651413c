// The shipped example scenarios, each run as the README describes it and
// again with the one setting it is about changed; the test asserts the
// direction of the difference the example exists to show.
#include <gtest/gtest.h>

#include <string>

#include "sim/scenario_file.h"
#include "sim/simulation.h"

namespace uroce::sim {
namespace {

Scenario example(const std::string& name) {
  auto scenario = load_scenario(std::string(UROCE_EXAMPLES_DIR) + "/" + name);
  if (!scenario) throw std::runtime_error(scenario.error());
  return *scenario;
}

std::uint32_t finished(const SimResult& result) {
  std::uint32_t count = 0;
  for (const FlowResult& flow : result.flows) count += flow.finished() ? 1 : 0;
  return count;
}

TEST(Examples, ACyclicBufferDependencyDeadlocksAndIsReported) {
  Scenario scenario = example("pfc_deadlock.toml");
  SimResult result = run_simulation(scenario);
  ASSERT_TRUE(result.deadlock.has_value());
  EXPECT_EQ(finished(result), 0u);
  ASSERT_EQ(result.deadlock->cycle.size(), 4u);  // every ring link, clockwise
  for (std::size_t i = 0; i < 4; ++i) {
    const PausedHop& hop = result.deadlock->cycle[i];
    const PausedHop& next = result.deadlock->cycle[(i + 1) % 4];
    EXPECT_FALSE(hop.next.is_host);
    EXPECT_EQ(hop.next.index, next.switch_index);  // each waits on the next switch's queue
    EXPECT_EQ(hop.priority, 3);
  }
  EXPECT_LT(result.sim_time, 1000 * kPicosecondsPerUs);  // stopped at the detection, not the time limit

  // The same flows on shortest paths: no cycle, every flow completes.
  scenario.topology.routes.clear();
  SimResult shortest = run_simulation(scenario);
  EXPECT_FALSE(shortest.deadlock.has_value());
  EXPECT_EQ(finished(shortest), 4u);
}

SimTime mean(const std::vector<SimTime>& times) {
  SimTime total = 0;
  for (SimTime t : times) total += t;
  return times.empty() ? 0 : total / static_cast<SimTime>(times.size());
}

TEST(Examples, AStragglerSlowsTheWholeRing) {
  Scenario scenario = example("allreduce_straggler.toml");
  SimResult slow = run_simulation(scenario);
  ASSERT_EQ(slow.allreduce_iterations.size(), 5u);
  EXPECT_FALSE(slow.allreduce_failed);

  scenario = example("allreduce_straggler.toml");
  scenario.allreduce->straggler.reset();
  for (TopologyEdge& edge : scenario.topology.edges) edge.link.rate_bps = 100'000'000'000;
  SimResult even = run_simulation(scenario);
  ASSERT_EQ(even.allreduce_iterations.size(), 5u);
  // Without the straggler: 14 steps of 2 MiB at 100 Gb/s (168 us each) plus
  // headers, hops, ACKs and 5 us of compute per step.
  for (SimTime t : even.allreduce_iterations) {
    EXPECT_GT(t, 14 * 168 * kPicosecondsPerUs);
    EXPECT_LT(t, 14 * 200 * kPicosecondsPerUs);
  }
  // A 25 Gb/s member makes every step take at least its 671 us.
  EXPECT_GT(mean(slow.allreduce_iterations), 3 * mean(even.allreduce_iterations));
  for (SimTime t : slow.allreduce_iterations) EXPECT_GT(t, 14 * 671 * kPicosecondsPerUs);
}

}  // namespace
}  // namespace uroce::sim
