// UD multicast in the engine: every attached QP whose Q_Key matches gets its
// own copy of a datagram sent to the group, with the group as the GRH's
// destination; the rest of the engine sees nothing. Attach and detach
// refuse what IBTA and rdma-core refuse.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kQkey = 0x01234567;  // rdma_cm's UDP Q_Key
constexpr TimeNs kSecond = 1'000'000'000;
const Gid kGroup = gid_from_ipv4({239, 1, 2, 3});

struct Member {
  Endpoint end;
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(4096);
  MrKeys keys;

  Member(Engine& engine, std::uint32_t qkey, bool block_self = false)
      : end(make_ud_qp(engine, qkey, /*gsi=*/false, block_self)) {
    keys = *engine.reg_mr(end.pd, buffer.data(), buffer.size(), kAccessLocalWrite);
    for (std::uint64_t id = 0; id < 4; ++id) {
      Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data() + id * 1024), 1024, keys.lkey};
      if (end.engine->post_recv(end.qpn, RecvWr{id, {&sge, 1}}) != std::errc{}) throw std::runtime_error("post_recv");
    }
  }
  std::vector<WorkCompletion> receives() const {
    std::vector<WorkCompletion> found;
    for (const WorkCompletion& wc : drain(end)) {
      if (wc.opcode == WcOpcode::recv) found.push_back(wc);
    }
    return found;
  }
};

// 0xFFFFFF addresses a multicast group's members: no QP may have it. This
// seed's first QPN draw is 0xFFFFFF (a 4,096-NIC simulated all-reduce drew
// it once, and that QP's peer retried into silence).
TEST(MulticastQpn, IsNeverAQpsNumber) {
  EngineConfig config;
  config.seed = 0xeffe31229c552792ull;
  Engine engine(config);
  Endpoint end = make_ud_qp(engine, kQkey);
  EXPECT_NE(end.qpn, kMulticastQpn);
  EXPECT_GT(end.qpn, 1u);
}

class Multicast : public ::testing::Test {
 protected:
  TestNetwork network_{7, ChannelFaults{}};  // first: the engines below live in it
  Engine& a_ = network_.add_engine();
  Engine& b_ = network_.add_engine();
  Engine& c_ = network_.add_engine();

  // Sends 100 bytes (first byte `tag`) from member to the group.
  void send_to_group(Member& from, std::uint8_t tag) {
    from.buffer[3072] = tag;
    AddressVector av;
    av.dgid = kGroup;
    std::uint32_t ah = *from.end.engine->create_ah(from.end.pd, av);
    Sge sge{reinterpret_cast<std::uintptr_t>(from.buffer.data() + 3072), 100, from.keys.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::send;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.ud = {ah, kMulticastQpn, kQkey};
    ASSERT_EQ(from.end.engine->post_send(from.end.qpn, wr), std::errc{});
    network_.run_until([] { return false; }, network_.now() + kSecond);
  }
};

TEST_F(Multicast, EveryAttachedQpWithTheQkeyGetsACopy) {
  Member sender(a_, kQkey), first(b_, kQkey), second(b_, kQkey), third(c_, kQkey);
  Member bystander(c_, kQkey), wrong_qkey(c_, kQkey + 1);
  EXPECT_EQ(*a_.attach_multicast(sender.end.qpn, kGroup), true);
  EXPECT_EQ(*b_.attach_multicast(first.end.qpn, kGroup), true);
  EXPECT_EQ(*b_.attach_multicast(second.end.qpn, kGroup), false);  // the engine already had the group
  EXPECT_EQ(*c_.attach_multicast(third.end.qpn, kGroup), true);
  EXPECT_EQ(*c_.attach_multicast(wrong_qkey.end.qpn, kGroup), false);

  send_to_group(sender, 0x5A);

  for (Member* member : {&sender, &first, &second, &third}) {
    auto got = member->receives();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status, WcStatus::success);
    EXPECT_EQ(got[0].byte_len, kGrhLength + 100);
    EXPECT_EQ(got[0].src_qp, sender.end.qpn);
    EXPECT_EQ(got[0].qp_num, member->end.qpn);
    const std::uint8_t* grh = member->buffer.data() + got[0].wr_id * 1024;
    // The IPv4 header sits in the GRH's last 20 bytes: its destination is the group.
    EXPECT_EQ(grh[20 + 16], 239);
    EXPECT_EQ(grh[20 + 19], 3);
    EXPECT_EQ(grh[kGrhLength], 0x5A);
  }
  EXPECT_TRUE(bystander.receives().empty());
  EXPECT_TRUE(wrong_qkey.receives().empty());
  EXPECT_EQ(c_.counters().qkey_mismatches, 1u);
  EXPECT_EQ(c_.counters().multicast_received, 1u);
}

TEST_F(Multicast, BlockingSelfLoopbackSkipsOnlyTheSendersOwnQp) {
  Member sender(a_, kQkey, /*block_self=*/true), neighbour(a_, kQkey), remote(b_, kQkey);
  for (Member* member : {&sender, &neighbour, &remote}) {
    ASSERT_TRUE(member->end.engine->attach_multicast(member->end.qpn, kGroup).has_value());
  }
  send_to_group(sender, 1);
  EXPECT_TRUE(sender.receives().empty());
  EXPECT_EQ(neighbour.receives().size(), 1u);
  EXPECT_EQ(remote.receives().size(), 1u);
}

TEST_F(Multicast, DetachedAndDestroyedQpsReceiveNothing) {
  Member sender(a_, kQkey), leaving(b_, kQkey), staying(b_, kQkey);
  ASSERT_TRUE(b_.attach_multicast(leaving.end.qpn, kGroup).has_value());
  ASSERT_TRUE(b_.attach_multicast(staying.end.qpn, kGroup).has_value());
  EXPECT_EQ(*b_.detach_multicast(leaving.end.qpn, kGroup), false);  // one member left
  send_to_group(sender, 2);
  EXPECT_TRUE(leaving.receives().empty());
  EXPECT_EQ(staying.receives().size(), 1u);

  EXPECT_EQ(b_.multicast_groups_of(staying.end.qpn), std::vector<Gid>{kGroup});
  ASSERT_EQ(b_.destroy_qp(staying.end.qpn), std::errc{});
  EXPECT_TRUE(b_.multicast_groups_of(staying.end.qpn).empty());
  std::uint64_t unknown = b_.counters().unknown_qp_packets;
  send_to_group(sender, 3);
  EXPECT_EQ(b_.counters().unknown_qp_packets, unknown + 1);  // a group nobody here is in
}

TEST_F(Multicast, AttachAndDetachRefuseWhatIsNotAUdQpOrAGroup) {
  Member ud(a_, kQkey);
  auto [rc, peer] = connect_rc(a_, b_);
  EXPECT_EQ(a_.attach_multicast(rc.qpn, kGroup).error(), std::errc::invalid_argument);
  EXPECT_EQ(a_.attach_multicast(ud.end.qpn, gid_from_ipv4({10, 0, 0, 2})).error(), std::errc::invalid_argument);
  EXPECT_EQ(a_.attach_multicast(12345, kGroup).error(), std::errc::invalid_argument);
  EXPECT_EQ(a_.detach_multicast(ud.end.qpn, kGroup).error(), std::errc::invalid_argument);
  Gid ipv6_group{0xFF, 0x0E};
  EXPECT_EQ(*a_.attach_multicast(ud.end.qpn, ipv6_group), true);
  EXPECT_EQ(*a_.attach_multicast(ud.end.qpn, ipv6_group), false);  // again: no change
  EXPECT_EQ(*a_.detach_multicast(ud.end.qpn, ipv6_group), true);
  EXPECT_EQ(a_.detach_multicast(ud.end.qpn, ipv6_group).error(), std::errc::invalid_argument);
}

TEST(MulticastGid, IsIpv4MappedClassDOrIpv6Ff) {
  EXPECT_TRUE(gid_is_multicast(gid_from_ipv4({224, 0, 0, 1})));
  EXPECT_TRUE(gid_is_multicast(gid_from_ipv4({239, 255, 255, 255})));
  EXPECT_FALSE(gid_is_multicast(gid_from_ipv4({240, 0, 0, 1})));
  EXPECT_FALSE(gid_is_multicast(gid_from_ipv4({127, 0, 0, 1})));
  EXPECT_TRUE(gid_is_multicast(Gid{0xFF, 0x02}));
  EXPECT_FALSE(gid_is_multicast(Gid{0xFE, 0x80}));
}

}  // namespace
}  // namespace uroce::testing

namespace uroce::testing {
namespace {

// The limits ibv_query_device reports (Soft-RoCE's: 8192 groups, 56 QPs a
// group) are the engine's: beyond them attach is not_enough_memory (ENOMEM),
// and a refused attach leaves no group behind.
TEST(MulticastLimits, AttachBeyondTheReportedLimitsIsRefused) {
  EngineConfig config;
  config.attributes.max_mcast_grp = 2;
  config.attributes.max_mcast_qp_attach = 3;
  Engine engine(config);
  std::vector<Endpoint> qps;
  for (int i = 0; i < 4; ++i) qps.push_back(make_ud_qp(engine, kQkey));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(engine.attach_multicast(qps[i].qpn, kGroup).has_value());
  auto full = engine.attach_multicast(qps[3].qpn, kGroup);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error(), std::errc::not_enough_memory);
  const Gid second = gid_from_ipv4({239, 1, 2, 4}), third = gid_from_ipv4({239, 1, 2, 5});
  EXPECT_TRUE(engine.attach_multicast(qps[3].qpn, second).has_value());
  auto too_many = engine.attach_multicast(qps[3].qpn, third);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error(), std::errc::not_enough_memory);
  EXPECT_EQ(engine.multicast_groups_of(qps[3].qpn), std::vector<Gid>{second});
  // A group left makes room for another.
  EXPECT_TRUE(engine.detach_multicast(qps[3].qpn, second).has_value());
  EXPECT_TRUE(engine.attach_multicast(qps[3].qpn, third).has_value());
}

}  // namespace
}  // namespace uroce::testing
