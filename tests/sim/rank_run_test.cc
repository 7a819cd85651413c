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
// lacks, or lands in a partition this rank does not run is an error on the
// rank that receives it, never a write anywhere.
TEST(RankRun, ABrokenFrameFromAnotherRankIsRefused) {
  Scenario scenario = example("incast.toml");
  Partitioning partitioning = partition_fabric(scenario.topology, 2);
  SimWorld first, second;
  std::vector<SimWorld*> parts{&first, &second};
  Fabric fabric(parts, partitioning, scenario.topology, scenario.switches, scenario.engine, scenario.seed);
  constexpr std::size_t kFrame = sizeof(std::uint32_t) + sizeof(Packet) - offsetof(Packet, arrives_at);
  auto frame_on = [&](std::uint32_t link) {
    Bytes bytes(kFrame, std::byte{0});
    std::memcpy(bytes.data(), &link, sizeof link);
    return bytes;
  };
  // A link whose far end rank 1 runs (partition 1): not this rank's to land.
  std::uint32_t into_rank_1 = fabric.link_count();
  for (std::uint32_t id = 0; id < fabric.link_count(); ++id) {
    if (fabric.link(id)->far_part() == 1) into_rank_1 = id;
  }
  ASSERT_LT(into_rank_1, fabric.link_count());
  const std::pair<Bytes, std::string> cases[] = {
      {Bytes(kFrame - 1), "truncated"},
      {frame_on(fabric.link_count()), "no such link"},
      {frame_on(into_rank_1), "does not run"},
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

}  // namespace
}  // namespace uroce::sim
