// Shared receive queues: several QPs draw receives from one SRQ; a multi-packet
// SEND keeps its receive while packets of another QP's SEND interleave; a QP
// failing does not flush the SRQ that other QPs still use.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kSecond = 1'000'000'000;

// Connects a QP on `a` to a fresh QP on `b` that uses `srq`.
std::pair<Endpoint, std::uint32_t> connect_to_srq(Engine& a, Engine& b, std::uint32_t b_pd, std::uint32_t b_cq,
                                                 std::uint32_t srq) {
  // Make an ordinary pair, then a second QP on b with the SRQ, and rewire.
  Endpoint sender;
  sender.engine = &a;
  sender.pd = *a.alloc_pd();
  sender.cq = *a.create_cq(64);
  QpInitAttr init;
  init.pd = sender.pd;
  init.send_cq = init.recv_cq = sender.cq;
  init.cap = QpCap{16, 16, 1, 1, 64};
  sender.qpn = *a.create_qp(init);
  init.pd = b_pd;
  init.send_cq = init.recv_cq = b_cq;
  init.srq = srq;
  std::uint32_t receiver = *b.create_qp(init);
  struct Side {
    Engine* engine;
    std::uint32_t qpn;
    Engine* peer;
    std::uint32_t peer_qpn;
  } sides[2] = {{&a, sender.qpn, &b, receiver}, {&b, receiver, &a, sender.qpn}};
  for (const Side& side : sides) {
    QpAttr attr;
    attr.qp_state = QpState::init;
    attr.qp_access_flags = kAll;
    EXPECT_EQ(side.engine->modify_qp(side.qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags),
              std::errc{});
    attr.qp_state = QpState::rtr;
    attr.path_mtu = PathMtu::mtu1024;
    attr.dest_qp_num = side.peer_qpn;
    attr.max_dest_rd_atomic = 4;
    attr.min_rnr_timer = 1;
    attr.ah_attr.dgid = side.peer->gid();
    EXPECT_EQ(side.engine->modify_qp(side.qpn, attr,
                                     kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                                         kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer),
              std::errc{});
    attr.qp_state = QpState::rts;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.max_rd_atomic = 4;
    EXPECT_EQ(side.engine->modify_qp(side.qpn, attr,
                                     kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout | kQpAttrRetryCnt |
                                         kQpAttrRnrRetry | kQpAttrMaxQpRdAtomic),
              std::errc{});
  }
  return {sender, receiver};
}

TEST(SharedReceiveQueue, TwoQpsShareReceivesAndInterleavedSendsStayWhole) {
  ChannelFaults faults;
  faults.reorder = 0.0;
  TestNetwork network(9, faults);
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  std::uint32_t pd = *b.alloc_pd();
  std::uint32_t cq = *b.create_cq(64);
  std::uint32_t srq = *b.create_srq(pd, 16, 1);
  auto [first, first_receiver] = connect_to_srq(a, b, pd, cq, srq);
  auto [second, second_receiver] = connect_to_srq(a, b, pd, cq, srq);

  std::vector<std::uint8_t> target(4 * 4096, 0);
  MrKeys target_keys = *b.reg_mr(pd, target.data(), target.size(), kAll);
  std::vector<Sge> receive_sges;
  for (int i = 0; i < 4; ++i) {
    receive_sges.push_back(Sge{reinterpret_cast<std::uintptr_t>(target.data()) + i * 4096u, 4096, target_keys.lkey});
  }
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(b.post_srq_recv(srq, RecvWr{static_cast<std::uint64_t>(100 + i), {&receive_sges[i], 1}}), std::errc{});
  }
  EXPECT_EQ(b.post_recv(first_receiver, RecvWr{1, {}}), std::errc::invalid_argument);

  // Each sender sends two 3000-byte messages (3 packets each) filled with its own byte.
  std::vector<std::uint8_t> ones(3000, 1), twos(3000, 2);
  MrKeys ones_keys = *a.reg_mr(first.pd, ones.data(), ones.size(), 0);
  MrKeys twos_keys = *a.reg_mr(second.pd, twos.data(), twos.size(), 0);
  Sge one{reinterpret_cast<std::uintptr_t>(ones.data()), 3000, ones_keys.lkey};
  Sge two{reinterpret_cast<std::uintptr_t>(twos.data()), 3000, twos_keys.lkey};
  for (int i = 0; i < 2; ++i) {
    SendWr wr;
    wr.opcode = WrOpcode::send;
    wr.sg_list = {&one, 1};
    ASSERT_EQ(a.post_send(first.qpn, wr), std::errc{});
    wr.sg_list = {&two, 1};
    ASSERT_EQ(a.post_send(second.qpn, wr), std::errc{});
  }
  network.run_until([] { return false; }, network.now() + kSecond);

  Endpoint receiver_end{&b, pd, cq, first_receiver};
  auto received = drain(receiver_end);
  ASSERT_EQ(received.size(), 4u);
  int from_first = 0;
  for (const WorkCompletion& wc : received) {
    EXPECT_EQ(wc.status, WcStatus::success);
    EXPECT_EQ(wc.byte_len, 3000u);
    std::size_t slot = wc.wr_id - 100;
    std::uint8_t fill = wc.qp_num == first_receiver ? 1 : 2;
    from_first += fill == 1;
    auto begin = target.begin() + static_cast<std::ptrdiff_t>(slot * 4096);
    EXPECT_TRUE(std::all_of(begin, begin + 3000, [fill](std::uint8_t byte) { return byte == fill; })) << "slot " << slot;
  }
  EXPECT_EQ(from_first, 2);
  EXPECT_EQ(b.destroy_srq(srq), std::errc::device_or_resource_busy);
}

TEST(SharedReceiveQueue, AFailingQpLeavesTheSrqToTheOthers) {
  TestNetwork network(10, ChannelFaults{});
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  std::uint32_t pd = *b.alloc_pd();
  std::uint32_t cq = *b.create_cq(64);
  std::uint32_t srq = *b.create_srq(pd, 4, 1);
  auto [first, first_receiver] = connect_to_srq(a, b, pd, cq, srq);
  std::vector<std::uint8_t> target(64);
  MrKeys keys = *b.reg_mr(pd, target.data(), target.size(), kAll);
  Sge sge{reinterpret_cast<std::uintptr_t>(target.data()), 64, keys.lkey};
  ASSERT_EQ(b.post_srq_recv(srq, RecvWr{7, {&sge, 1}}), std::errc{});
  QpAttr attr;
  attr.qp_state = QpState::err;
  ASSERT_EQ(b.modify_qp(first_receiver, attr, kQpAttrState), std::errc{});
  Endpoint receiver_end{&b, pd, cq, first_receiver};
  EXPECT_TRUE(drain(receiver_end).empty());  // nothing flushed from the SRQ

  auto [second, second_receiver] = connect_to_srq(a, b, pd, cq, srq);
  std::uint8_t message[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  Sge inline_sge{reinterpret_cast<std::uintptr_t>(message), 8, 0};
  SendWr wr;
  wr.opcode = WrOpcode::send;
  wr.send_flags = kSendInline;
  wr.sg_list = {&inline_sge, 1};
  ASSERT_EQ(a.post_send(second.qpn, wr), std::errc{});
  network.run_until([] { return false; }, network.now() + kSecond);
  auto received = drain(receiver_end);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].wr_id, 7u);
  EXPECT_EQ(received[0].qp_num, second_receiver);
  EXPECT_EQ(target[7], 9);
}

TEST(SharedReceiveQueue, ArmedLimitRaisesOneEventWhenReceivesRunLow) {
  TestNetwork network(9, ChannelFaults{});
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  std::uint32_t pd = *b.alloc_pd();
  std::uint32_t cq = *b.create_cq(64);
  std::uint32_t srq = *b.create_srq(pd, 8, 1);
  auto connection = connect_to_srq(a, b, pd, cq, srq);
  Endpoint sender = connection.first;  // named, not a structured binding: lambdas capture it
  std::uint32_t receiver = connection.second;
  std::vector<std::uint8_t> inbox(4096);
  MrKeys inbox_keys = *b.reg_mr(pd, inbox.data(), inbox.size(), kAll);
  Sge recv{reinterpret_cast<std::uintptr_t>(inbox.data()), 1024, inbox_keys.lkey};
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_EQ(b.post_srq_recv(srq, RecvWr{i, {&recv, 1}}), std::errc{});
  EXPECT_EQ(b.arm_srq_limit(srq, 9), std::errc::invalid_argument);  // beyond max_wr
  EXPECT_EQ(b.arm_srq_limit(srq + 1000, 1), std::errc::invalid_argument);
  ASSERT_EQ(b.arm_srq_limit(srq, 3), std::errc{});
  while (b.poll_async_event()) {
  }

  std::vector<std::uint8_t> message(100, 7);
  MrKeys message_keys = *a.reg_mr(sender.pd, message.data(), message.size(), 0);
  Sge one{reinterpret_cast<std::uintptr_t>(message.data()), 100, message_keys.lkey};
  auto send_one = [&] {
    SendWr wr;
    wr.opcode = WrOpcode::send;
    wr.sg_list = {&one, 1};
    ASSERT_EQ(a.post_send(sender.qpn, wr), std::errc{});
    network.run_until([] { return false; }, network.now() + kSecond);
  };
  send_one();  // 4 left: not below 3
  EXPECT_FALSE(b.poll_async_event());
  send_one();  // 3 left: not below 3
  EXPECT_FALSE(b.poll_async_event());
  send_one();  // 2 left: below the limit
  auto event = b.poll_async_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->type, AsyncEventType::srq_limit_reached);
  EXPECT_EQ(event->element, srq);
  send_one();  // disarmed: no second event
  EXPECT_FALSE(b.poll_async_event());
  EXPECT_EQ(drain(Endpoint{&b, pd, cq, receiver}).size(), 4u);
}

}  // namespace
}  // namespace uroce::testing
