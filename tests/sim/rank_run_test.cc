// A run spread over ranks gives one process's results bit for bit: every
// example of flows or a collective on 2 ranks, the small ones on 3 too and on 2 ranks of 2
// threads (ranks as threads of this test, so the sanitizers see the frames
// cross), Chakra replays included; and the frames between ranks are
// checked on arrival. (tests/sim_mpi runs the same over mpirun.)
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim/fabric.h"
#include "sim/partition.h"
#include "sim/rank_frames.h"
#include "sim/simulation.h"
#include "tests/sim/example_scenario.h"
#include "tests/sim/run_outputs.h"
#include "tests/support/sanitized_build.h"
#include "tests/support/thread_ranks.h"

namespace uroce::sim {
namespace {

// Every rank's result, each run on a thread of its own.
std::vector<SimResult> run_on_ranks(const Scenario& scenario, std::uint32_t ranks) {
  testing_support::ThreadRanks group(ranks);
  std::vector<SimResult> results(ranks);
  std::vector<std::exception_ptr> errors(ranks);
  {
    std::vector<std::jthread> threads;
    for (std::uint32_t rank = 0; rank < ranks; ++rank) {
      threads.emplace_back([&, rank] {
        try {
          results[rank] = run_simulation(scenario, {}, {}, &group.member(rank));
        } catch (...) {
          errors[rank] = std::current_exception();
        }
      });
    }
  }
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return results;
}

class EveryExampleOverRanks : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryExampleOverRanks, GivesOneProcesssResultsOnTwoAndThreeRanks) {
  // Ten times slower under the sanitizers: the runs of over a million
  // events are mpirun's there (tests/sim_mpi, in the release build).
  const std::set<std::string> long_runs = {"web_search_load.toml",        "collectives.toml",
                                           "allreduce_straggler.toml",    "allreduce_link_failure.toml",
                                           "allreduce_link_failure_mrc.toml", "allreduce_3_tier.toml",
                                           "chakra_two_jobs.toml"};
  if (uroce::testing::kSanitizedBuild && long_runs.count(GetParam()) != 0) GTEST_SKIP() << "long under the sanitizers";
  Scenario scenario = example(GetParam());
  SimResult one = run_simulation(scenario);
  std::vector<std::string> expected = run_outputs(scenario, one);
  // Ranks meeting through a barrier per call are slow on two cores: the
  // larger examples run on 2 ranks only (mpirun runs them all three ways).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> settings{{2, 1}};
  if (one.events < 100'000) settings.insert(settings.end(), {{3, 1}, {2, 2}});
  for (auto [ranks, threads] : settings) {
    scenario.threads = threads;
    std::vector<SimResult> results = run_on_ranks(scenario, ranks);
    for (std::uint32_t rank = 0; rank < ranks; ++rank) {
      const SimResult& result = results[rank];
      EXPECT_EQ(result.ranks, ranks);
      EXPECT_EQ(result.partitions, std::min(ranks * threads, scenario.topology.hosts));
      EXPECT_EQ(result.events, one.events) << ranks << " ranks x " << threads << " threads, rank " << rank;
      EXPECT_EQ(run_outputs(scenario, result), expected) << ranks << " ranks x " << threads << " threads, rank " << rank;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RankRun, EveryExampleOverRanks,
                         ::testing::Values("incast.toml", "incast_trimming.toml", "link_failure.toml",
                                         "lossy_recovery.toml", "parking_lot.toml", "permutation_spraying.toml",
                                         "pfc_deadlock.toml", "victim_flow.toml", "web_search_load.toml",
                                         "collectives.toml", "allreduce_straggler.toml",
                                         "allreduce_link_failure.toml", "allreduce_link_failure_mrc.toml",
                                         "nccl_gpu_servers.toml", "allreduce_3_tier.toml",
                                         "chakra_data_parallel.toml", "chakra_mixture_of_experts.toml",
                                         "chakra_two_jobs.toml"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param.substr(0, param.param.find('.'));
                         });

// Every link of the PFC deadlock ring captured, both ways, on 3 ranks into
// one directory: rank 0 writes each capture (the others hand theirs over),
// byte for byte one process's, and no rank's hidden file is left.
TEST(RankRun, RankZeroWritesEveryCapture) {
  Scenario scenario = example("pfc_deadlock.toml");
  scenario.captures.clear();
  for (const TopologyEdge& edge : scenario.topology.edges) {
    scenario.captures.emplace_back(edge.a, edge.b);
    scenario.captures.emplace_back(edge.b, edge.a);
  }
  std::filesystem::path one = std::filesystem::temp_directory_path() / "uroce_rank_captures_one";
  std::filesystem::path three = std::filesystem::temp_directory_path() / "uroce_rank_captures_three";
  for (const auto& dir : {one, three}) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  run_simulation(scenario, {}, one.string());
  testing_support::ThreadRanks group(3);
  {
    std::vector<std::jthread> threads;
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
      threads.emplace_back([&, rank] { run_simulation(scenario, {}, three.string(), &group.member(rank)); });
    }
  }
  auto contents = [](const std::filesystem::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream file(entry.path(), std::ios::binary);
      files[entry.path().filename().string()] = {std::istreambuf_iterator<char>(file), {}};
    }
    return files;
  };
  std::map<std::string, std::string> expected = contents(one);
  EXPECT_EQ(expected.size(), scenario.captures.size());
  EXPECT_EQ(contents(three), expected);  // no ".rank" file either
  std::filesystem::remove_all(one);
  std::filesystem::remove_all(three);
}

// Two hosts on three ranks: the fabric has two partitions, and the third
// rank runs none but still takes part in every window's planning.
TEST(RankRun, ARankWithoutAPartitionStillTakesPart) {
  Scenario scenario;
  scenario.topology = star(2, LinkSpec{});
  scenario.flows.push_back(FlowSpec{0, 1, 1'000'000, 0});
  std::vector<std::string> expected = run_outputs(scenario, run_simulation(scenario));
  for (const SimResult& result : run_on_ranks(scenario, 3)) {
    EXPECT_EQ(result.partitions, 2u);
    EXPECT_EQ(run_outputs(scenario, result), expected);
  }
}

// What a broken peer would send: this rank (0 of 2) receives `bytes`.
class BrokenPeer final : public RankGroup {
 public:
  explicit BrokenPeer(Bytes bytes) : bytes_(std::move(bytes)) {}
  std::uint32_t rank() const override { return 0; }
  std::uint32_t size() const override { return 2; }
  std::vector<Bytes> exchange(const std::vector<Bytes>&) override { return {{}, bytes_}; }
  std::vector<Bytes> gather_all(const Bytes& mine) override { return {mine, {}}; }
  void sum(std::span<std::uint64_t>) override {}
  void min(std::span<std::int64_t>) override {}
  void max(std::span<std::uint64_t>) override {}

 private:
  Bytes bytes_;
};

// A frame from another rank that is truncated, names a link the fabric
// lacks, names a link this rank holds neither end of, or lands in a
// partition this rank does not run is an error on the
// rank that receives it, never a write anywhere.
TEST(RankRun, ABrokenFrameFromAnotherRankIsRefused) {
  Scenario scenario = example("allreduce_3_tier.toml");
  Partitioning partitioning = partition_fabric(scenario.topology, 2);
  SimWorld first, second;
  std::vector<SimWorld*> parts{&first, &second};
  BrokenPeer builder(Bytes{});  // rank 0 of 2 builds partition 0's nodes
  Fabric fabric(parts, partitioning, scenario.topology, scenario.switches, scenario.engine, scenario.seed, builder,
                {0, 1});
  constexpr std::size_t kFrame = sizeof(std::uint32_t) + sizeof(Packet) - offsetof(Packet, arrives_at);
  auto frame_on = [&](std::uint32_t link) {
    Bytes bytes(kFrame, std::byte{0});
    std::memcpy(bytes.data(), &link, sizeof link);
    return bytes;
  };
  // A link from partition 0 into partition 1: rank 1's to land. A link
  // inside partition 1: rank 0 holds neither end.
  std::uint32_t into_rank_1 = fabric.link_count(), inside_rank_1 = fabric.link_count();
  for (std::uint32_t id = 0; id < fabric.link_count(); ++id) {
    if (fabric.link(id) != nullptr && fabric.link(id)->far_part() == 1) into_rank_1 = id;
    if (fabric.link(id) == nullptr) inside_rank_1 = id;
  }
  ASSERT_LT(into_rank_1, fabric.link_count());
  ASSERT_LT(inside_rank_1, fabric.link_count());
  const std::pair<Bytes, std::string> cases[] = {
      {Bytes(kFrame - 1), "truncated"},
      {frame_on(fabric.link_count()), "no such link"},
      {frame_on(into_rank_1), "does not run"},
      {frame_on(inside_rank_1), "no node this rank holds"},
  };
  for (const auto& [bytes, expected] : cases) {
    BrokenPeer peer(bytes);
    RankFrames frames(peer, fabric, parts, {0, 1});
    try {
      frames.exchange(0);
      ADD_FAILURE() << "accepted a frame that is " << expected;
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }
}

// Over ranks each rank builds only its own partitions' nodes, and of the
// links only those that touch them (the far side of a link into its nodes
// lands what another rank sends on it); every handler it makes has the
// number one process gives it, and every node is built on exactly one rank.
TEST(RankRun, EachRankBuildsOnlyItsOwnPartitions) {
  Scenario scenario = example("allreduce_3_tier.toml");
  const Topology& topology = scenario.topology;
  Partitioning partitioning = partition_fabric(topology, 3);
  ASSERT_EQ(partitioning.parts, 3u);
  std::vector<std::unique_ptr<SimWorld>> worlds;
  std::vector<SimWorld*> parts;
  for (std::uint32_t p = 0; p < 3; ++p) parts.push_back(worlds.emplace_back(std::make_unique<SimWorld>()).get());
  std::uint32_t first = EventHandler::ids_made();
  Fabric whole(parts, partitioning, topology, scenario.switches, scenario.engine, scenario.seed);
  std::uint32_t handlers = EventHandler::ids_made() - first;

  testing_support::ThreadRanks group(3);
  std::vector<std::vector<bool>> held(3);
  std::vector<std::vector<bool>> links(3);
  std::vector<std::uint32_t> made(3);
  std::vector<std::vector<std::uint32_t>> rkeys(3);
  {
    std::vector<std::jthread> threads;
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
      threads.emplace_back([&, rank] {
        std::uint32_t start = EventHandler::ids_made();
        Fabric mine(parts, partitioning, topology, scenario.switches, scenario.engine, scenario.seed,
                    group.member(rank), {0, 1, 2});
        made[rank] = EventHandler::ids_made() - start;
        for (std::uint32_t h = 0; h < topology.hosts; ++h) {
          held[rank].push_back(mine.holds(NodeRef{true, h}));
          rkeys[rank].push_back(mine.rkey_of(h));
        }
        for (std::uint32_t s = 0; s < topology.switches; ++s) held[rank].push_back(mine.holds(NodeRef{false, s}));
        for (std::uint32_t id = 0; id < mine.link_count(); ++id) links[rank].push_back(mine.link(id) != nullptr);
      });
    }
  }
  auto part_of = [&](std::size_t node) {
    return node < topology.hosts ? partitioning.host_part[node] : partitioning.switch_part[node - topology.hosts];
  };
  std::uint32_t built = 0;
  for (std::uint32_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(made[rank], handlers) << "rank " << rank << " numbers its handlers as one process does";
    for (std::size_t node = 0; node < held[rank].size(); ++node) {
      EXPECT_EQ(held[rank][node], part_of(node) == rank) << "rank " << rank << ", node " << node;
      built += held[rank][node] ? 1u : 0u;
    }
    for (std::uint32_t h = 0; h < topology.hosts; ++h) EXPECT_EQ(rkeys[rank][h], whole.rkey_of(h));
    for (std::size_t e = 0; e < topology.edges.size(); ++e) {
      const TopologyEdge& edge = topology.edges[e];
      auto node_index = [&](NodeRef node) { return node.is_host ? node.index : topology.hosts + node.index; };
      bool touches = part_of(node_index(edge.a)) == rank || part_of(node_index(edge.b)) == rank;
      EXPECT_EQ(links[rank][2 * e], touches) << "rank " << rank << ", edge " << e;
      EXPECT_EQ(links[rank][2 * e + 1], touches) << "rank " << rank << ", edge " << e;
    }
  }
  EXPECT_EQ(built, topology.hosts + topology.switches);
  std::set<std::uint32_t> ranks_with_nodes;
  for (std::uint32_t p : partitioning.host_part) ranks_with_nodes.insert(p);
  EXPECT_EQ(ranks_with_nodes.size(), 3u);
}

}  // namespace
}  // namespace uroce::sim
