// Loss probes (QpInitAttr::loss_probe_ns): a lost tail of a burst costs a
// probe interval and a round trip, not the Local ACK Timeout, in both
// recovery modes; lost ACKs cost one duplicate packet and no resend; a lost
// sequence NAK is covered by the probe of the oldest packet; a
// peer that is gone still ends in retry-exceeded after the whole timeout,
// retries unchanged. Times are the test network's virtual time.
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
constexpr TimeNs kProbe = 200'000;         // 200 us
constexpr std::uint8_t kLongTimeout = 18;  // about 1.07 s, as UCX asks
constexpr std::uint32_t kFirstPsn = 0x00FFF0;  // connect_rc's default sq_psn
constexpr std::uint32_t kPacket = 1024;        // connect_rc's default MTU

class LossProbe : public ::testing::TestWithParam<LossRecovery> {
 protected:
  void connect(ChannelFaults faults, TimeNs probe, std::uint8_t retry_cnt = 7) {
    network_ = std::make_unique<TestNetwork>(3, std::move(faults));
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    RcOptions options;
    options.recovery = GetParam();
    options.timeout = kLongTimeout;
    options.loss_probe_ns = probe;
    options.retry_cnt = retry_cnt;
    std::tie(a_, b_) = connect_rc(a, b, options);
    local_.assign(64 * kPacket, 0);
    for (std::size_t i = 0; i < local_.size(); ++i) local_[i] = static_cast<std::uint8_t>(i * 13 + 5);
    remote_.assign(local_.size(), 0);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, remote_.data(), remote_.size(), kAll);
  }

  // Posts a WRITE of `packets` packets and runs until it completes; returns
  // when it completed (-1: not within 10 s) and its status.
  std::pair<TimeNs, WcStatus> write_and_wait(std::uint32_t packets) {
    Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()), packets * kPacket, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = 1;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(remote_.data()), remote_keys_.rkey};
    EXPECT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
    std::pair<TimeNs, WcStatus> result{-1, WcStatus::success};
    network_->run_until(
        [&] {
          for (const WorkCompletion& wc : drain(a_)) result = {network_->now(), wc.status};
          return result.first >= 0;
        },
        10'000'000'000);
    return result;
  }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_, remote_keys_;
};

std::vector<std::uint32_t> psns(std::uint32_t first, std::uint32_t count) {
  std::vector<std::uint32_t> list;
  for (std::uint32_t i = 0; i < count; ++i) list.push_back(transport::psn_add(kFirstPsn, first + i));
  return list;
}

TEST_P(LossProbe, ALostTailIsResentAfterOneProbeNotTheTimeout) {
  // The last 24 of 48 packets are lost, as when a receive buffer overflows
  // at the end of a burst: nothing after them arrives to reveal the gap.
  connect(lose_request_psns(psns(24, 24)), kProbe);
  auto [done_at, status] = write_and_wait(48);
  EXPECT_EQ(status, WcStatus::success);
  EXPECT_GE(done_at, kProbe);
  EXPECT_LT(done_at, 2 * kProbe);
  EXPECT_EQ(a_.engine->counters().loss_probes, 1u);
  EXPECT_EQ(a_.engine->counters().timeouts, 0u);
  EXPECT_EQ(0, std::memcmp(remote_.data(), local_.data(), 48 * kPacket));

  // Without probes the same loss waits out the Local ACK Timeout.
  connect(lose_request_psns(psns(24, 24)), 0);
  auto [late, late_status] = write_and_wait(48);
  EXPECT_EQ(late_status, WcStatus::success);
  EXPECT_GE(late, transport::ack_timeout_ns(kLongTimeout));
}

TEST_P(LossProbe, LostAcksCostOneDuplicatePacketAndNoResend) {
  // Every ACK sent before the first probe is lost; the probe's duplicate is answered.
  ChannelFaults faults;
  faults.path_down = [this](std::span<const std::uint8_t> datagram) {
    bool from_b = datagram.size() > 20 && datagram[15] == 2;  // 10.0.0.2: the responder's ACKs
    return from_b && network_->now() < kProbe;
  };
  connect(faults, kProbe);
  auto [done_at, status] = write_and_wait(16);
  EXPECT_EQ(status, WcStatus::success);
  EXPECT_LT(done_at, 2 * kProbe);
  EXPECT_EQ(a_.engine->counters().loss_probes, 1u);
  EXPECT_EQ(a_.engine->counters().retransmitted_packets, 1u);  // the probe, nothing else
  EXPECT_EQ(b_.engine->counters().duplicate_requests, 1u);
}

TEST_P(LossProbe, ALostNakIsCoveredByProbingTheOldestPacket) {
  // The sixth of 16 packets is lost, and so is everything the responder
  // sends before the first probe: its one sequence NAK for the gap.
  std::vector<std::uint32_t> lost = psns(5, 1);
  ChannelFaults faults = lose_request_psns(lost);
  auto lose_request = faults.path_down;
  faults.path_down = [this, lose_request](std::span<const std::uint8_t> datagram) {
    bool from_b = datagram.size() > 20 && datagram[15] == 2;
    return (from_b && network_->now() < kProbe) || (lose_request && lose_request(datagram));
  };
  connect(faults, kProbe);
  auto [done_at, status] = write_and_wait(16);
  EXPECT_EQ(status, WcStatus::success);
  EXPECT_LT(done_at, 10 * kProbe);
  EXPECT_EQ(a_.engine->counters().timeouts, 0u);
  EXPECT_EQ(0, std::memcmp(remote_.data(), local_.data(), 16 * kPacket));
}

TEST_P(LossProbe, AGonePeerStillEndsAfterEveryLocalAckTimeout) {
  ChannelFaults silent;
  silent.drop = 1.0;
  connect(silent, kProbe, /*retry_cnt=*/1);
  auto [done_at, status] = write_and_wait(4);
  EXPECT_EQ(status, WcStatus::retry_exc_err);
  // Two whole timeouts (the first try and its one retry), probes between.
  EXPECT_GE(done_at, 2 * transport::ack_timeout_ns(kLongTimeout));
  EXPECT_EQ(a_.engine->counters().timeouts, 2u);
  EXPECT_GT(a_.engine->counters().loss_probes, 1u);
  EXPECT_LT(a_.engine->counters().loss_probes, 30u);  // backed off, not one every interval
}

INSTANTIATE_TEST_SUITE_P(Modes, LossProbe, ::testing::Values(LossRecovery::go_back_n, LossRecovery::selective_repeat),
                         [](const auto& param_info) {
                           return param_info.param == LossRecovery::go_back_n ? "GoBackN" : "SelectiveRepeat";
                         });

}  // namespace
}  // namespace uroce::testing
