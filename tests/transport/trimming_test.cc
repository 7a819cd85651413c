// Packet trimming at the responder (Engine::on_trimmed): a WRITE whose last
// packet a switch trimmed completes at once, without the requester's timer,
// because the responder NAKs the trimmed PSN the moment its headers arrive.
// The same packet lost outright leaves the requester waiting for its timer:
// nothing follows it that would reveal the gap. Both recovery modes; the
// clock never moves, so any completion came from the NAK.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr std::uint32_t kPackets = 4;  // of connect_rc's 1024-byte MTU

enum class Fate { delivered, trimmed, lost };

class Trimming : public ::testing::TestWithParam<LossRecovery> {
 protected:
  // Posts one 4-packet WRITE from a to b, gives its last packet `fate` the
  // first time it is sent, then exchanges everything else with the clock
  // stopped. Returns the completions a took.
  std::vector<WorkCompletion> write_with_last_packet(Fate fate) {
    EngineConfig config_a, config_b;
    config_a.gid = gid_from_ipv4({10, 0, 0, 1});
    config_b.gid = gid_from_ipv4({10, 0, 0, 2});
    a_ = std::make_unique<Engine>(config_a);
    b_ = std::make_unique<Engine>(config_b);
    RcOptions options;
    options.recovery = GetParam();
    std::tie(x_, y_) = connect_rc(*a_, *b_, options);
    source_.assign(kPackets * 1024, 0);
    for (std::size_t i = 0; i < source_.size(); ++i) source_[i] = static_cast<std::uint8_t>(i * 7 + 1);
    target_.assign(source_.size(), 0);
    MrKeys source_keys = *a_->reg_mr(x_.pd, source_.data(), source_.size(), kAll);
    MrKeys target_keys = *b_->reg_mr(y_.pd, target_.data(), target_.size(), kAll);
    Sge sge{reinterpret_cast<std::uintptr_t>(source_.data()), static_cast<std::uint32_t>(source_.size()),
            source_keys.lkey};
    SendWr write;
    write.opcode = WrOpcode::rdma_write;
    write.send_flags = kSendSignaled;
    write.sg_list = {&sge, 1};
    write.rdma = {reinterpret_cast<std::uintptr_t>(target_.data()), target_keys.rkey};
    EXPECT_EQ(a_->post_send(x_.qpn, write), std::errc{});

    std::vector<std::uint8_t> buffer(kMaxDatagramLength);
    std::vector<WorkCompletion> done;
    WorkCompletion completions[4];
    std::uint32_t sent = 0;
    for (int round = 0; round < 20 && done.empty(); ++round) {
      while (std::size_t length = a_->poll_transmit(buffer, 0).length) {
        auto datagram = std::span(buffer).first(length);
        bool last_first_time = ++sent == kPackets;
        if (last_first_time && fate == Fate::trimmed) {
          b_->on_trimmed(datagram, 0);
        } else if (!(last_first_time && fate == Fate::lost)) {
          b_->on_datagram(datagram, 0);
        }
      }
      while (std::size_t length = b_->poll_transmit(buffer, 0).length) a_->on_datagram(std::span(buffer).first(length), 0);
      std::size_t n = *a_->poll_cq(x_.cq, completions);
      done.insert(done.end(), completions, completions + n);
    }
    return done;
  }

  std::unique_ptr<Engine> a_, b_;
  Endpoint x_, y_;
  std::vector<std::uint8_t> source_, target_;
};

TEST_P(Trimming, ATrimmedLastPacketIsNakedAndResentAtOnce) {
  std::vector<WorkCompletion> done = write_with_last_packet(Fate::trimmed);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(target_, source_);
  EXPECT_EQ(b_->counters().trimmed_received, 1u);
  EXPECT_GE(a_->counters().retransmitted_packets, 1u);
  EXPECT_EQ(a_->counters().timeouts, 0u);
}

TEST_P(Trimming, TheSamePacketLostWaitsForTheTimer) {
  std::vector<WorkCompletion> done = write_with_last_packet(Fate::lost);
  EXPECT_TRUE(done.empty());  // the clock did not move: nothing told the requester
  EXPECT_EQ(b_->counters().trimmed_received, 0u);
}

TEST_P(Trimming, TrimmedDuplicatesAndResponsesAreIgnored) {
  ASSERT_EQ(write_with_last_packet(Fate::delivered).size(), 1u);
  // The WRITE's first packet again, trimmed: a duplicate of what arrived whole.
  std::vector<std::uint8_t> buffer(kMaxDatagramLength);
  Sge sge{reinterpret_cast<std::uintptr_t>(source_.data()), 1024, a_->reg_mr(x_.pd, source_.data(), 1024, kAll)->lkey};
  SendWr write;
  write.opcode = WrOpcode::rdma_write;
  write.sg_list = {&sge, 1};
  write.rdma = {reinterpret_cast<std::uintptr_t>(target_.data()), b_->reg_mr(y_.pd, target_.data(), 1024, kAll)->rkey};
  ASSERT_EQ(a_->post_send(x_.qpn, write), std::errc{});
  std::size_t length = a_->poll_transmit(buffer, 0).length;
  ASSERT_GT(length, 0u);
  b_->on_datagram(std::span(buffer).first(length), 0);
  b_->on_trimmed(std::span(buffer).first(length), 0);  // the same PSN, now behind the expected one
  EXPECT_EQ(b_->counters().trimmed_received, 0u);
  // Garbage headers are counted as malformed, nothing more.
  std::vector<std::uint8_t> garbage(40, 0x45);
  b_->on_trimmed(garbage, 0);
  EXPECT_GE(b_->counters().malformed_packets, 1u);
}

INSTANTIATE_TEST_SUITE_P(Recovery, Trimming, ::testing::Values(LossRecovery::go_back_n, LossRecovery::selective_repeat),
                         [](const ::testing::TestParamInfo<LossRecovery>& recovery) {
                           return recovery.param == LossRecovery::go_back_n ? "GoBackN" : "SelectiveRepeat";
                         });

}  // namespace
}  // namespace uroce::testing
