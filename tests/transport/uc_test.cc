// UC: SEND and WRITE without acknowledgements. Completions come when the last
// packet leaves; a message that loses a packet is dropped whole at the
// receiver, which resynchronises on the next message; nothing is resent.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kSecond = 1'000'000'000;

struct UcPair {
  explicit UcPair(ChannelFaults faults) : network(11, std::move(faults)) {
    Engine& a = network.add_engine();
    Engine& b = network.add_engine();
    RcOptions options;
    options.type = QpType::uc;
    options.access = kAccessLocalWrite | kAccessRemoteWrite;
    std::tie(sender, receiver) = connect_rc(a, b, options);
    source.resize(1 << 20);
    for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i * 13 + 1);
    target.assign(1 << 20, 0);
    source_keys = *a.reg_mr(sender.pd, source.data(), source.size(), kAll);
    target_keys = *b.reg_mr(receiver.pd, target.data(), target.size(), kAll);
  }

  SendWr wr(WrOpcode opcode, std::size_t offset, std::uint32_t length) {
    sges.push_back(Sge{reinterpret_cast<std::uintptr_t>(source.data()) + offset, length, source_keys.lkey});
    SendWr w;
    w.wr_id = next_id++;
    w.opcode = opcode;
    w.send_flags = kSendSignaled;
    w.sg_list = {&sges.back(), 1};
    w.rdma = {reinterpret_cast<std::uintptr_t>(target.data()) + offset, target_keys.rkey};
    return w;
  }

  void post_receive(std::size_t offset, std::uint32_t length) {
    sges.push_back(Sge{reinterpret_cast<std::uintptr_t>(target.data()) + offset, length, target_keys.lkey});
    ASSERT_EQ(receiver.engine->post_recv(receiver.qpn, RecvWr{next_id++, {&sges.back(), 1}}), std::errc{});
  }

  void settle() { network.run_until([] { return false; }, network.now() + kSecond); }

  TestNetwork network;
  Endpoint sender, receiver;
  std::vector<std::uint8_t> source, target;
  MrKeys source_keys, target_keys;
  std::deque<Sge> sges;
  std::uint64_t next_id = 1;
};

TEST(Uc, SendAndWriteArriveAndCompleteWithoutAcks) {
  UcPair uc{ChannelFaults{}};
  uc.post_receive(0, 10000);
  ASSERT_EQ(uc.sender.engine->post_send(uc.sender.qpn, uc.wr(WrOpcode::send_with_imm, 0, 5000)), std::errc{});
  ASSERT_EQ(uc.sender.engine->post_send(uc.sender.qpn, uc.wr(WrOpcode::rdma_write, 20000, 70000)), std::errc{});
  uc.settle();
  auto at_sender = drain(uc.sender);
  ASSERT_EQ(at_sender.size(), 2u);
  EXPECT_EQ(at_sender[0].status, WcStatus::success);
  EXPECT_EQ(at_sender[1].opcode, WcOpcode::rdma_write);
  auto at_receiver = drain(uc.receiver);
  ASSERT_EQ(at_receiver.size(), 1u);
  EXPECT_EQ(at_receiver[0].byte_len, 5000u);
  EXPECT_EQ(at_receiver[0].wc_flags & kWcWithImm, kWcWithImm);
  EXPECT_TRUE(std::equal(uc.source.begin(), uc.source.begin() + 5000, uc.target.begin()));
  EXPECT_TRUE(std::equal(uc.source.begin() + 20000, uc.source.begin() + 90000, uc.target.begin() + 20000));
  EXPECT_EQ(uc.receiver.engine->counters().naks_sent + uc.receiver.engine->counters().packets_sent, 0u);
}

TEST(Uc, LostPacketDropsOnlyItsMessage) {
  // Drop exactly the second packet the sender puts on the wire.
  int seen = 0;
  ChannelFaults faults;
  faults.drop = 1.0;
  faults.applies_to = [&seen](std::span<const std::uint8_t>) { return ++seen == 2; };
  UcPair uc{faults};
  uc.post_receive(0, 8192);
  uc.post_receive(8192, 8192);
  // Three packets at MTU 1024: the middle one is lost, so this message is dropped...
  ASSERT_EQ(uc.sender.engine->post_send(uc.sender.qpn, uc.wr(WrOpcode::send, 0, 3000)), std::errc{});
  // ...and the next one lands in the same receive buffer.
  ASSERT_EQ(uc.sender.engine->post_send(uc.sender.qpn, uc.wr(WrOpcode::send, 100000, 2000)), std::errc{});
  uc.settle();
  EXPECT_EQ(drain(uc.sender).size(), 2u);  // the sender cannot know
  auto received = drain(uc.receiver);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].wr_id, 1u);  // the first posted receive
  EXPECT_EQ(received[0].byte_len, 2000u);
  EXPECT_TRUE(std::equal(uc.source.begin() + 100000, uc.source.begin() + 102000, uc.target.begin()));
  EXPECT_EQ(uc.sender.engine->counters().retransmitted_packets, 0u);
  EXPECT_GE(uc.receiver.engine->counters().out_of_sequence, 1u);
}

TEST(Uc, BadRkeyDropsTheMessageAndTheQpStaysUp) {
  UcPair uc{ChannelFaults{}};
  SendWr bad = uc.wr(WrOpcode::rdma_write, 0, 100);
  bad.rdma.rkey ^= 1;
  ASSERT_EQ(uc.sender.engine->post_send(uc.sender.qpn, bad), std::errc{});
  ASSERT_EQ(uc.sender.engine->post_send(uc.sender.qpn, uc.wr(WrOpcode::rdma_write, 500, 100)), std::errc{});
  uc.settle();
  EXPECT_TRUE(std::all_of(uc.target.begin(), uc.target.begin() + 100, [](std::uint8_t b) { return b == 0; }));
  EXPECT_TRUE(std::equal(uc.source.begin() + 500, uc.source.begin() + 600, uc.target.begin() + 500));
  EXPECT_EQ(uc.receiver.engine->query_qp(uc.receiver.qpn)->qp_state, QpState::rts);
}

TEST(Uc, ReadsAndAtomicsAreNotUcOperations) {
  UcPair uc{ChannelFaults{}};
  EXPECT_EQ(uc.sender.engine->post_send(uc.sender.qpn, uc.wr(WrOpcode::rdma_read, 0, 8)), std::errc::invalid_argument);
  EXPECT_EQ(uc.sender.engine->post_send(uc.sender.qpn, uc.wr(WrOpcode::atomic_fetch_and_add, 0, 8)),
            std::errc::invalid_argument);
}

}  // namespace
}  // namespace uroce::testing
