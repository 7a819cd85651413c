// Selective repeat: the reorder buffer and SACK scoreboard on their own, then
// end to end against go-back-N: one lost packet costs one retransmission, the
// data and completions are the same, and a lost READ request, atomic or
// SEND packet is recovered without resending what the responder holds.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/support/lost_packets.h"
#include "tests/support/test_network.h"
#include "transport/psn.h"
#include "transport/selective_repeat.h"

namespace uroce::testing {
namespace {

using transport::ReorderBuffer;
using transport::SackScoreboard;

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kSecond = 1'000'000'000;

TEST(ReorderBuffer, HoldsOnlyInsideTheWindowAfterTheExpectedPsn) {
  ReorderBuffer buffer(8);
  std::vector<std::uint8_t> bytes{1, 2, 3};
  EXPECT_FALSE(buffer.hold(100, 100, bytes));  // the expected PSN itself is executed, not held
  EXPECT_FALSE(buffer.hold(99, 100, bytes));   // a duplicate
  EXPECT_FALSE(buffer.hold(108, 100, bytes));  // beyond the window
  EXPECT_TRUE(buffer.hold(107, 100, bytes));
  EXPECT_FALSE(buffer.hold(107, 100, bytes));  // already held
  EXPECT_EQ(buffer.held(), 1u);
  ASSERT_TRUE(buffer.find(107));
  EXPECT_EQ(std::vector<std::uint8_t>(buffer.find(107)->begin(), buffer.find(107)->end()), bytes);
  EXPECT_FALSE(buffer.find(99));  // same slot, other PSN
  buffer.release(100, 108);
  EXPECT_EQ(buffer.held(), 0u);
  EXPECT_FALSE(buffer.find(107));
}

TEST(ReorderBuffer, WorksAcrossThePsnWrap) {
  ReorderBuffer buffer(16);
  std::vector<std::uint8_t> bytes{9};
  EXPECT_TRUE(buffer.hold(0x000002, 0xFFFFFE, bytes));
  EXPECT_TRUE(buffer.hold(0xFFFFFF, 0xFFFFFE, bytes));
  buffer.release(0xFFFFFE, 0x000000);
  EXPECT_FALSE(buffer.find(0xFFFFFF));
  EXPECT_TRUE(buffer.find(0x000002));
  buffer.release(0x000000, 0x000003);
  EXPECT_EQ(buffer.held(), 0u);
}

// The slots start few and grow: a whole window held out of order keeps
// every packet, and releasing them frees them all.
TEST(ReorderBuffer, HoldsAWholeWindowOutOfOrder) {
  ReorderBuffer buffer(256);
  std::vector<std::uint8_t> packet(100);
  for (std::uint32_t psn = 255; psn >= 1; --psn) {
    packet[0] = static_cast<std::uint8_t>(psn);
    ASSERT_TRUE(buffer.hold(psn, 0, packet, 10)) << psn;
  }
  EXPECT_EQ(buffer.held(), 255u);
  EXPECT_FALSE(buffer.hold(256, 0, packet));  // beyond the window
  for (std::uint32_t psn = 1; psn < 256; ++psn) {
    auto held = buffer.find(psn);
    ASSERT_TRUE(held) << psn;
    EXPECT_EQ(held->size(), 10u);
    EXPECT_EQ((*held)[0], static_cast<std::uint8_t>(psn));
    EXPECT_EQ(buffer.held_length(psn), 100u);
  }
  buffer.release(0, 256);
  EXPECT_EQ(buffer.held(), 0u);
  EXPECT_FALSE(buffer.find(17));
}

TEST(SackScoreboard, MarksExactPsnsAndForgetsAcknowledgedOnes) {
  SackScoreboard sacks(4);
  sacks.reset(10);
  sacks.mark(12);
  EXPECT_TRUE(sacks.marked(12));
  EXPECT_FALSE(sacks.marked(16));  // same slot, other PSN: never a false report
  sacks.forget_before(10, 13);
  EXPECT_FALSE(sacks.marked(12));
}

TEST(SackScoreboard, RecoverNeverGoesBackButRestartDoes) {
  SackScoreboard sacks(64);
  sacks.reset(0xFFFFF0);
  sacks.recover(0xFFFFF0, 0xFFFFF8);
  EXPECT_TRUE(sacks.recovering());
  sacks.advance_to(0xFFFFF4);
  sacks.recover(0xFFFFF0, 0x000004);  // a later report with the same gap
  EXPECT_EQ(sacks.recovery_next(), 0xFFFFF4u);
  EXPECT_EQ(sacks.recovery_end(), 0x000004u);
  sacks.restart(0xFFFFF0, 0x000002);  // a timeout
  EXPECT_EQ(sacks.recovery_next(), 0xFFFFF0u);
  EXPECT_EQ(sacks.recovery_end(), 0x000004u);
  sacks.catch_up(0x000004);
  EXPECT_FALSE(sacks.recovering());
}

class SelectiveRepeat : public ::testing::TestWithParam<LossRecovery> {
 protected:
  void connect(ChannelFaults faults) {
    network_ = std::make_unique<TestNetwork>(5, std::move(faults));
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    RcOptions options;
    options.recovery = GetParam();
    options.timeout = 18;  // ~1 s: a retransmission here is recovery, never a timeout
    std::tie(a_, b_) = connect_rc(a, b, options);
    local_.assign(64 << 10, 0);
    for (std::size_t i = 0; i < local_.size(); ++i) local_[i] = static_cast<std::uint8_t>(i * 7 + 1);
    remote_.assign(64 << 10, 0);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, remote_.data(), remote_.size(), kAll);
  }

  SendWr wr(WrOpcode opcode, std::size_t offset, std::uint32_t length) {
    sges_.push_back(Sge{reinterpret_cast<std::uintptr_t>(local_.data()) + offset, length, local_keys_.lkey});
    SendWr request;
    request.wr_id = ++wr_id_;
    request.opcode = opcode;
    request.send_flags = kSendSignaled;
    request.sg_list = {&sges_.back(), 1};
    request.rdma = {reinterpret_cast<std::uintptr_t>(remote_.data()) + offset, remote_keys_.rkey};
    request.atomic = {reinterpret_cast<std::uintptr_t>(remote_.data()) + offset, 5, 0, remote_keys_.rkey};
    return request;
  }

  std::vector<WorkCompletion> run(std::size_t count) {
    std::vector<WorkCompletion> all;
    network_->run_until(
        [&] {
          auto more = drain(a_);
          all.insert(all.end(), more.begin(), more.end());
          return all.size() >= count;
        },
        network_->now() + 10 * kSecond);
    return all;
  }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_, remote_keys_;
  std::deque<Sge> sges_;
  std::uint64_t wr_id_ = 0;
};

constexpr std::uint32_t kFirstPsn = 0x00FFF0;  // connect_rc's default sq_psn

TEST_P(SelectiveRepeat, OneLostPacketOfALongWrite) {
  connect(lose_request_psns({transport::psn_add(kFirstPsn, 3)}));
  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr(WrOpcode::rdma_write, 0, 32 << 10)), std::errc{});
  auto done = run(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(0, std::memcmp(remote_.data(), local_.data(), 32 << 10));
  const EngineCounters& sender = a_.engine->counters();
  EXPECT_EQ(sender.timeouts, 0u);
  if (GetParam() == LossRecovery::selective_repeat) {
    EXPECT_EQ(sender.retransmitted_packets, 1u);  // only the lost one
    EXPECT_EQ(b_.engine->counters().held_out_of_order, 28u);  // everything after it
  } else {
    EXPECT_EQ(sender.retransmitted_packets, 29u);  // the lost one and all that followed
    EXPECT_EQ(b_.engine->counters().held_out_of_order, 0u);
  }
}

TEST_P(SelectiveRepeat, LostFirstPacketsOfSeveralMessagesKeepOrderAndData) {
  // Lose the first packet of a SEND, a READ request and an atomic, with
  // WRITEs behind each: receive and completion order must hold.
  connect(lose_request_psns({kFirstPsn, transport::psn_add(kFirstPsn, 6), transport::psn_add(kFirstPsn, 11)}));
  std::vector<std::uint8_t> inbox(8192, 0);
  MrKeys inbox_keys = *b_.engine->reg_mr(b_.pd, inbox.data(), inbox.size(), kAll);
  Sge recv_sge{reinterpret_cast<std::uintptr_t>(inbox.data()), 8192, inbox_keys.lkey};
  ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{77, {&recv_sge, 1}}), std::errc{});
  std::memset(remote_.data() + 40960, 0xAB, 4096);  // what the READ fetches
  std::uint64_t counter = 1000;
  std::memcpy(remote_.data() + 49152, &counter, 8);

  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr(WrOpcode::send, 0, 3000)), std::errc{});           // PSN +0..+2
  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr(WrOpcode::rdma_write, 4096, 3000)), std::errc{});  // +3..+5
  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr(WrOpcode::rdma_read, 40960, 4096)), std::errc{});  // +6..+9
  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr(WrOpcode::rdma_write, 8192, 1000)), std::errc{});  // +10
  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr(WrOpcode::atomic_fetch_and_add, 49152, 8)), std::errc{});  // +11
  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr(WrOpcode::rdma_write, 12288, 2048)), std::errc{});  // +12..+13
  auto done = run(6);
  ASSERT_EQ(done.size(), 6u);
  for (std::size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].wr_id, i + 1);
    EXPECT_EQ(done[i].status, WcStatus::success) << to_string(done[i].status);
  }
  auto received = drain(b_);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].wr_id, 77u);
  EXPECT_EQ(received[0].byte_len, 3000u);
  EXPECT_EQ(0, std::memcmp(inbox.data(), local_.data(), 3000));
  EXPECT_EQ(0, std::memcmp(remote_.data() + 4096, local_.data() + 4096, 3000));
  EXPECT_EQ(0, std::memcmp(remote_.data() + 8192, local_.data() + 8192, 1000));
  EXPECT_EQ(0, std::memcmp(remote_.data() + 12288, local_.data() + 12288, 2048));
  EXPECT_TRUE(std::all_of(local_.begin() + 40960, local_.begin() + 45056, [](std::uint8_t b) { return b == 0xAB; }));
  std::uint64_t fetched, now_remote;
  std::memcpy(&fetched, local_.data() + 49152, 8);
  std::memcpy(&now_remote, remote_.data() + 49152, 8);
  EXPECT_EQ(fetched, 1000u);
  EXPECT_EQ(now_remote, 1005u);  // added once, however often the request travelled
  EXPECT_EQ(a_.engine->counters().timeouts, 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, SelectiveRepeat,
                         ::testing::Values(LossRecovery::go_back_n, LossRecovery::selective_repeat),
                         [](const auto& param_info) {
                           return param_info.param == LossRecovery::go_back_n ? "GoBackN" : "SelectiveRepeat";
                         });

TEST(SelectiveRepeatSetup, OnlyRcQpsTakeIt) {
  EngineConfig config;
  Engine engine(config);
  std::uint32_t pd = *engine.alloc_pd();
  std::uint32_t cq = *engine.create_cq(16);
  QpInitAttr init;
  init.pd = pd;
  init.send_cq = init.recv_cq = cq;
  init.cap = QpCap{4, 4, 1, 1, 0};
  init.recovery = LossRecovery::selective_repeat;
  init.qp_type = QpType::uc;
  EXPECT_FALSE(engine.create_qp(init));
  init.qp_type = QpType::ud;
  EXPECT_FALSE(engine.create_qp(init));
  init.qp_type = QpType::rc;
  EXPECT_TRUE(engine.create_qp(init));
}

}  // namespace
}  // namespace uroce::testing
