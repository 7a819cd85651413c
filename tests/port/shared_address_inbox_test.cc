// The inboxes of an address shared by several devices on one host
// (port/local_ring.h): the holder's at the address's path, each later
// device's at the first free member place (.m1 to .m15), claimed
// exclusively; a place already taken is left alone (a failed claim once
// removed the file it found), and a place given back is taken again.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <optional>
#include <vector>

#include "port/local_ring.h"
#include "port/network_namespace.h"

namespace uroce::port {
namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

TEST(SharedAddressInbox, EachDeviceTakesTheFirstFreePlaceAndLeavesTheOthersAlone) {
  Gid gid = gid_from_ipv4({127, 0, 14, 1});
  std::string first = local_segment_path(gid, 4791, this_thread_network_namespace());
  auto holder = LocalInbox::create(gid, 4791);
  ASSERT_TRUE(holder) << holder.error();
  EXPECT_EQ(holder->member(), 0);
  std::vector<std::optional<LocalInbox>> members;
  for (std::uint8_t expected = 1; expected <= 3; ++expected) {
    auto member = LocalInbox::create_sharing(gid, 4791);
    ASSERT_TRUE(member) << member.error();
    EXPECT_EQ(member->member(), expected);
    members.emplace_back(std::move(*member));
  }
  for (std::uint8_t member = 0; member <= 3; ++member) {
    EXPECT_TRUE(local_segment_is_live(local_member_path(first, member))) << int{member};
  }
  members[0].reset();  // member 1 closes: its place is free again, the others' files stay
  EXPECT_FALSE(exists(local_member_path(first, 1)));
  EXPECT_TRUE(local_segment_is_live(local_member_path(first, 2)));
  auto again = LocalInbox::create_sharing(gid, 4791);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again->member(), 1);
  EXPECT_TRUE(local_segment_is_live(local_member_path(first, 2)));
  EXPECT_TRUE(local_segment_is_live(local_member_path(first, 3)));
}

TEST(SharedAddressInbox, FifteenMembersAtMostThenAClearError) {
  Gid gid = gid_from_ipv4({127, 0, 14, 2});
  auto holder = LocalInbox::create(gid, 4791);
  ASSERT_TRUE(holder) << holder.error();
  std::vector<LocalInbox> members;
  for (int i = 0; i < kQpnMembers - 1; ++i) {
    auto member = LocalInbox::create_sharing(gid, 4791);
    ASSERT_TRUE(member) << member.error();
    members.push_back(std::move(*member));
  }
  auto one_more = LocalInbox::create_sharing(gid, 4791);
  ASSERT_FALSE(one_more);
  EXPECT_NE(one_more.error().find("are taken"), std::string::npos) << one_more.error();
}

}  // namespace
}  // namespace uroce::port
