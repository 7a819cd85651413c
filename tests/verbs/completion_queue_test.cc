// Completion queue ring: order, wrap-around, loud overflow, dropping a
// destroyed QP's completions and resizing with completions waiting.
#include <gtest/gtest.h>

#include <array>

#include "verbs/completion_queue.h"

namespace uroce::verbs {
namespace {

TEST(CompletionQueue, PollsInOrderAcrossWrapAround) {
  CompletionQueue cq(4);
  std::uint64_t next_in = 0, next_out = 0;
  std::array<WorkCompletion, 3> out;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = next_in++}));
    std::size_t n = cq.poll(out);
    ASSERT_EQ(n, 3u);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i].wr_id, next_out++);
  }
  EXPECT_TRUE(cq.empty());
  EXPECT_FALSE(cq.overflowed());
}

TEST(CompletionQueue, OverflowIsRefusedAndRemembered) {
  CompletionQueue cq(2);
  EXPECT_TRUE(cq.push({}));
  EXPECT_TRUE(cq.push({}));
  EXPECT_FALSE(cq.push({}));
  EXPECT_TRUE(cq.overflowed());
  EXPECT_EQ(cq.size(), 2u);
}

TEST(CompletionQueue, DiscardingAQpKeepsTheOthersInOrderAcrossWrapAround) {
  CompletionQueue cq(6);
  std::array<WorkCompletion, 6> out;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = 100}));
  ASSERT_EQ(cq.poll(std::span(out).first(4)), 4u);  // the ring's head is now past its start
  for (std::uint64_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = i, .qp_num = static_cast<std::uint32_t>(i % 2 == 0 ? 7 : 9)}));
  }
  EXPECT_TRUE(cq.holds(7));
  EXPECT_EQ(cq.discard_qp(7), 3u);
  EXPECT_FALSE(cq.holds(7));
  EXPECT_TRUE(cq.holds(9));
  EXPECT_EQ(cq.discard_qp(8), 0u);
  ASSERT_EQ(cq.size(), 3u);
  ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = 6, .qp_num = 9}));
  ASSERT_EQ(cq.poll(out), 4u);
  EXPECT_EQ(out[0].wr_id, 1u);
  EXPECT_EQ(out[1].wr_id, 3u);
  EXPECT_EQ(out[2].wr_id, 5u);
  EXPECT_EQ(out[3].wr_id, 6u);
}

// ibv_resize_cq: up and down across a wrapped ring, the waiting completions
// kept in order; never below their number.
TEST(CompletionQueue, ResizingKeepsWaitingCompletionsInOrder) {
  CompletionQueue cq(8);
  std::array<WorkCompletion, 8> out;
  for (std::uint64_t i = 0; i < 6; ++i) ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = i}));
  ASSERT_EQ(cq.poll(std::span(out).first(4)), 4u);
  for (std::uint64_t i = 6; i < 10; ++i) ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = i}));  // wraps
  EXPECT_FALSE(cq.resize(5));  // six wait
  EXPECT_EQ(cq.capacity(), 8u);
  ASSERT_TRUE(cq.resize(6));
  EXPECT_FALSE(cq.push(WorkCompletion{.wr_id = 99}));  // full at its new depth
  cq = CompletionQueue(8);
  for (std::uint64_t i = 0; i < 6; ++i) ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = i}));
  ASSERT_EQ(cq.poll(std::span(out).first(4)), 4u);
  for (std::uint64_t i = 6; i < 10; ++i) ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = i}));
  ASSERT_TRUE(cq.resize(100));
  for (std::uint64_t i = 10; i < 100; ++i) ASSERT_TRUE(cq.push(WorkCompletion{.wr_id = i}));
  EXPECT_FALSE(cq.overflowed());
  std::uint64_t next = 4;
  while (!cq.empty()) {
    std::size_t n = cq.poll(out);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i].wr_id, next++);
  }
  EXPECT_EQ(next, 100u);
  EXPECT_FALSE(cq.resize(0));
}

}  // namespace
}  // namespace uroce::verbs
