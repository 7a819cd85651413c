// Completion queue ring: order, wrap-around and loud overflow.
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

}  // namespace
}  // namespace uroce::verbs
