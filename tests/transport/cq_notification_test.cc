// CQ notification (ibv_req_notify_cq / ibv_get_cq_event): an armed CQ fires
// once on its next completion; solicited-only fires on a solicited receive or
// an unsuccessful completion and not on others; completions already queued
// when it was armed do not fire it.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kSecond = 1'000'000'000;

class CqNotification : public ::testing::Test {
 protected:
  void SetUp() override {
    network_ = std::make_unique<TestNetwork>(5, ChannelFaults{});
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    std::tie(a_, b_) = connect_rc(a, b);
    local_.assign(8192, 1);
    inbox_.assign(8192, 0);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    inbox_keys_ = *b.reg_mr(b_.pd, inbox_.data(), inbox_.size(), kAll);
  }

  void send(std::uint32_t length, std::uint32_t flags = 0) {
    sge_ = Sge{reinterpret_cast<std::uintptr_t>(local_.data()), length, local_keys_.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::send;
    wr.send_flags = kSendSignaled | flags;
    wr.sg_list = {&sge_, 1};
    ASSERT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
    settle();
  }

  void post_receive(std::uint32_t length) {
    Sge sge{reinterpret_cast<std::uintptr_t>(inbox_.data()), length, inbox_keys_.lkey};
    ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{7, {&sge, 1}}), std::errc{});
  }

  static std::vector<std::uint32_t> events_of(Engine& engine) {
    std::vector<std::uint32_t> cqs;
    while (auto cq = engine.poll_cq_event()) cqs.push_back(*cq);
    return cqs;
  }

  void settle() { network_->run_until([] { return false; }, network_->now() + kSecond); }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, inbox_;
  MrKeys local_keys_, inbox_keys_;
  Sge sge_;
};

TEST_F(CqNotification, ArmedCqFiresOnceOnItsNextCompletion) {
  post_receive(8192);
  post_receive(8192);
  EXPECT_FALSE(a_.engine->cq_event_pending());
  ASSERT_EQ(a_.engine->req_notify_cq(a_.cq, false), std::errc{});
  send(100);
  EXPECT_EQ(events_of(*a_.engine), std::vector<std::uint32_t>{a_.cq});
  send(100);  // not armed again: no second event
  EXPECT_TRUE(events_of(*a_.engine).empty());
  EXPECT_EQ(drain(a_).size(), 2u);
  EXPECT_EQ(a_.engine->req_notify_cq(12345, false), std::errc::invalid_argument);
}

TEST_F(CqNotification, SolicitedOnlyWaitsForASolicitedReceiveOrAnError) {
  for (int i = 0; i < 3; ++i) post_receive(8192);
  ASSERT_EQ(b_.engine->req_notify_cq(b_.cq, true), std::errc{});
  send(100);  // SE not set
  EXPECT_TRUE(events_of(*b_.engine).empty());
  send(100, kSendSolicited);
  EXPECT_EQ(events_of(*b_.engine), std::vector<std::uint32_t>{b_.cq});

  ASSERT_EQ(b_.engine->req_notify_cq(b_.cq, true), std::errc{});
  post_receive(10);
  send(4000);  // lands in the third receive: fine, unsolicited, no event
  EXPECT_TRUE(events_of(*b_.engine).empty());
  send(100);  // the 10-byte receive is too small: an unsuccessful completion fires it
  EXPECT_EQ(events_of(*b_.engine), std::vector<std::uint32_t>{b_.cq});
}

TEST_F(CqNotification, CompletionsQueuedBeforeArmingDoNotFire) {
  post_receive(8192);
  post_receive(8192);
  send(100);
  ASSERT_EQ(a_.engine->req_notify_cq(a_.cq, false), std::errc{});
  EXPECT_TRUE(events_of(*a_.engine).empty());  // one completion waits, but it came before the arming
  send(100);
  EXPECT_EQ(events_of(*a_.engine), std::vector<std::uint32_t>{a_.cq});
}

}  // namespace
}  // namespace uroce::testing
