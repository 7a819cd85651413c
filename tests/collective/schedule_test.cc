// Collective schedules, checked by running them on a symbolic model of the
// ranks' buffers: each byte range holds the contributions it has summed (a
// count per rank) or, for all-to-all, where its data came from. A schedule is
// right when every all-reduce buffer holds each rank's contribution exactly
// once, a reduce-scatter rank its own chunk so, an all-gather rank every
// rank's chunk, and all-to-all rank q in slot p what rank p meant for q.
// Also: steps line up across ranks, each rank sends what nccl-tests' bus
// factor says it must, and what cannot be built is refused with a reason.
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collective/schedule.h"

namespace uroce::collective {
namespace {

// The symbolic buffers, at chunk granularity (bytes = ranks x kChunk, so
// every transfer covers whole chunks).
constexpr std::uint64_t kChunk = 1000;
using Counts = std::vector<int>;  // per contributing rank

struct Model {
  std::uint32_t n;
  std::vector<std::vector<Counts>> chunks;  // [rank][chunk]

  Model(std::uint32_t ranks, Operation operation) : n(ranks), chunks(ranks, std::vector<Counts>(ranks, Counts(ranks, 0))) {
    for (std::uint32_t r = 0; r < n; ++r) {
      for (std::uint32_t c = 0; c < n; ++c) {
        // An all-gather rank starts with its own chunk only; the others with all of theirs.
        if (operation != Operation::all_gather || c == r) chunks[r][c][r] = 1;
      }
    }
  }
};

// Runs the schedule step by step: every transfer of a step reads the
// sender's buffer as the step began; a reducing step adds what arrives, a
// gathering one copies it over. All-to-all is out of place, as nccl's: it
// reads a send buffer that nothing writes and writes a receive buffer.
Model run(const Schedule& schedule, const std::vector<bool>& reducing_step) {
  std::uint32_t n = schedule.rank_count();
  Model model(n, schedule.operation);
  const Model send_buffer = model;
  for (std::size_t s = 0; s < schedule.steps(); ++s) {
    Model before = schedule.operation == Operation::alltoall ? send_buffer : model;
    for (std::uint32_t r = 0; r < n; ++r) {
      for (const Transfer& transfer : schedule.ranks[r][s].sends) {
        EXPECT_EQ(transfer.offset % kChunk, 0u);
        EXPECT_EQ(transfer.bytes % kChunk, 0u);
        for (std::uint64_t i = 0; i < transfer.bytes / kChunk; ++i) {
          const Counts& sent = before.chunks[r][transfer.offset / kChunk + i];
          Counts& into = model.chunks[transfer.to][transfer.remote_offset / kChunk + i];
          for (std::uint32_t k = 0; k < n; ++k) into[k] = reducing_step[s] ? into[k] + sent[k] : sent[k];
        }
      }
    }
  }
  return model;
}

std::vector<bool> phases(std::size_t reducing, std::size_t gathering) {
  std::vector<bool> steps(reducing, true);
  steps.resize(reducing + gathering, false);
  return steps;
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
  auto schedule = make_schedule(Operation::all_reduce, algorithm, n, n * kChunk);
  ASSERT_TRUE(schedule) << schedule.error();
  expect_steps_line_up(*schedule);
  std::size_t half = schedule->steps() / 2;
  EXPECT_EQ(schedule->steps(), algorithm == Algorithm::ring ? 2 * (n - 1) : 2 * static_cast<std::size_t>(std::countr_zero(n)));
  Model model = run(*schedule, phases(half, half));
  for (std::uint32_t r = 0; r < n; ++r) {
    for (std::uint32_t c = 0; c < n; ++c) EXPECT_EQ(model.chunks[r][c], Counts(n, 1)) << "rank " << r << " chunk " << c;
  }
  expect_each_rank_sends(*schedule, 2.0 * (n - 1) / n);
}

INSTANTIATE_TEST_SUITE_P(Schedules, AllReduce,
                         ::testing::Values(std::tuple{Algorithm::ring, 2u}, std::tuple{Algorithm::ring, 5u},
                                           std::tuple{Algorithm::ring, 16u}, std::tuple{Algorithm::halving_doubling, 2u},
                                           std::tuple{Algorithm::halving_doubling, 8u},
                                           std::tuple{Algorithm::halving_doubling, 32u}));

class ReduceScatterAndAllGather : public ::testing::TestWithParam<std::tuple<Algorithm, std::uint32_t>> {};

TEST_P(ReduceScatterAndAllGather, EachRankEndsWithItsShare) {
  auto [algorithm, n] = GetParam();
  auto scatter = make_schedule(Operation::reduce_scatter, algorithm, n, n * kChunk);
  ASSERT_TRUE(scatter) << scatter.error();
  expect_steps_line_up(*scatter);
  Model reduced = run(*scatter, phases(scatter->steps(), 0));
  // Every rank ends with one chunk fully reduced, and no two ranks the same one.
  std::vector<int> owners(n, 0);
  for (std::uint32_t r = 0; r < n; ++r) {
    int complete = 0;
    for (std::uint32_t c = 0; c < n; ++c) {
      if (reduced.chunks[r][c] == Counts(n, 1)) {
        ++complete;
        ++owners[c];
      }
    }
    EXPECT_EQ(complete, 1) << "rank " << r;
  }
  EXPECT_EQ(owners, std::vector<int>(n, 1));
  expect_each_rank_sends(*scatter, static_cast<double>(n - 1) / n);

  auto gather = make_schedule(Operation::all_gather, algorithm, n, n * kChunk);
  ASSERT_TRUE(gather) << gather.error();
  expect_steps_line_up(*gather);
  Model gathered = run(*gather, phases(0, gather->steps()));
  for (std::uint32_t r = 0; r < n; ++r) {
    for (std::uint32_t c = 0; c < n; ++c) {
      Counts only_c(n, 0);
      only_c[c] = 1;
      EXPECT_EQ(gathered.chunks[r][c], only_c) << "rank " << r << " chunk " << c;
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
      auto schedule = make_schedule(Operation::alltoall, algorithm, n, n * kChunk);
      ASSERT_TRUE(schedule) << schedule.error();
      expect_steps_line_up(*schedule);
      EXPECT_EQ(schedule->steps(), algorithm == Algorithm::direct ? 1u : n - 1);
      // Model: rank p's chunk q is marked "from p for q" (count 1 at p, and q known by position).
      Model model = run(*schedule, std::vector<bool>(schedule->steps(), false));
      for (std::uint32_t q = 0; q < n; ++q) {
        for (std::uint32_t p = 0; p < n; ++p) {
          Counts from_p(n, 0);
          from_p[p] = 1;
          EXPECT_EQ(model.chunks[q][p], from_p) << "rank " << q << " slot " << p;
        }
      }
      expect_each_rank_sends(*schedule, static_cast<double>(n - 1) / n);
    }
  }
}

TEST(Schedules, WhatCannotBeBuiltIsRefusedWithAReason) {
  auto one = make_schedule(Operation::all_reduce, Algorithm::ring, 1, 100);
  ASSERT_FALSE(one);
  EXPECT_NE(one.error().find("2 to 65536 ranks"), std::string::npos) << one.error();
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
