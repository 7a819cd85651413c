// XRC in the engine (IBTA Annex A14): an xrc_send QP's messages name an XRC
// SRQ on the remote engine; the xrc_recv QP there takes the receive from
// that SRQ, completes it on the SRQ's CQ, and checks remote keys against the
// SRQ's PD. An SRQ of another domain, or none, is refused with a NAK, and
// nothing lands anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

class Xrc : public ::testing::Test {
 protected:
  void SetUp() override {
    network_ = std::make_unique<TestNetwork>(9, ChannelFaults{});
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    sender_.engine = &a;
    sender_.pd = *a.alloc_pd();
    sender_.cq = *a.create_cq(64);
    QpInitAttr init;
    init.qp_type = QpType::xrc_send;
    init.pd = sender_.pd;
    init.send_cq = sender_.cq;
    init.cap = {16, 0, 1, 0, 0};
    sender_.qpn = *a.create_qp(init);

    xrcd_ = *b.open_xrcd();
    receiver_.engine = &b;
    receiver_.pd = *b.alloc_pd();
    receiver_.cq = *b.create_cq(64);
    srq_ = *b.create_xrc_srq(receiver_.pd, xrcd_, receiver_.cq, 16, 1);
    QpInitAttr target;
    target.qp_type = QpType::xrc_recv;
    target.xrcd = xrcd_;
    receiver_.qpn = *b.create_qp(target);
    connect(sender_, receiver_.engine->gid(), receiver_.qpn, false);
    connect(receiver_, sender_.engine->gid(), sender_.qpn, true);

    local_.assign(64, 0x11);
    remote_.assign(256, 0x22);
    local_keys_ = *a.reg_mr(sender_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(receiver_.pd, remote_.data(), remote_.size(), kAll);
  }

  // The modify steps each half takes: RC's, less what its missing half would use.
  static void connect(const Endpoint& end, const Gid& peer, std::uint32_t peer_qpn, bool target) {
    QpAttr attr;
    attr.qp_state = QpState::init;
    attr.qp_access_flags = kAll;
    attr.port_num = 1;
    ASSERT_EQ(end.engine->modify_qp(end.qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags),
              std::errc{});
    attr.qp_state = QpState::rtr;
    attr.path_mtu = PathMtu::mtu1024;
    attr.dest_qp_num = peer_qpn;
    attr.max_dest_rd_atomic = 4;
    attr.min_rnr_timer = 1;
    attr.ah_attr.dgid = peer;
    std::uint32_t rtr = kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn;
    if (target) rtr |= kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer;
    ASSERT_EQ(end.engine->modify_qp(end.qpn, attr, rtr), std::errc{});
    attr.qp_state = QpState::rts;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.max_rd_atomic = 4;
    std::uint32_t rts = kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout;
    if (!target) rts |= kQpAttrRetryCnt | kQpAttrRnrRetry | kQpAttrMaxQpRdAtomic;
    ASSERT_EQ(end.engine->modify_qp(end.qpn, attr, rts), std::errc{});
  }

  // Posts on the sender and runs until it completes; what the receiver's CQ
  // gave meanwhile lands in received_.
  WcStatus post(WrOpcode opcode, std::uint32_t srqn, std::uint32_t length, std::uint64_t remote_offset = 0,
                std::size_t receiver_completions = 0) {
    Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()), length, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = 3;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(remote_.data()) + remote_offset, remote_keys_.rkey};
    wr.xrc_remote_srqn = srqn;
    EXPECT_EQ(sender_.engine->post_send(sender_.qpn, wr), std::errc{});
    auto [at_sender, at_receiver] = wait_for_completions(*network_, sender_, receiver_, 1, receiver_completions);
    received_ = at_receiver;
    EXPECT_EQ(at_sender.size(), 1u);
    return at_sender.empty() ? WcStatus::general_err : at_sender[0].status;
  }

  bool remote_untouched() const {
    return std::all_of(remote_.begin(), remote_.end(), [](std::uint8_t b) { return b == 0x22; });
  }

  std::unique_ptr<TestNetwork> network_;
  Endpoint sender_, receiver_;
  std::uint32_t xrcd_ = 0, srq_ = 0;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_, remote_keys_;
  std::vector<WorkCompletion> received_;
};

TEST_F(Xrc, ASendLandsInTheNamedSrqAndCompletesOnItsCq) {
  Sge receive{reinterpret_cast<std::uintptr_t>(remote_.data()), 64, remote_keys_.lkey};
  ASSERT_EQ(receiver_.engine->post_srq_recv(srq_, RecvWr{77, {&receive, 1}}), std::errc{});
  EXPECT_EQ(post(WrOpcode::send, srq_, 40, 0, 1), WcStatus::success);
  const std::vector<WorkCompletion>& at_receiver = received_;
  ASSERT_EQ(at_receiver.size(), 1u);
  EXPECT_EQ(at_receiver[0].wr_id, 77u);
  EXPECT_EQ(at_receiver[0].status, WcStatus::success);
  EXPECT_EQ(at_receiver[0].byte_len, 40u);
  EXPECT_EQ(at_receiver[0].qp_num, receiver_.qpn);
  EXPECT_TRUE(std::all_of(remote_.begin(), remote_.begin() + 40, [](std::uint8_t b) { return b == 0x11; }));
}

TEST_F(Xrc, AWriteIsCheckedAgainstTheNamedSrqsPd) {
  EXPECT_EQ(post(WrOpcode::rdma_write, srq_, 16, 8), WcStatus::success);
  EXPECT_TRUE(std::all_of(remote_.begin() + 8, remote_.begin() + 24, [](std::uint8_t b) { return b == 0x11; }));
  // An SRQ of the same domain in another PD: the region's key is not its PD's.
  std::uint32_t other_pd = *receiver_.engine->alloc_pd();
  std::uint32_t other_srq = *receiver_.engine->create_xrc_srq(other_pd, xrcd_, receiver_.cq, 4, 1);
  std::fill(remote_.begin(), remote_.end(), 0x22);
  EXPECT_EQ(post(WrOpcode::rdma_write, other_srq, 16, 8), WcStatus::rem_access_err);
  EXPECT_TRUE(remote_untouched());
}

TEST_F(Xrc, AnSrqOfAnotherDomainOrNoneIsAnInvalidRequest) {
  for (bool ordinary : {false, true}) {
    SCOPED_TRACE(ordinary ? "an ordinary SRQ" : "an XRC SRQ of another domain");
    SetUp();
    std::uint32_t other = ordinary ? *receiver_.engine->create_srq(receiver_.pd, 4, 1)
                                   : *receiver_.engine->create_xrc_srq(receiver_.pd, *receiver_.engine->open_xrcd(),
                                                                        receiver_.cq, 4, 1);
    Sge receive{reinterpret_cast<std::uintptr_t>(remote_.data()), 64, remote_keys_.lkey};
    ASSERT_EQ(receiver_.engine->post_srq_recv(other, RecvWr{1, {&receive, 1}}), std::errc{});
    EXPECT_EQ(post(WrOpcode::send, other, 16), WcStatus::rem_inv_req_err);
    EXPECT_TRUE(remote_untouched());
  }
}

TEST_F(Xrc, DomainsInUseCannotClose) {
  EXPECT_EQ(receiver_.engine->close_xrcd(xrcd_), std::errc::device_or_resource_busy);
  EXPECT_EQ(receiver_.engine->destroy_qp(receiver_.qpn), std::errc{});
  EXPECT_EQ(receiver_.engine->destroy_srq(srq_), std::errc{});
  EXPECT_EQ(receiver_.engine->close_xrcd(xrcd_), std::errc{});
  EXPECT_EQ(receiver_.engine->close_xrcd(xrcd_), std::errc::invalid_argument);
}

}  // namespace
}  // namespace uroce::testing
