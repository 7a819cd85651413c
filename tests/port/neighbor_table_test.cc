// The raw port's neighbour table: datagrams wait for an address to resolve,
// in order and bounded; ARP requests for one address are rate-limited; a
// flood of ARP requests from made-up senders cannot grow the table.
#include <gtest/gtest.h>

#include "port/neighbor_table.h"

namespace uroce::port {
namespace {

TEST(NeighborTable, HoldsDatagramsUntilTheAddressResolves) {
  NeighborTable table;
  Ipv4Address peer{10, 0, 0, 2};
  EXPECT_EQ(table.find(peer), nullptr);
  EXPECT_FALSE(table.knows(peer));
  std::vector<std::uint8_t> first{1, 2, 3}, second{4, 5};
  EXPECT_TRUE(table.hold(peer, first, 1000).send_request);
  EXPECT_FALSE(table.hold(peer, second, 2000).send_request);  // one request per interval
  EXPECT_TRUE(table.knows(peer));
  auto released = table.learn(peer, {2, 0, 0, 0, 0, 2});
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released[0], first);
  EXPECT_EQ(released[1], second);
  ASSERT_NE(table.find(peer), nullptr);
  EXPECT_EQ(*table.find(peer), (wire::MacAddress{2, 0, 0, 0, 0, 2}));
  EXPECT_TRUE(table.learn(peer, {2, 0, 0, 0, 0, 3}).empty());  // a new MAC replaces the old
  EXPECT_EQ((*table.find(peer))[5], 3);
}

TEST(NeighborTable, RepeatsRequestsAfterTheIntervalAndDropsTheOldestBeyondTheLimit) {
  NeighborTable table({.held_per_neighbor = 2, .request_interval_ns = 100});
  Ipv4Address peer{10, 0, 0, 3};
  std::vector<std::uint8_t> a{1}, b{2}, c{3};
  EXPECT_TRUE(table.hold(peer, a, 0).send_request);
  EXPECT_FALSE(table.hold(peer, b, 50).dropped_oldest);
  NeighborTable::HoldResult third = table.hold(peer, c, 150);
  EXPECT_TRUE(third.send_request);
  EXPECT_TRUE(third.dropped_oldest);
  auto released = table.learn(peer, {2, 0, 0, 0, 0, 3});
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released[0], b);
  EXPECT_EQ(released[1], c);
}

// What an ARP flood for our address with a million made-up senders would
// have the raw port learn: the table stops at its bound, and a real peer,
// being resolved because we hold datagrams for it, still resolves.
TEST(NeighborTable, UnsolicitedSendersStopAtTheBound) {
  NeighborTable table({.max_entries = 1024});
  Ipv4Address peer{10, 0, 0, 2};
  std::vector<std::uint8_t> waiting{9};
  table.hold(peer, waiting, 0);
  for (std::uint32_t i = 0; i < 1'000'000; ++i) {
    Ipv4Address made_up{11, static_cast<std::uint8_t>(i >> 16), static_cast<std::uint8_t>(i >> 8),
                        static_cast<std::uint8_t>(i)};
    table.learn(made_up, {2, 0, 0, 0, 0, 9});
  }
  EXPECT_EQ(table.size(), 1024u);
  auto released = table.learn(peer, {2, 0, 0, 0, 0, 2});
  ASSERT_EQ(released.size(), 1u);
  ASSERT_NE(table.find(peer), nullptr);
}

}  // namespace
}  // namespace uroce::port
