// The simulator end to end on small fabrics: a lone flow runs at line rate,
// an incast is held lossless by PFC pauses, a lossy fabric drops and the
// engine retransmits, ECMP spreads a fat-tree's flows, and a run repeats bit
// for bit from its seed.
#include <gtest/gtest.h>

#include "sim/fairness.h"
#include "sim/simulation.h"

namespace uroce::sim {
namespace {

constexpr SimTime kUs = kPicosecondsPerUs;
constexpr LinkSpec k100G{100'000'000'000, 1 * kUs};

SimTime fct(const FlowResult& flow) { return flow.finish - flow.spec.start; }

Scenario incast(std::uint32_t senders, std::uint64_t bytes) {
  Scenario scenario;
  scenario.topology = star(senders + 1, k100G);
  for (std::uint32_t s = 1; s <= senders; ++s) scenario.flows.push_back({s, 0, bytes, 0});
  return scenario;
}

TEST(Simulation, ALoneFlowRunsAtLineRate) {
  Scenario scenario;
  scenario.topology = dumbbell(1, k100G, k100G);
  scenario.flows.push_back({0, 1, 1 << 20, 5 * kUs});
  SimResult result = run_simulation(scenario);
  ASSERT_EQ(result.flows.size(), 1u);
  ASSERT_TRUE(result.flows[0].finished());
  // 1 MiB is 83.9 us of payload at 100 Gb/s; headers add about 1.7%, three
  // links 3 us, and the ACK comes back over them.
  EXPECT_GT(fct(result.flows[0]), 84 * kUs);
  EXPECT_LT(fct(result.flows[0]), 95 * kUs);
  EXPECT_EQ(result.fabric.data_packets, 256u);  // 4096-byte MTU
  EXPECT_EQ(result.fabric.pause_frames, 0u);
  EXPECT_EQ(result.fabric.drops, 0u);
  EXPECT_EQ(result.retransmitted_packets, 0u);
}

// A shallow static XOFF (256 KB): the default dynamic threshold, 1/8 of a
// free 16 MB buffer, would absorb this incast without a pause.
void shallow_static_pfc(Scenario& scenario) {
  scenario.switches.xoff_bytes = 256 << 10;
  scenario.switches.dynamic_alpha = 0;
}

TEST(Simulation, PfcKeepsAnIncastLossless) {
  Scenario scenario = incast(8, 2 << 20);
  shallow_static_pfc(scenario);
  scenario.engine.congestion.reaction_point = false;
  SimResult result = run_simulation(scenario);
  for (const FlowResult& flow : result.flows) ASSERT_TRUE(flow.finished());
  EXPECT_GT(result.fabric.pause_frames, 0u);
  EXPECT_GT(result.fabric.pause_time_total, 0);
  EXPECT_EQ(result.fabric.drops, 0u);
  EXPECT_EQ(result.fabric.lossless_violations, 0u);
  EXPECT_EQ(result.retransmitted_packets, 0u);
  // 16 MiB through one 100 Gb/s port: at least 1.34 ms, and not much more.
  SimTime last = 0;
  for (const FlowResult& flow : result.flows) last = std::max(last, flow.finish);
  EXPECT_GT(last, 1342 * kUs);
  EXPECT_LT(last, 1450 * kUs);
}

// Four senders: with eight, go-back-N's timers expire together, every
// round of resends overflows the queue again, and at some seeds a flow runs
// out of retries (its retry_cnt of 7) before the others are done.
TEST(Simulation, ALossyFabricDropsAndTheEngineRecovers) {
  Scenario scenario = incast(4, 1 << 20);
  scenario.switches.pfc = false;
  scenario.switches.lossy_queue_bytes = 200 << 10;
  scenario.transport.timeout = 6;  // 262 us
  SimResult result = run_simulation(scenario);
  for (const FlowResult& flow : result.flows) EXPECT_TRUE(flow.finished());
  EXPECT_GT(result.fabric.drops, 0u);
  EXPECT_EQ(result.fabric.lossless_violations, 0u);
  EXPECT_EQ(result.fabric.pause_frames, 0u);
  EXPECT_GT(result.retransmitted_packets, 0u);
}

TEST(Simulation, EcnMarksTurnIntoCnps) {
  Scenario scenario = incast(4, 2 << 20);
  scenario.engine.congestion.reaction_point = true;
  SimResult result = run_simulation(scenario);
  for (const FlowResult& flow : result.flows) EXPECT_TRUE(flow.finished());
  EXPECT_GT(result.fabric.ecn_marked, 0u);
  EXPECT_GT(result.cnps, 0u);
}

TEST(Simulation, EcmpSpreadsAPermutationOverAFatTree) {
  Scenario scenario;
  scenario.topology = fat_tree(4, k100G);  // 16 hosts
  for (std::uint32_t h = 0; h < 16; ++h) scenario.flows.push_back({h, (h + 4) % 16, 256 << 10, 0});
  SimResult result = run_simulation(scenario);
  for (const FlowResult& flow : result.flows) ASSERT_TRUE(flow.finished());
  EXPECT_EQ(result.hosts, 16u);
  EXPECT_EQ(result.switches, 20u);
  EXPECT_EQ(result.fabric.data_packets, 16u * 64u);
}

TEST(Simulation, TheSameSeedGivesTheSameRunBitForBit) {
  Scenario scenario;
  scenario.topology = fat_tree(4, k100G);
  scenario.switches.xoff_bytes = 64 << 10;
  scenario.engine.congestion.reaction_point = true;
  scenario.seed = 9;
  for (std::uint32_t h = 1; h < 16; ++h) scenario.flows.push_back({h, 0, 128 << 10, h * kUs});
  SimResult first = run_simulation(scenario);
  SimResult second = run_simulation(scenario);
  ASSERT_EQ(first.flows.size(), second.flows.size());
  for (std::size_t i = 0; i < first.flows.size(); ++i) EXPECT_EQ(first.flows[i].finish, second.flows[i].finish);
  EXPECT_EQ(first.events, second.events);
  EXPECT_EQ(first.sim_time, second.sim_time);
  EXPECT_EQ(first.fabric.pause_frames, second.fabric.pause_frames);
  EXPECT_EQ(first.fabric.ecn_marked, second.fabric.ecn_marked);
  EXPECT_EQ(first.cnps, second.cnps);
}

// Two senders into one port, priority 3 and priority 1 (both lossless).
Scenario two_priorities(Scheduler scheduler) {
  Scenario scenario = incast(2, 8 << 20);
  scenario.engine.congestion.reaction_point = false;
  scenario.switches.lossless_priorities = (1u << 1) | (1u << 3);
  scenario.switches.scheduler = scheduler;
  scenario.switches.dwrr_weights = {1, 3, 1, 1, 1, 1, 1, 1};
  scenario.flows[0].dscp = 26;  // priority 3, weight 1
  scenario.flows[1].dscp = 8;   // priority 1, weight 3
  return scenario;
}

TEST(Simulation, DwrrSharesAPortByWeightWhereStrictPriorityStarves) {
  SimResult strict = run_simulation(two_priorities(Scheduler::strict));
  SimResult dwrr = run_simulation(two_priorities(Scheduler::dwrr));
  for (const SimResult* result : {&strict, &dwrr}) {
    for (const FlowResult& flow : result->flows) ASSERT_TRUE(flow.finished());
    EXPECT_EQ(result->fabric.drops, 0u);
  }
  // Strict: priority 3 first, so its flow finishes in about half the time.
  EXPECT_LT(fct(strict.flows[0]) * 3, fct(strict.flows[1]) * 2);
  auto shares = fairness(dwrr);
  ASSERT_TRUE(shares.has_value());
  double ratio = shares->flow_gbps[1] / shares->flow_gbps[0];
  EXPECT_GT(ratio, 2.7);
  EXPECT_LT(ratio, 3.3);
}

// Training: a collective per iteration with compute between them. The
// iterations take as long as without the gap (the fabric is idle in it) and
// the run as long as the iterations plus the gaps and the barriers between
// iterations (the shortest link delay, 1 us here).
TEST(Simulation, ComputeBetweenIterationsAddsExactlyItsGaps) {
  Scenario scenario;
  scenario.topology = star(4, k100G);
  scenario.collective = CollectiveSpec{{0, 1, 2, 3}, 4 << 20, 3, 0, 0, std::nullopt, 0};
  SimResult back_to_back = run_simulation(scenario);
  scenario.collective->iteration_gap = 200 * kUs;
  SimResult training = run_simulation(scenario);
  ASSERT_EQ(training.collective_iterations.size(), 3u);
  SimTime busy = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(training.collective_iterations[i], back_to_back.collective_iterations[i]);
    busy += training.collective_iterations[i];
  }
  SimTime barrier = scenario.topology.edges.front().link.propagation;
  EXPECT_EQ(training.collective_finished_at, busy + 2 * (200 * kUs + barrier));
  EXPECT_EQ(back_to_back.collective_finished_at, busy + 2 * barrier);
}

TEST(Simulation, ASlowHostDelaysEveryStepOfTheRing) {
  Scenario scenario;
  scenario.topology = star(4, k100G);
  scenario.collective = CollectiveSpec{{0, 1, 2, 3}, 4 << 20, 2, 0, 0, std::nullopt, 0};
  SimResult even = run_simulation(scenario);
  scenario.collective->straggler = 2;
  scenario.collective->straggler_delay = 50 * kUs;
  SimResult slow = run_simulation(scenario);
  ASSERT_EQ(even.collective_iterations.size(), 2u);
  ASSERT_EQ(slow.collective_iterations.size(), 2u);
  // 6 steps, each waiting for the straggler's 50 us somewhere in the ring.
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_GE(slow.collective_iterations[i], even.collective_iterations[i] + 6 * 50 * kUs);
    EXPECT_LT(slow.collective_iterations[i], even.collective_iterations[i] + 6 * 50 * kUs + 100 * kUs);
  }
}

TEST(Simulation, RefusesAnInconsistentScenario) {
  Scenario scenario;
  scenario.topology = star(2, k100G);
  scenario.flows.push_back({0, 5, 1000, 0});
  EXPECT_THROW(run_simulation(scenario), std::invalid_argument);
  scenario.flows[0] = {1, 1, 1000, 0};
  EXPECT_THROW(run_simulation(scenario), std::invalid_argument);
  scenario.flows[0] = {0, 1, 1000, 0};
  scenario.captures = {{NodeRef{true, 0}, NodeRef{false, 7}}};  // no switch 7
  EXPECT_THROW(run_simulation(scenario), std::invalid_argument);
  scenario.captures = {{NodeRef{true, 0}, NodeRef{true, 1}}};  // hosts are never linked directly
  EXPECT_THROW(run_simulation(scenario), std::invalid_argument);
  scenario.captures.clear();
  scenario.flows.clear();
  scenario.topology.edges.pop_back();  // host 1 attached to nothing
  EXPECT_THROW(run_simulation(scenario), std::invalid_argument);
}

TEST(Topology, BuildersGiveTheTextbookSizes) {
  Topology tree = fat_tree(8, k100G);
  EXPECT_EQ(tree.hosts, 128u);
  EXPECT_EQ(tree.switches, 80u);
  EXPECT_EQ(topology_problem(tree), std::nullopt);
  Topology fabric = leaf_spine(4, 2, 16, k100G, LinkSpec{400'000'000'000, kUs});
  EXPECT_EQ(fabric.hosts, 64u);
  EXPECT_EQ(fabric.switches, 6u);
  EXPECT_NE(fabric.description.find("2.00:1"), std::string::npos) << fabric.description;
  Topology broken = star(3, k100G);
  broken.edges.push_back({NodeRef{true, 0}, NodeRef{true, 1}, k100G});
  EXPECT_TRUE(topology_problem(broken).has_value());
}

TEST(Simulation, SlicedRingStepsHideTheRoundTripEachWholeStepWaitsFor) {
  auto run = [](std::uint32_t slices) {
    Scenario scenario;
    scenario.topology = star(8, k100G);
    CollectiveSpec ring;
    ring.bytes = 1 << 20;
    ring.slices = slices;
    for (std::uint32_t h = 0; h < 8; ++h) ring.hosts.push_back(h);
    scenario.collective = ring;
    SimResult result = run_simulation(scenario);
    EXPECT_EQ(result.collective_iterations.size(), 1u);
    return result.collective_iterations.empty() ? 0 : result.collective_iterations[0];
  };
  // 14 ring steps of 128 KiB: the bound is 146.8 us at 100 Gb/s; whole steps
  // add a round trip each (about 4 us), slices hide it.
  SimTime whole = run(1);
  SimTime sliced = run(8);
  EXPECT_GT(whole, 200 * kUs);
  EXPECT_LT(sliced, 160 * kUs);
  EXPECT_GT(sliced, 146 * kUs);
}

}  // namespace
}  // namespace uroce::sim
