// UD: datagrams to address handles, the Q_Key check, the GRH area in front of
// the payload, and what is dropped (no receive posted, wrong Q_Key).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kQkey = 0x11111111;
constexpr TimeNs kSecond = 1'000'000'000;

struct UdEnd {
  Endpoint end;
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(8192);
  MrKeys keys;
};

UdEnd make_ud(Engine& engine, std::uint32_t qkey) {
  UdEnd ud;
  ud.end = make_ud_qp(engine, qkey);
  ud.keys = *engine.reg_mr(ud.end.pd, ud.buffer.data(), ud.buffer.size(), kAccessLocalWrite);
  return ud;
}

class Ud : public ::testing::Test {
 protected:
  void SetUp() override {
    Engine& a = network_.add_engine();
    Engine& b = network_.add_engine();
    sender_ = make_ud(a, kQkey);
    receiver_ = make_ud(b, kQkey);
    AddressVector av;
    av.dgid = b.gid();
    ah_ = *a.create_ah(sender_.end.pd, av);
    for (std::size_t i = 0; i < 4096; ++i) sender_.buffer[i] = static_cast<std::uint8_t>(i + 3);
  }

  void post_receive(std::uint32_t length) {
    Sge sge{reinterpret_cast<std::uintptr_t>(receiver_.buffer.data()), length, receiver_.keys.lkey};
    ASSERT_EQ(receiver_.end.engine->post_recv(receiver_.end.qpn, RecvWr{42, {&sge, 1}}), std::errc{});
  }

  std::errc send(std::uint32_t length, std::uint32_t qkey, WrOpcode opcode = WrOpcode::send_with_imm) {
    sge_ = Sge{reinterpret_cast<std::uintptr_t>(sender_.buffer.data()), length, sender_.keys.lkey};
    SendWr wr;
    wr.wr_id = 7;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge_, 1};
    wr.imm_data = 0xCAFE;
    wr.ud = {ah_, receiver_.end.qpn, qkey};
    return sender_.end.engine->post_send(sender_.end.qpn, wr);
  }

  void settle() { network_.run_until([] { return false; }, network_.now() + kSecond); }

  TestNetwork network_{5, ChannelFaults{}};
  UdEnd sender_, receiver_;
  std::uint32_t ah_ = 0;
  Sge sge_;
};

TEST_F(Ud, DatagramArrivesAfterTheGrhArea) {
  post_receive(kGrhLength + 1000);
  ASSERT_EQ(send(1000, kQkey), std::errc{});
  settle();
  auto sent = drain(sender_.end);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::success);
  auto received = drain(receiver_.end);
  ASSERT_EQ(received.size(), 1u);
  const WorkCompletion& wc = received[0];
  EXPECT_EQ(wc.status, WcStatus::success);
  EXPECT_EQ(wc.byte_len, kGrhLength + 1000);
  EXPECT_EQ(wc.src_qp, sender_.end.qpn);
  EXPECT_EQ(wc.wc_flags & (kWcGrh | kWcWithImm), kWcGrh | kWcWithImm);
  EXPECT_EQ(wc.imm_data, 0xCAFEu);
  // IPv4: 20 zero bytes, then the IPv4 header with the sender's address.
  EXPECT_TRUE(std::all_of(receiver_.buffer.begin(), receiver_.buffer.begin() + 20, [](std::uint8_t b) { return b == 0; }));
  EXPECT_EQ(receiver_.buffer[20], 0x45);
  EXPECT_EQ(receiver_.buffer[20 + 12], 10);
  EXPECT_EQ(receiver_.buffer[20 + 15], 1);
  EXPECT_TRUE(std::equal(sender_.buffer.begin(), sender_.buffer.begin() + 1000, receiver_.buffer.begin() + kGrhLength));
}

TEST_F(Ud, WrongQkeyAndMissingReceiveAreDropped) {
  ASSERT_EQ(send(100, kQkey), std::errc{});  // no receive posted
  settle();
  post_receive(kGrhLength + 100);
  ASSERT_EQ(send(100, kQkey + 1), std::errc{});  // wrong Q_Key
  settle();
  EXPECT_TRUE(drain(receiver_.end).empty());
  EXPECT_EQ(receiver_.end.engine->counters().dropped_messages, 1u);  // no receive
  EXPECT_EQ(receiver_.end.engine->counters().qkey_mismatches, 1u);   // dropped on arrival
  // The top bit asks for the sender QP's own Q_Key, which matches.
  ASSERT_EQ(send(100, 0x80000000u), std::errc{});
  settle();
  EXPECT_EQ(drain(receiver_.end).size(), 1u);
}

TEST_F(Ud, BufferWithoutRoomForTheGrhIsALengthError) {
  post_receive(100);
  ASSERT_EQ(send(100, kQkey), std::errc{});
  settle();
  auto received = drain(receiver_.end);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].status, WcStatus::loc_len_err);
}

TEST_F(Ud, OnlySendsOfAtMostOneMtuToAKnownAddressHandle) {
  EXPECT_EQ(send(4097, kQkey), std::errc::invalid_argument);
  EXPECT_EQ(send(8, kQkey, WrOpcode::rdma_write), std::errc::invalid_argument);
  ah_ += 100;
  EXPECT_EQ(send(8, kQkey), std::errc::invalid_argument);
}

}  // namespace
}  // namespace uroce::testing

namespace uroce::testing {
namespace {

// The General Services QP: number 1 on each engine, a UD QP with the CM's
// Q_Key; a MAD from one engine's QP 1 arrives at the other's from QP 1.
TEST(GsiQp, IsNumberOneOncePerEngineAndCarriesMadsBetweenEngines) {
  constexpr std::uint32_t kGsiQkey = 0x80010000;
  TestNetwork network{9, ChannelFaults{}};
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  UdEnd ends[2];
  for (int i = 0; i < 2; ++i) {
    Engine& engine = i == 0 ? a : b;
    ends[i].end = make_ud_qp(engine, kGsiQkey, /*gsi=*/true);
    ends[i].keys = *engine.reg_mr(ends[i].end.pd, ends[i].buffer.data(), ends[i].buffer.size(), kAccessLocalWrite);
    EXPECT_EQ(ends[i].end.qpn, 1u);
  }
  QpInitAttr again;
  again.qp_type = QpType::ud;
  again.gsi = true;
  again.pd = ends[0].end.pd;
  again.send_cq = again.recv_cq = ends[0].end.cq;
  EXPECT_EQ(a.create_qp(again).error(), std::errc::device_or_resource_busy);
  again.qp_type = QpType::rc;
  EXPECT_EQ(a.create_qp(again).error(), std::errc::invalid_argument);

  Sge receive{reinterpret_cast<std::uintptr_t>(ends[1].buffer.data()), kGrhLength + 256, ends[1].keys.lkey};
  ASSERT_EQ(b.post_recv(1, RecvWr{5, {&receive, 1}}), std::errc{});
  std::fill_n(ends[0].buffer.begin(), 256, std::uint8_t{0x07});
  Sge mad{reinterpret_cast<std::uintptr_t>(ends[0].buffer.data()), 256, ends[0].keys.lkey};
  AddressVector av;
  av.dgid = b.gid();
  SendWr wr;
  wr.opcode = WrOpcode::send;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&mad, 1};
  wr.ud = {*a.create_ah(ends[0].end.pd, av), 1, kGsiQkey};
  ASSERT_EQ(a.post_send(1, wr), std::errc{});
  network.run_until([] { return false; }, network.now() + 1'000'000'000);
  auto received = drain(ends[1].end);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].status, WcStatus::success);
  EXPECT_EQ(received[0].src_qp, 1u);
  EXPECT_EQ(received[0].byte_len, kGrhLength + 256);
  EXPECT_EQ(ends[1].buffer[kGrhLength + 255], 0x07);
}

}  // namespace
}  // namespace uroce::testing
