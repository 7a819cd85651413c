// PSN arithmetic across the 2^24 wrap.
#include <gtest/gtest.h>

#include "transport/psn.h"

namespace uroce::transport {
namespace {

TEST(Psn, AddWraps) {
  EXPECT_EQ(psn_add(0xFFFFFF, 1), 0u);
  EXPECT_EQ(psn_add(0, -1), 0xFFFFFFu);
  EXPECT_EQ(psn_add(0xFFFFF0, 0x20), 0x10u);
}

TEST(Psn, DiffAndOrderAcrossWrap) {
  EXPECT_EQ(psn_diff(5, 3), 2);
  EXPECT_EQ(psn_diff(3, 5), -2);
  EXPECT_EQ(psn_diff(0x000002, 0xFFFFFE), 4);
  EXPECT_EQ(psn_diff(0xFFFFFE, 0x000002), -4);
  EXPECT_TRUE(psn_before(0xFFFFFF, 0));
  EXPECT_FALSE(psn_before(0, 0xFFFFFF));
  EXPECT_TRUE(psn_at_or_before(7, 7));
  EXPECT_EQ(psn_diff(0x800000, 0), 0x800000);
  EXPECT_EQ(psn_diff(0x800001, 0), -0x7FFFFF);
}

// IBTA: a message is one packet per path MTU of payload, and an empty
// message is one packet (a zero-length SEND, WRITE or READ still has a PSN).
TEST(Psn, AMessageTakesOnePsnPerMtuAndAnEmptyOneTakesOne) {
  EXPECT_EQ(packets_for(0, 1024), 1u);
  EXPECT_EQ(packets_for(1, 1024), 1u);
  EXPECT_EQ(packets_for(1024, 1024), 1u);
  EXPECT_EQ(packets_for(1025, 1024), 2u);
  EXPECT_EQ(packets_for(std::uint64_t{1} << 31, 4096), 524288u);
}

}  // namespace
}  // namespace uroce::transport
