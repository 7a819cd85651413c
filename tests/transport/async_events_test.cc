// Asynchronous events, numbered as ibv_event_type: port active at start, CQ
// overflow, the responder's affiliated errors, communication established,
// SQ drained after an SQD transition that asked for it, and last WQE
// reached for SRQ QPs (the SRQ limit is in srq_test.cc).
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kSecond = 1'000'000'000;

std::vector<AsyncEvent> events_of(Engine& engine) {
  std::vector<AsyncEvent> all;
  while (auto event = engine.poll_async_event()) all.push_back(*event);
  return all;
}

bool has(const std::vector<AsyncEvent>& events, AsyncEventType type, std::uint32_t element) {
  return std::any_of(events.begin(), events.end(),
                     [&](const AsyncEvent& e) { return e.type == type && e.element == element; });
}

class AsyncEvents : public ::testing::Test {
 protected:
  void connect(RcOptions options = {}) {
    network_ = std::make_unique<TestNetwork>(4, ChannelFaults{});
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    std::tie(a_, b_) = connect_rc(a, b, options);
    local_.assign(8192, 1);
    remote_.assign(8192, 2);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, remote_.data(), remote_.size(), kAll);
  }

  void post(WrOpcode opcode, std::uint32_t length, std::uint32_t rkey, std::uint64_t wr_id = 1) {
    sge_ = Sge{reinterpret_cast<std::uintptr_t>(local_.data()), length, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge_, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(remote_.data()), rkey};
    ASSERT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
  }

  void settle() { network_->run_until([] { return false; }, network_->now() + kSecond); }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_, remote_keys_;
  Sge sge_;
};

TEST_F(AsyncEvents, PortIsActiveFromTheStart) {
  Engine engine(EngineConfig{});
  auto events = events_of(engine);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, AsyncEventType::port_active);
  EXPECT_EQ(events[0].element, 1u);
  EXPECT_EQ(static_cast<int>(AsyncEventType::qp_last_wqe_reached), 16);  // ibv_event_type numbering
}

TEST_F(AsyncEvents, CqOverflowIsRaisedOnce) {
  RcOptions options;
  options.cq_size = 2;
  connect(options);
  events_of(*a_.engine);
  for (std::uint64_t i = 1; i <= 4; ++i) post(WrOpcode::rdma_write, 8, remote_keys_.rkey, i);
  settle();
  auto events = events_of(*a_.engine);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, AsyncEventType::cq_err);
  EXPECT_EQ(events[0].element, a_.cq);
}

TEST_F(AsyncEvents, ResponderAccessViolationIsAnAffiliatedError) {
  connect();
  events_of(*a_.engine);
  events_of(*b_.engine);
  post(WrOpcode::rdma_write, 8, remote_keys_.rkey ^ 0x100);  // a bad rkey
  settle();
  auto events = events_of(*b_.engine);
  EXPECT_TRUE(has(events, AsyncEventType::qp_access_err, b_.qpn));
  EXPECT_EQ(b_.engine->query_qp(b_.qpn)->qp_state, QpState::err);
  EXPECT_TRUE(events_of(*a_.engine).empty());  // the requester learns from its completion
}

TEST_F(AsyncEvents, ResponderRefusalsRaiseTheMatchingAffiliatedError) {
  RcOptions options;
  options.access = kAccessLocalWrite | kAccessRemoteWrite;  // no READ permission on the responder's QP
  connect(options);
  events_of(*b_.engine);
  post(WrOpcode::rdma_read, 8, remote_keys_.rkey);
  settle();
  // A READ on a QP that grants no remote read is an access violation ...
  EXPECT_TRUE(has(events_of(*b_.engine), AsyncEventType::qp_access_err, b_.qpn));

  // ... and a READ to a QP that keeps no READ records (max_dest_rd_atomic 0)
  // is an invalid request.
  options.access = kAll;
  options.max_rd_atomic = 0;
  connect(options);
  events_of(*b_.engine);
  post(WrOpcode::rdma_read, 8, remote_keys_.rkey);
  settle();
  EXPECT_TRUE(has(events_of(*b_.engine), AsyncEventType::qp_req_err, b_.qpn));
}

TEST_F(AsyncEvents, FirstPacketInRtrEstablishesCommunication) {
  RcOptions options;
  options.responder_stays_in_rtr = true;
  connect(options);
  events_of(*b_.engine);
  post(WrOpcode::rdma_write, 8, remote_keys_.rkey, 1);
  post(WrOpcode::rdma_write, 8, remote_keys_.rkey, 2);
  settle();
  auto events = events_of(*b_.engine);
  ASSERT_EQ(events.size(), 1u);  // once, however many packets follow
  EXPECT_EQ(events[0].type, AsyncEventType::comm_est);
  EXPECT_EQ(events[0].element, b_.qpn);
  EXPECT_EQ(drain(a_).size(), 2u);  // an RTR responder still answers
}

TEST_F(AsyncEvents, SqdStopsNewRequestsAndReportsTheDrain) {
  connect();
  events_of(*a_.engine);
  post(WrOpcode::rdma_write, 6000, remote_keys_.rkey, 1);  // 6 packets at MTU 1024
  std::vector<std::uint8_t> buffer(kMaxDatagramLength);
  // Let the first packet out, then ask for SQD with notification.
  ASSERT_GT(a_.engine->poll_transmit(buffer, 0).length, 0u);
  QpAttr attr;
  attr.qp_state = QpState::sqd;
  attr.en_sqd_async_notify = true;
  ASSERT_EQ(a_.engine->modify_qp(a_.qpn, attr, kQpAttrState | kQpAttrEnSqdAsyncNotify), std::errc{});
  EXPECT_TRUE(a_.engine->query_qp(a_.qpn)->sq_draining);
  post(WrOpcode::rdma_write, 8, remote_keys_.rkey, 2);  // posted while draining: waits
  settle();  // the first packet was lost (never handed to the network): the timer resends it
  EXPECT_FALSE(a_.engine->query_qp(a_.qpn)->sq_draining);
  auto events = events_of(*a_.engine);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, AsyncEventType::sq_drained);
  EXPECT_EQ(events[0].element, a_.qpn);
  auto done = drain(a_);
  ASSERT_EQ(done.size(), 1u);  // the message in progress finished; the new one waits
  EXPECT_EQ(done[0].wr_id, 1u);

  attr.qp_state = QpState::rts;
  ASSERT_EQ(a_.engine->modify_qp(a_.qpn, attr, kQpAttrState), std::errc{});
  settle();
  done = drain(a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 2u);
}

TEST_F(AsyncEvents, SrqQpInErrorReachesItsLastWqe) {
  network_ = std::make_unique<TestNetwork>(4, ChannelFaults{});
  Engine& engine = network_->add_engine();
  std::uint32_t pd = *engine.alloc_pd();
  std::uint32_t cq = *engine.create_cq(64);
  std::uint32_t srq = *engine.create_srq(pd, 8, 1);
  std::vector<std::uint8_t> buffer(1024);
  MrKeys keys = *engine.reg_mr(pd, buffer.data(), buffer.size(), kAll);
  Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), 1024, keys.lkey};
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_EQ(engine.post_srq_recv(srq, RecvWr{i, {&sge, 1}}), std::errc{});
  EXPECT_EQ(engine.arm_srq_limit(srq, 9), std::errc::invalid_argument);  // beyond max_wr
  ASSERT_EQ(engine.arm_srq_limit(srq, 4), std::errc{});
  events_of(engine);

  QpInitAttr init;
  init.pd = pd;
  init.send_cq = init.recv_cq = cq;
  init.cap = QpCap{4, 0, 1, 1, 0};
  init.srq = srq;
  std::uint32_t qpn = *engine.create_qp(init);
  QpAttr attr;
  attr.qp_state = QpState::err;
  ASSERT_EQ(engine.modify_qp(qpn, attr, kQpAttrState), std::errc{});
  auto events = events_of(engine);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, AsyncEventType::qp_last_wqe_reached);
  EXPECT_EQ(events[0].element, qpn);
}

}  // namespace
}  // namespace uroce::testing
