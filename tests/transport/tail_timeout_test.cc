// The tail timeout (QpInitAttr::tail_timeout_ns, IRN's RTO_low): while few
// PSNs are in flight, a lost packet is resent after the tail timeout instead
// of the local ACK timeout; with many in flight the local ACK timeout holds;
// only RC QPs take it; an infinite local ACK timeout stays infinite. Times
// here are the test network's virtual time.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/support/lost_packets.h"
#include "tests/support/test_network.h"
#include "transport/psn.h"
#include "transport/queue_pair.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kTail = 100'000;          // 100 us, IRN's RTO_low
constexpr std::uint8_t kLongTimeout = 18;  // about 1.07 s
constexpr std::uint32_t kFirstPsn = 0x00FFF0;  // connect_rc's default sq_psn
constexpr std::uint32_t kPacket = 1024;        // connect_rc's default MTU

class TailTimeout : public ::testing::TestWithParam<LossRecovery> {
 protected:
  void connect(ChannelFaults faults, TimeNs tail, std::uint8_t timeout = kLongTimeout) {
    network_ = std::make_unique<TestNetwork>(3, std::move(faults));
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    RcOptions options;
    options.recovery = GetParam();
    options.timeout = timeout;
    options.tail_timeout_ns = tail;
    std::tie(a_, b_) = connect_rc(a, b, options);
    local_.assign(64 * kPacket, 0);
    for (std::size_t i = 0; i < local_.size(); ++i) local_[i] = static_cast<std::uint8_t>(i * 11 + 3);
    remote_.assign(local_.size(), 0);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, remote_.data(), remote_.size(), kAll);
  }

  void post_write(std::uint32_t packets) {
    sge_ = Sge{reinterpret_cast<std::uintptr_t>(local_.data()), packets * kPacket, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = 1;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge_, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(remote_.data()), remote_keys_.rkey};
    ASSERT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
  }

  // Posts a WRITE of `packets` full packets, runs until it completes and
  // returns the virtual time it completed at (-1: it did not within 10 s).
  TimeNs write_and_wait(std::uint32_t packets) {
    post_write(packets);
    TimeNs done_at = -1;
    network_->run_until(
        [&] {
          for (const WorkCompletion& wc : drain(a_)) {
            EXPECT_EQ(wc.status, WcStatus::success) << to_string(wc.status);
            done_at = network_->now();
          }
          return done_at >= 0;
        },
        10'000'000'000);
    EXPECT_EQ(0, std::memcmp(remote_.data(), local_.data(), packets * kPacket));
    return done_at;
  }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_, remote_keys_;
  Sge sge_{};
};

TEST_P(TailTimeout, LostLastPacketOfAShortMessageIsResentAfterTheTailTimeout) {
  std::uint32_t last = transport::psn_add(kFirstPsn, 2);
  connect(lose_request_psns({last}), kTail);
  TimeNs done_at = write_and_wait(3);
  EXPECT_GE(done_at, kTail);
  EXPECT_LT(done_at, 2 * kTail);
  EXPECT_EQ(a_.engine->counters().timeouts, 1u);

  // The same loss without it waits the whole local ACK timeout.
  connect(lose_request_psns({last}), 0);
  EXPECT_GE(write_and_wait(3), transport::ack_timeout_ns(kLongTimeout));
}

TEST_P(TailTimeout, LostRetransmissionWaitsForTheTailTimeoutOnlyWithSelectiveRepeat) {
  // The fourth packet is lost and so is its first resend.
  connect(lose_request_psns({transport::psn_add(kFirstPsn, 3)}, 2), kTail);
  TimeNs done_at = write_and_wait(32);
  EXPECT_EQ(a_.engine->counters().timeouts, 1u);
  if (GetParam() == LossRecovery::selective_repeat) {
    // Every other PSN is reported held: one is in flight, the tail timeout applies.
    EXPECT_LT(done_at, 2 * kTail);
    EXPECT_EQ(a_.engine->counters().retransmitted_packets, 2u);
  } else {
    // Go-back-N resent all 29 from the lost one: too many in flight.
    EXPECT_GE(done_at, transport::ack_timeout_ns(kLongTimeout));
  }
}

TEST_P(TailTimeout, ManyPacketsInFlightKeepTheLocalAckTimeout) {
  // Nothing arrives: one packet in flight times out at the tail timeout, 32
  // (no ACK has come to shrink them) only at the local ACK timeout.
  ChannelFaults silent;
  silent.drop = 1.0;
  connect(silent, kTail);
  post_write(1);
  network_->run_until([] { return false; }, 2 * kTail - 1);
  EXPECT_EQ(a_.engine->counters().timeouts, 1u);

  connect(silent, kTail);
  post_write(32);
  network_->run_until([] { return false; }, transport::ack_timeout_ns(kLongTimeout) - 1);
  EXPECT_EQ(a_.engine->counters().timeouts, 0u);
  network_->run_until([] { return false; }, transport::ack_timeout_ns(kLongTimeout));
  EXPECT_EQ(a_.engine->counters().timeouts, 1u);
}

TEST_P(TailTimeout, AnInfiniteLocalAckTimeoutStaysInfinite) {
  // timeout 0 means wait forever, in verbs; the tail timeout does not undo it.
  ChannelFaults silent;
  silent.drop = 1.0;
  connect(silent, kTail, 0);
  post_write(1);
  network_->run_until([] { return false; }, 10'000'000'000);
  EXPECT_EQ(a_.engine->counters().timeouts, 0u);
  EXPECT_EQ(a_.engine->next_deadline(), kNever);
}

INSTANTIATE_TEST_SUITE_P(Modes, TailTimeout,
                         ::testing::Values(LossRecovery::go_back_n, LossRecovery::selective_repeat),
                         [](const auto& param_info) {
                           return param_info.param == LossRecovery::go_back_n ? "GoBackN" : "SelectiveRepeat";
                         });

TEST(TailTimeoutSetup, OnlyRcQpsTakeItAndNeverNegative) {
  EngineConfig config;
  Engine engine(config);
  QpInitAttr init;
  init.pd = *engine.alloc_pd();
  init.send_cq = init.recv_cq = *engine.create_cq(16);
  init.cap = QpCap{4, 4, 1, 1, 0};
  init.tail_timeout_ns = kTail;
  init.qp_type = QpType::uc;
  EXPECT_EQ(engine.create_qp(init).error(), std::errc::invalid_argument);
  init.qp_type = QpType::ud;
  EXPECT_EQ(engine.create_qp(init).error(), std::errc::invalid_argument);
  init.qp_type = QpType::rc;
  EXPECT_TRUE(engine.create_qp(init));
  init.tail_timeout_ns = -1;
  EXPECT_EQ(engine.create_qp(init).error(), std::errc::invalid_argument);
}

}  // namespace
}  // namespace uroce::testing
