// Collective schedules, checked by running them on a symbolic model of the
// ranks' buffers: each byte range holds the contributions it has summed (a
// count per rank) or, for all-to-all, where its data came from. A schedule is
// right when every all-reduce buffer holds each rank's contribution exactly
// once, a reduce-scatter rank its own chunk so, an all-gather rank every
// rank's chunk, and all-to-all rank q in slot p what rank p meant for q.
// Also: steps line up across ranks, each rank sends what nccl-tests' bus
// factor says it must, NCCL's rings and trees over servers keep to the
// network as NCCL's do, and what cannot be built is refused with a reason.
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collective/rank_layout.h"
#include "collective/schedule.h"

namespace uroce::collective {
namespace {

// The symbolic buffers, in units of kUnit bytes; a rank's chunk (bytes /
// ranks) is kUnitsPerChunk units, and so is a tree's piece times ranks / 16.
// Sizes are bytes_for(n), so that every transfer covers whole units.
constexpr std::uint64_t kUnit = 10;
constexpr std::uint64_t kUnitsPerChunk = 2 * kTreeChunks;
std::uint64_t bytes_for(std::uint32_t ranks) { return ranks * kUnitsPerChunk * kUnit; }
using Counts = std::vector<int>;  // per contributing rank

struct Model {
  std::uint32_t n;
  std::vector<std::vector<Counts>> units;  // [rank][unit]

  Model(std::uint32_t ranks, Operation operation)
      : n(ranks), units(ranks, std::vector<Counts>(ranks * kUnitsPerChunk, Counts(ranks, 0))) {
    for (std::uint32_t r = 0; r < n; ++r) {
      for (std::uint64_t u = 0; u < units[r].size(); ++u) {
        // An all-gather rank starts with its own chunk only; the others with all of theirs.
        if (operation != Operation::all_gather || u / kUnitsPerChunk == r) units[r][u][r] = 1;
      }
    }
  }
  // What rank r's chunk c holds, if all its units agree (else an empty Counts).
  Counts chunk(std::uint32_t r, std::uint32_t c) const {
    for (std::uint64_t u = c * kUnitsPerChunk + 1; u < (c + 1) * kUnitsPerChunk; ++u) {
      if (units[r][u] != units[r][c * kUnitsPerChunk]) return {};
    }
    return units[r][c * kUnitsPerChunk];
  }
};

// Runs the schedule step by step: every transfer of a step reads the
// sender's buffer as the step began; the receiver's step says whether what
// arrives is added (reduce) or copied over. All-to-all is out of place, as
// nccl's: it reads a send buffer that nothing writes and writes a receive buffer.
Model run(const Schedule& schedule) {
  std::uint32_t n = schedule.rank_count();
  Model model(n, schedule.operation);
  const Model send_buffer = model;
  for (std::size_t s = 0; s < schedule.steps(); ++s) {
    Model before = schedule.operation == Operation::alltoall ? send_buffer : model;
    for (std::uint32_t r = 0; r < n; ++r) {
      for (const Transfer& transfer : schedule.ranks[r][s].sends) {
        EXPECT_EQ(transfer.offset % kUnit, 0u);
        EXPECT_EQ(transfer.remote_offset % kUnit, 0u);
        EXPECT_EQ(transfer.bytes % kUnit, 0u);
        bool reduce = schedule.ranks[transfer.to][s].reduce;
        for (std::uint64_t i = 0; i < transfer.bytes / kUnit; ++i) {
          const Counts& sent = before.units[r][transfer.offset / kUnit + i];
          Counts& into = model.units[transfer.to][transfer.remote_offset / kUnit + i];
          for (std::uint32_t k = 0; k < n; ++k) into[k] = reduce ? into[k] + sent[k] : sent[k];
        }
      }
    }
  }
  return model;
}

void expect_steps_line_up(const Schedule& schedule) {
  std::uint32_t n = schedule.rank_count();
  for (std::uint32_t r = 0; r < n; ++r) ASSERT_EQ(schedule.ranks[r].size(), schedule.steps());
  for (std::size_t s = 0; s < schedule.steps(); ++s) {
    std::map<std::uint32_t, std::multiset<std::uint32_t>> arriving;  // receiver -> senders
    for (std::uint32_t r = 0; r < n; ++r) {
      for (const Transfer& transfer : schedule.ranks[r][s].sends) {
        ASSERT_LT(transfer.to, n);
        ASSERT_NE(transfer.to, r);
        arriving[transfer.to].insert(r);
      }
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      const auto& expected = schedule.ranks[r][s].receives_from;
      EXPECT_EQ(arriving[r], std::multiset<std::uint32_t>(expected.begin(), expected.end())) << "rank " << r << " step " << s;
    }
  }
}

void expect_each_rank_sends(const Schedule& schedule, double factor) {
  std::uint32_t n = schedule.rank_count();
  for (std::uint32_t r = 0; r < n; ++r) {
    EXPECT_DOUBLE_EQ(static_cast<double>(schedule.bytes_sent_by(r)), factor * static_cast<double>(schedule.bytes)) << r;
  }
  EXPECT_DOUBLE_EQ(factor, bus_factor(schedule.operation, n));
}

class AllReduce : public ::testing::TestWithParam<std::tuple<Algorithm, std::uint32_t>> {};

TEST_P(AllReduce, EveryBufferHoldsEveryContributionOnce) {
  auto [algorithm, n] = GetParam();
  auto schedule = make_schedule(Operation::all_reduce, algorithm, n, bytes_for(n));
  ASSERT_TRUE(schedule) << schedule.error();
  expect_steps_line_up(*schedule);
  std::size_t steps = schedule->steps();
  if (algorithm == Algorithm::ring) {
    EXPECT_EQ(steps, 2 * (n - 1));
  } else if (algorithm == Algorithm::halving_doubling) {
    EXPECT_EQ(steps, 2u * std::countr_zero(n));
  }
  Model model = run(*schedule);
  for (std::uint32_t r = 0; r < n; ++r) {
    for (std::uint32_t c = 0; c < n; ++c) EXPECT_EQ(model.chunk(r, c), Counts(n, 1)) << "rank " << r << " chunk " << c;
  }
  // A tree's inner nodes send more than its leaves; the others' ranks all move the same share.
  if (algorithm != Algorithm::double_binary_tree) expect_each_rank_sends(*schedule, 2.0 * (n - 1) / n);
}

INSTANTIATE_TEST_SUITE_P(Schedules, AllReduce,
                         ::testing::Values(std::tuple{Algorithm::ring, 2u}, std::tuple{Algorithm::ring, 5u},
                                           std::tuple{Algorithm::ring, 16u}, std::tuple{Algorithm::halving_doubling, 2u},
                                           std::tuple{Algorithm::halving_doubling, 8u},
                                           std::tuple{Algorithm::halving_doubling, 32u},
                                           std::tuple{Algorithm::double_binary_tree, 2u},
                                           std::tuple{Algorithm::double_binary_tree, 3u},
                                           std::tuple{Algorithm::double_binary_tree, 8u},
                                           std::tuple{Algorithm::double_binary_tree, 13u}));

class ReduceScatterAndAllGather : public ::testing::TestWithParam<std::tuple<Algorithm, std::uint32_t>> {};

TEST_P(ReduceScatterAndAllGather, EachRankEndsWithItsShare) {
  auto [algorithm, n] = GetParam();
  auto scatter = make_schedule(Operation::reduce_scatter, algorithm, n, bytes_for(n));
  ASSERT_TRUE(scatter) << scatter.error();
  expect_steps_line_up(*scatter);
  Model reduced = run(*scatter);
  // Every rank ends with one chunk fully reduced, and no two ranks the same one.
  std::vector<int> owners(n, 0);
  for (std::uint32_t r = 0; r < n; ++r) {
    int complete = 0;
    for (std::uint32_t c = 0; c < n; ++c) {
      if (reduced.chunk(r, c) == Counts(n, 1)) {
        ++complete;
        ++owners[c];
      }
    }
    EXPECT_EQ(complete, 1) << "rank " << r;
  }
  EXPECT_EQ(owners, std::vector<int>(n, 1));
  expect_each_rank_sends(*scatter, static_cast<double>(n - 1) / n);

  auto gather = make_schedule(Operation::all_gather, algorithm, n, bytes_for(n));
  ASSERT_TRUE(gather) << gather.error();
  expect_steps_line_up(*gather);
  Model gathered = run(*gather);
  for (std::uint32_t r = 0; r < n; ++r) {
    for (std::uint32_t c = 0; c < n; ++c) {
      Counts only_c(n, 0);
      only_c[c] = 1;
      EXPECT_EQ(gathered.chunk(r, c), only_c) << "rank " << r << " chunk " << c;
    }
  }
  expect_each_rank_sends(*gather, static_cast<double>(n - 1) / n);
}

INSTANTIATE_TEST_SUITE_P(Schedules, ReduceScatterAndAllGather,
                         ::testing::Values(std::tuple{Algorithm::ring, 3u}, std::tuple{Algorithm::ring, 8u},
                                           std::tuple{Algorithm::halving_doubling, 4u},
                                           std::tuple{Algorithm::halving_doubling, 16u}));

TEST(AllToAll, RankQHoldsInSlotPWhatRankPMeantForQ) {
  for (Algorithm algorithm : {Algorithm::direct, Algorithm::pairwise}) {
    for (std::uint32_t n : {2u, 3u, 8u}) {
      SCOPED_TRACE(std::string(to_string(algorithm)) + " " + std::to_string(n));
      auto schedule = make_schedule(Operation::alltoall, algorithm, n, bytes_for(n));
      ASSERT_TRUE(schedule) << schedule.error();
      expect_steps_line_up(*schedule);
      EXPECT_EQ(schedule->steps(), algorithm == Algorithm::direct ? 1u : n - 1);
      // Model: rank p's chunk q is marked "from p for q" (count 1 at p, and q known by position).
      Model model = run(*schedule);
      for (std::uint32_t q = 0; q < n; ++q) {
        for (std::uint32_t p = 0; p < n; ++p) {
          Counts from_p(n, 0);
          from_p[p] = 1;
          EXPECT_EQ(model.chunk(q, p), from_p) << "rank " << q << " slot " << p;
        }
      }
      expect_each_rank_sends(*schedule, static_cast<double>(n - 1) / n);
    }
  }
}

// NCCL's topology-aware rings and trees over servers (rank_layout.h): still
// right for every channel, a ring crossing between servers once per server
// and, with an even number of servers, always between GPUs of one rail; a
// tree whose servers are chains hanging from one GPU each.
TEST(OnServers, RingsAndTreesStayRightAndCrossTheNetworkAsLittleAsNcclsDo) {
  for (auto [gpus, servers] : {std::pair{2u, 2u}, std::pair{4u, 3u}, std::pair{8u, 2u}, std::pair{4u, 1u},
                               std::pair{2u, 4u}}) {
    std::uint32_t n = gpus * servers;
    for (std::uint32_t channel = 0; channel < gpus; ++channel) {
      RankLayout layout{gpus, channel};
      SCOPED_TRACE(std::to_string(servers) + " servers of " + std::to_string(gpus) + ", channel " +
                   std::to_string(channel));
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::double_binary_tree}) {
        auto schedule = make_schedule(Operation::all_reduce, algorithm, n, bytes_for(n), layout);
        ASSERT_TRUE(schedule) << schedule.error();
        expect_steps_line_up(*schedule);
        Model model = run(*schedule);
        for (std::uint32_t r = 0; r < n; ++r) {
          for (std::uint32_t c = 0; c < n; ++c) EXPECT_EQ(model.chunk(r, c), Counts(n, 1)) << r << " " << c;
        }
      }
      std::vector<std::uint32_t> order = ring_order(n, layout);
      EXPECT_EQ(std::set<std::uint32_t>(order.begin(), order.end()).size(), n);
      std::uint32_t crossings = 0;
      for (std::uint32_t p = 0; p < n; ++p) {
        std::uint32_t from = order[p], to = order[(p + 1) % n];
        if (from / gpus == to / gpus) continue;
        ++crossings;
        if (servers % 2 == 0) {
          EXPECT_EQ(from % gpus, to % gpus) << "rail change from " << from << " to " << to;
        }
      }
      EXPECT_EQ(crossings, servers == 1 ? 0 : servers);
      for (std::uint32_t tree = 0; tree < 2; ++tree) {
        std::vector<std::uint32_t> parent = tree_parents(n, layout, tree);
        std::uint32_t roots = 0;
        for (std::uint32_t s = 0; s < servers; ++s) {
          std::uint32_t heads = 0;  // members whose parent is on another server, or the root
          for (std::uint32_t g = 0; g < gpus; ++g) {
            std::uint32_t r = s * gpus + g;
            roots += parent[r] == r;
            heads += parent[r] == r || parent[r] / gpus != s;
          }
          EXPECT_EQ(heads, 1u);
        }
        EXPECT_EQ(roots, 1u);
      }
    }
  }
  auto split = make_schedule(Operation::all_reduce, Algorithm::ring, 6, 6000, RankLayout{4, 0});
  ASSERT_FALSE(split);
  EXPECT_NE(split.error().find("whole servers"), std::string::npos) << split.error();
}

// A simulator rank keeps only its members' steps; the step count and the
// smallest transfer, which every rank must agree on, stay those of all.
TEST(Schedules, ForgettingRanksKeepsTheTotalsOfAll) {
  auto schedule = make_schedule(Operation::all_reduce, Algorithm::ring, 4, 4000);
  ASSERT_TRUE(schedule) << schedule.error();
  std::size_t steps = schedule->steps();
  std::uint64_t smallest = schedule->smallest_transfer();
  std::vector<Step> kept = schedule->ranks[2];
  ASSERT_GT(steps, 0u);
  schedule->forget_ranks_except({false, false, true, false});
  EXPECT_EQ(schedule->steps(), steps);
  EXPECT_EQ(schedule->smallest_transfer(), smallest);
  EXPECT_TRUE(schedule->ranks[0].empty() && schedule->ranks[1].empty() && schedule->ranks[3].empty());
  ASSERT_EQ(schedule->ranks[2].size(), kept.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    ASSERT_EQ(schedule->ranks[2][i].sends.size(), kept[i].sends.size());
    for (std::size_t t = 0; t < kept[i].sends.size(); ++t) {
      EXPECT_EQ(schedule->ranks[2][i].sends[t].to, kept[i].sends[t].to);
      EXPECT_EQ(schedule->ranks[2][i].sends[t].bytes, kept[i].sends[t].bytes);
    }
  }
}

TEST(Schedules, WhatCannotBeBuiltIsRefusedWithAReason) {
  auto one = make_schedule(Operation::all_reduce, Algorithm::ring, 1, 100);
  ASSERT_FALSE(one);
  EXPECT_NE(one.error().find("2 to 1048576 ranks"), std::string::npos) << one.error();
  // A ring of 10,000 ranks would hold 200 million transfers; halving-doubling
  // over 131,072 ranks holds 4.5 million.
  auto huge_ring = make_schedule(Operation::all_reduce, Algorithm::ring, 10'000, 1 << 20);
  ASSERT_FALSE(huge_ring);
  EXPECT_NE(huge_ring.error().find("more than 2^26"), std::string::npos) << huge_ring.error();
  EXPECT_FALSE(make_schedule(Operation::alltoall, Algorithm::direct, 10'000, 1 << 30));
  EXPECT_TRUE(make_schedule(Operation::all_reduce, Algorithm::halving_doubling, 1 << 17, 1 << 18));
  auto odd = make_schedule(Operation::all_reduce, Algorithm::halving_doubling, 6, 6000);
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().find("power of two"), std::string::npos) << odd.error();
  auto mismatch = make_schedule(Operation::alltoall, Algorithm::ring, 4, 4000);
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.error().find("direct or pairwise"), std::string::npos) << mismatch.error();
  EXPECT_FALSE(make_schedule(Operation::all_gather, Algorithm::pairwise, 4, 4000));
  auto tiny = make_schedule(Operation::all_reduce, Algorithm::ring, 8, 7);
  ASSERT_FALSE(tiny);
  EXPECT_NE(tiny.error().find("a byte per rank"), std::string::npos) << tiny.error();
  EXPECT_FALSE(operation_from("allreduce"));
  EXPECT_EQ(*operation_from("all_gather"), Operation::all_gather);
  EXPECT_FALSE(algorithm_from("tree"));
  auto tree_gather = make_schedule(Operation::all_gather, Algorithm::double_binary_tree, 4, 4000);
  ASSERT_FALSE(tree_gather);
  EXPECT_NE(tree_gather.error().find("is an all-reduce"), std::string::npos) << tree_gather.error();
}

// Sizes that do not divide: the chunks still cover the buffer exactly.
TEST(Schedules, UnevenSizesAreCoveredExactly) {
  auto schedule = make_schedule(Operation::all_gather, Algorithm::ring, 7, 1'000'003);
  ASSERT_TRUE(schedule);
  std::uint64_t sent = 0;
  for (std::uint32_t r = 0; r < 7; ++r) sent += schedule->bytes_sent_by(r);
  EXPECT_EQ(sent, 6u * 1'000'003);  // every chunk reaches the 6 other ranks once
}

}  // namespace
}  // namespace uroce::collective
