// One test per error path of the RC transport and the verbs calls: remote
// access violations (bad rkey, out of bounds, wrong PD, missing permission),
// RNR with and without retries, retry exhaustion against a silent peer, QP
// state, CQ overflow and WRs beyond the limits. Remote memory outside the
// allowed range must stay untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kSecond = 1'000'000'000;

class RcErrors : public ::testing::Test {
 protected:
  void SetUp() override { connect(RcOptions{}); }

  void connect(const RcOptions& options) {
    network_ = std::make_unique<TestNetwork>(3, ChannelFaults{});
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    std::tie(a_, b_) = connect_rc(a, b, options);
    local_.assign(4096, 0x11);
    remote_.assign(4096, 0x22);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, remote_.data(), remote_.size(), kAll);
  }

  std::uint64_t remote_addr(std::size_t offset) { return reinterpret_cast<std::uintptr_t>(remote_.data()) + offset; }

  SendWr rdma(WrOpcode opcode, std::uint64_t remote, std::uint32_t rkey, std::uint32_t length) {
    sge_ = Sge{reinterpret_cast<std::uintptr_t>(local_.data()), length, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = next_wr_id_++;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge_, 1};
    wr.rdma = {remote, rkey};
    wr.atomic = {remote, 1, 2, rkey};
    return wr;
  }

  // Runs until `count` requester completions arrived (or a virtual minute passed).
  std::vector<WorkCompletion> completions_at_a(std::size_t count, TimeNs limit = 60 * kSecond) {
    std::vector<WorkCompletion> all;
    network_->run_until(
        [&] {
          auto more = drain(a_);
          all.insert(all.end(), more.begin(), more.end());
          return all.size() >= count;
        },
        network_->now() + limit);
    return all;
  }

  WcStatus single_status(const SendWr& wr) {
    EXPECT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
    auto all = completions_at_a(1);
    EXPECT_EQ(all.size(), 1u);
    return all.empty() ? WcStatus::general_err : all[0].status;
  }

  bool remote_untouched() const {
    return std::all_of(remote_.begin(), remote_.end(), [](std::uint8_t b) { return b == 0x22; });
  }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_, remote_keys_;
  Sge sge_;
  std::uint64_t next_wr_id_ = 1;
};

TEST_F(RcErrors, BadRkeyIsARemoteAccessErrorAndTheQpFails) {
  EXPECT_EQ(single_status(rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey ^ 0x5A5A, 64)),
            WcStatus::rem_access_err);
  EXPECT_TRUE(remote_untouched());
  EXPECT_EQ(a_.engine->query_qp(a_.qpn)->qp_state, QpState::err);
  EXPECT_EQ(b_.engine->query_qp(b_.qpn)->qp_state, QpState::err);
  // Later work on the failed QP is flushed, never executed.
  ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8)),
            std::errc{});
  auto flushed = drain(a_);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].status, WcStatus::wr_flush_err);
  EXPECT_TRUE(remote_untouched());
}

TEST_F(RcErrors, OutOfBoundsWriteTouchesNothing) {
  // Starts inside, ends one byte past the region: a multi-packet WRITE.
  EXPECT_EQ(single_status(rdma(WrOpcode::rdma_write, remote_addr(4096 - 2048 + 1), remote_keys_.rkey, 2048)),
            WcStatus::rem_access_err);
  EXPECT_TRUE(remote_untouched());
}

TEST_F(RcErrors, OutOfBoundsReadIsRefused) {
  EXPECT_EQ(single_status(rdma(WrOpcode::rdma_read, remote_addr(0) - 8, remote_keys_.rkey, 16)),
            WcStatus::rem_access_err);
}

TEST_F(RcErrors, MisalignedAtomicIsAnInvalidRequest) {
  EXPECT_EQ(single_status(rdma(WrOpcode::atomic_fetch_and_add, remote_addr(4), remote_keys_.rkey, 8)),
            WcStatus::rem_inv_req_err);
  EXPECT_TRUE(remote_untouched());
}

TEST_F(RcErrors, RkeyFromAnotherProtectionDomainIsRefused) {
  std::uint32_t other_pd = *b_.engine->alloc_pd();
  std::vector<std::uint8_t> other(256, 0x33);
  MrKeys keys = *b_.engine->reg_mr(other_pd, other.data(), other.size(), kAll);
  EXPECT_EQ(single_status(rdma(WrOpcode::rdma_write, reinterpret_cast<std::uintptr_t>(other.data()), keys.rkey, 16)),
            WcStatus::rem_access_err);
  EXPECT_TRUE(std::all_of(other.begin(), other.end(), [](std::uint8_t b) { return b == 0x33; }));
}

TEST_F(RcErrors, RegionWithoutRemoteWriteIsRefused) {
  std::vector<std::uint8_t> read_only(256, 0x44);
  MrKeys keys = *b_.engine->reg_mr(b_.pd, read_only.data(), read_only.size(), kAccessRemoteRead);
  auto addr = reinterpret_cast<std::uintptr_t>(read_only.data());
  EXPECT_EQ(single_status(rdma(WrOpcode::rdma_write, addr, keys.rkey, 16)), WcStatus::rem_access_err);
  EXPECT_TRUE(std::all_of(read_only.begin(), read_only.end(), [](std::uint8_t b) { return b == 0x44; }));
}

TEST_F(RcErrors, QpWithoutRemoteReadAccessRefusesReads) {
  RcOptions options;
  options.access = kAccessLocalWrite | kAccessRemoteWrite;
  connect(options);
  EXPECT_EQ(single_status(rdma(WrOpcode::rdma_read, remote_addr(0), remote_keys_.rkey, 16)),
            WcStatus::rem_access_err);
}

TEST_F(RcErrors, RnrWithoutRetriesFails) {
  RcOptions options;
  options.rnr_retry = 0;
  connect(options);
  SendWr send = rdma(WrOpcode::send, 0, 0, 32);
  EXPECT_EQ(single_status(send), WcStatus::rnr_retry_exc_err);
}

TEST_F(RcErrors, RnrRetriesUntilAReceiveIsPosted) {
  RcOptions options;
  options.rnr_retry = 7;       // forever
  options.min_rnr_timer = 14;  // 1.28 ms
  connect(options);
  ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::send, 0, 0, 32)), std::errc{});
  // Nothing arrives for 20 ms of virtual time: the sender keeps retrying.
  auto early = completions_at_a(1, 20'000'000);
  EXPECT_TRUE(early.empty());
  EXPECT_GT(b_.engine->counters().rnr_naks_sent, 5u);
  std::vector<std::uint8_t> buffer(64);
  MrKeys keys = *b_.engine->reg_mr(b_.pd, buffer.data(), buffer.size(), kAll);
  Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), 64, keys.lkey};
  ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{9, {&sge, 1}}), std::errc{});
  auto late = completions_at_a(1);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].status, WcStatus::success);
  EXPECT_EQ(buffer[0], 0x11);
}

// The RNR budget is a message's: each of several SENDs may meet one RNR NAK
// (a receive posted late each time, as a ping-pong whose side posts its
// receive after its own send completes) and still succeed with rnr_retry 1.
TEST_F(RcErrors, EachMessageHasItsOwnRnrBudget) {
  RcOptions options;
  options.rnr_retry = 1;
  options.min_rnr_timer = 14;  // 1.28 ms
  connect(options);
  std::vector<std::uint8_t> buffer(64);
  MrKeys keys = *b_.engine->reg_mr(b_.pd, buffer.data(), buffer.size(), kAll);
  Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), 64, keys.lkey};
  for (std::uint64_t message = 0; message < 5; ++message) {
    ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::send, 0, 0, 32)), std::errc{});
    std::uint64_t naks_before = b_.engine->counters().rnr_naks_sent;
    EXPECT_TRUE(completions_at_a(1, 1'000'000).empty());  // 1 ms: NAKed once, waiting out the timer
    EXPECT_EQ(b_.engine->counters().rnr_naks_sent, naks_before + 1);
    ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{message, {&sge, 1}}), std::errc{});
    auto done = completions_at_a(1);
    ASSERT_EQ(done.size(), 1u) << "message " << message;
    EXPECT_EQ(done[0].status, WcStatus::success) << "message " << message;
    drain(b_);
  }
}

TEST_F(RcErrors, SilentPeerExhaustsRetriesAndFlushesTheRest) {
  RcOptions options;
  options.retry_cnt = 3;
  options.timeout = 10;  // 4.2 ms
  connect(options);
  network_->faults().drop = 1.0;  // the peer vanished
  ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8)),
            std::errc{});
  ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::rdma_read, remote_addr(0), remote_keys_.rkey, 8)),
            std::errc{});
  TimeNs start = network_->now();
  auto all = completions_at_a(2);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status, WcStatus::retry_exc_err);
  EXPECT_EQ(all[1].status, WcStatus::wr_flush_err);
  EXPECT_EQ(a_.engine->counters().timeouts, 4u);  // the first try and 3 retries each time out
  // 4 timeouts of 4.096 us << 10 each.
  EXPECT_GE(network_->now() - start, 4 * (TimeNs{4096} << 10));
  EXPECT_EQ(a_.engine->query_qp(a_.qpn)->qp_state, QpState::err);
}

TEST_F(RcErrors, PostingInTheWrongStateIsRefused) {
  std::uint32_t cq = *a_.engine->create_cq(16);
  QpInitAttr init;
  init.pd = a_.pd;
  init.send_cq = init.recv_cq = cq;
  init.cap = QpCap{4, 4, 1, 1, 0};
  std::uint32_t qpn = *a_.engine->create_qp(init);
  SendWr wr = rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8);
  EXPECT_EQ(a_.engine->post_send(qpn, wr), std::errc::invalid_argument);  // RESET
  EXPECT_EQ(a_.engine->post_recv(qpn, RecvWr{1, {}}), std::errc::invalid_argument);
  QpAttr attr;
  attr.qp_state = QpState::init;
  ASSERT_EQ(a_.engine->modify_qp(qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags),
            std::errc{});
  EXPECT_EQ(a_.engine->post_send(qpn, wr), std::errc::invalid_argument);  // INIT
  EXPECT_EQ(a_.engine->post_recv(qpn, RecvWr{1, {}}), std::errc{});
  EXPECT_EQ(a_.engine->post_send(0xABCDEF, wr), std::errc::invalid_argument);  // no such QP
  attr.qp_state = QpState::rts;
  EXPECT_EQ(a_.engine->modify_qp(qpn, attr, kQpAttrState | kQpAttrSqPsn), std::errc::invalid_argument);
}

TEST_F(RcErrors, CompletionQueueOverflowIsReported) {
  RcOptions options;
  options.cq_size = 4;
  connect(options);
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8)),
              std::errc{});
  }
  network_->run_until([] { return false; }, network_->now() + kSecond);
  WorkCompletion wc[8];
  EXPECT_EQ(a_.engine->poll_cq(a_.cq, wc).error(), std::errc::no_buffer_space);
}

TEST_F(RcErrors, WorkRequestsBeyondTheLimitsAreRefused) {
  std::vector<Sge> too_many(5, Sge{reinterpret_cast<std::uintptr_t>(local_.data()), 8, local_keys_.lkey});
  SendWr wr = rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8);
  wr.sg_list = too_many;  // max_send_sge is 4
  EXPECT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc::invalid_argument);

  SendWr big_inline = rdma(WrOpcode::send, 0, 0, 257);  // max_inline_data is 256
  big_inline.send_flags |= kSendInline;
  EXPECT_EQ(a_.engine->post_send(a_.qpn, big_inline), std::errc::invalid_argument);

  SendWr short_atomic = rdma(WrOpcode::atomic_fetch_and_add, remote_addr(0), remote_keys_.rkey, 4);
  EXPECT_EQ(a_.engine->post_send(a_.qpn, short_atomic), std::errc::invalid_argument);

  RcOptions options;
  options.cap = QpCap{2, 2, 1, 1, 0};
  connect(options);
  SendWr write = rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8);
  EXPECT_EQ(a_.engine->post_send(a_.qpn, write), std::errc{});
  EXPECT_EQ(a_.engine->post_send(a_.qpn, write), std::errc{});
  EXPECT_EQ(a_.engine->post_send(a_.qpn, write), std::errc::not_enough_memory);  // send queue full

  QpInitAttr init;
  init.pd = a_.pd;
  init.send_cq = init.recv_cq = a_.cq;
  init.cap = QpCap{a_.engine->attributes().max_qp_wr + 1, 1, 1, 1, 0};
  EXPECT_EQ(a_.engine->create_qp(init).error(), std::errc::invalid_argument);
}

TEST_F(RcErrors, BadLocalKeyCompletesWithLocalProtectionError) {
  SendWr wr = rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8);
  Sge bad{reinterpret_cast<std::uintptr_t>(local_.data()), 8, local_keys_.lkey ^ 1};
  wr.sg_list = {&bad, 1};
  EXPECT_EQ(single_status(wr), WcStatus::loc_prot_err);
  EXPECT_TRUE(remote_untouched());
}

TEST_F(RcErrors, ReceiveBufferTooSmall) {
  std::vector<std::uint8_t> small(16);
  MrKeys keys = *b_.engine->reg_mr(b_.pd, small.data(), small.size(), kAll);
  Sge sge{reinterpret_cast<std::uintptr_t>(small.data()), 16, keys.lkey};
  ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{5, {&sge, 1}}), std::errc{});
  EXPECT_EQ(single_status(rdma(WrOpcode::send, 0, 0, 17)), WcStatus::rem_inv_req_err);
  auto at_b = drain(b_);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].status, WcStatus::loc_len_err);
}

// A destroyed QP's completions never surface: their wr_ids name contexts
// the application freed with the QP (libfabric's rxm reposts a receive
// buffer it finds in a completion to the endpoint it came from).
TEST_F(RcErrors, DestroyingAQpDropsItsCompletionsFromTheCq) {
  ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::rdma_write, remote_addr(0), remote_keys_.rkey, 8)), std::errc{});
  network_->idle_until(network_->now() + kSecond);
  ASSERT_EQ(drain(a_).size(), 1u);  // one second is enough for a completion to wait in the CQ
  ASSERT_EQ(a_.engine->post_send(a_.qpn, rdma(WrOpcode::rdma_write, remote_addr(8), remote_keys_.rkey, 8)), std::errc{});
  network_->idle_until(network_->now() + kSecond);
  EXPECT_EQ(a_.engine->destroy_qp(a_.qpn), std::errc{});
  EXPECT_TRUE(drain(a_).empty());
}

TEST_F(RcErrors, DeallocatingBusyObjectsIsRefused) {
  EXPECT_EQ(a_.engine->dealloc_pd(a_.pd), std::errc::device_or_resource_busy);
  EXPECT_EQ(a_.engine->destroy_cq(a_.cq), std::errc::device_or_resource_busy);
  EXPECT_EQ(a_.engine->dereg_mr(local_keys_.lkey), std::errc{});
  EXPECT_EQ(a_.engine->dereg_mr(local_keys_.lkey), std::errc::invalid_argument);
  EXPECT_EQ(a_.engine->destroy_qp(a_.qpn), std::errc{});
  EXPECT_EQ(a_.engine->destroy_cq(a_.cq), std::errc{});
  EXPECT_EQ(a_.engine->dealloc_pd(a_.pd), std::errc{});
}

// A receive posted before its region was deregistered (the buffer may be
// freed by now) or moved to another PD: the arriving SEND finds the key gone,
// as a NIC would when it uses the WQE. The receive fails with a local
// protection error, the sender hears a remote operational error, and not a
// byte lands in the old buffer.
TEST_F(RcErrors, AReceiveWhoseRegionWentIsALocalProtectionErrorAndTouchesNothing) {
  for (bool deregister : {true, false}) {
    SCOPED_TRACE(deregister ? "deregistered" : "moved to another PD");
    connect(RcOptions{});
    std::vector<std::uint8_t> buffer(64, 0x33);
    MrKeys keys = *b_.engine->reg_mr(b_.pd, buffer.data(), buffer.size(), kAll);
    Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), 64, keys.lkey};
    ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{7, {&sge, 1}}), std::errc{});
    if (deregister) {
      ASSERT_EQ(b_.engine->dereg_mr(keys.lkey), std::errc{});
    } else {
      std::uint32_t other_pd = *b_.engine->alloc_pd();
      ASSERT_EQ(b_.engine->rereg_mr(keys.lkey, other_pd, buffer.data(), buffer.size(), kAll), std::errc{});
    }
    EXPECT_EQ(single_status(rdma(WrOpcode::send, 0, 0, 32)), WcStatus::rem_op_err);
    auto at_b = drain(b_);
    ASSERT_EQ(at_b.size(), 1u);
    EXPECT_EQ(at_b[0].wr_id, 7u);
    EXPECT_EQ(at_b[0].status, WcStatus::loc_prot_err);
    EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(), [](std::uint8_t b) { return b == 0x33; }));
  }
}

// The same for a READ's local buffer deregistered while the READ is out.
TEST_F(RcErrors, AReadWhoseBufferWasDeregisteredMeanwhileWritesNothing) {
  std::vector<std::uint8_t> buffer(64, 0x44);
  MrKeys keys = *a_.engine->reg_mr(a_.pd, buffer.data(), buffer.size(), kAll);
  SendWr wr = rdma(WrOpcode::rdma_read, remote_addr(0), remote_keys_.rkey, 64);
  Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), 64, keys.lkey};
  wr.sg_list = {&sge, 1};
  ASSERT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
  ASSERT_EQ(a_.engine->dereg_mr(keys.lkey), std::errc{});
  auto all = completions_at_a(1);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, WcStatus::loc_prot_err);
  EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(), [](std::uint8_t b) { return b == 0x44; }));
}

// Moving a QP to RESET clears its completions from its CQs, flushed ones
// included (as mlx4 and mlx5 do): restarted, it finds its CQs as if new.
TEST_F(RcErrors, ResettingAQpDropsItsCompletionsFromTheCq) {
  Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()), 8, local_keys_.lkey};
  ASSERT_EQ(a_.engine->post_recv(a_.qpn, RecvWr{1, {&sge, 1}}), std::errc{});
  QpAttr error;
  error.qp_state = QpState::err;
  ASSERT_EQ(a_.engine->modify_qp(a_.qpn, error, kQpAttrState), std::errc{});
  network_->idle_until(network_->now() + kSecond);
  QpAttr reset;
  reset.qp_state = QpState::reset;
  ASSERT_EQ(a_.engine->modify_qp(a_.qpn, reset, kQpAttrState), std::errc{});
  EXPECT_TRUE(drain(a_).empty());
}

}  // namespace
}  // namespace uroce::testing
