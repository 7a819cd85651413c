// uroce's libibverbs called as a verbs program calls it (this executable is
// linked to the library, not to rdma-core's): two devices in one process,
// RC QPs joined by their RoCE v2 GIDs, WRITE / READ / fetch-and-add through
// ibv_post_send and through the ibv_wr_* builders, completions through a
// completion channel, asynchronous events (port active, a refused remote
// access), a destroyed QP's completions leaving its CQ, extended CQs,
// ibv_rereg_mr and ibv_resize_cq, implicit on-demand paging, and the errors
// a program gets for what it may not do.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

namespace {

// The devices come from the environment when the library first looks, so
// each test names its own pair of addresses before that: ctest runs the
// tests as separate processes side by side, and two devices cannot share an
// address's UDP port 4791. (One process running them all keeps the first
// test's pair.) A test missing here gets no pair and fails, rather than
// sharing one with another test and failing only when the two overlap.
const char* addresses_for(const std::string& test) {
  static const std::pair<const char*, const char*> kPairs[] = {
      {"WriteReadAndFetchAddCompleteThroughTheChannel", "127.0.4.7,127.0.4.8"},
      {"WrBuildersPostInlineWritesAsABatch", "127.0.4.9,127.0.4.10"},
      {"AsyncEventsReportPortActiveAndARefusedRemoteAccess", "127.0.4.11,127.0.4.12"},
      {"WhatAProgramMayNotDoIsRefusedWithItsErrno", "127.0.4.13,127.0.4.14"},
      {"DestroyingAQpWaitsForItsAsyncEventsToBeAcknowledged", "127.0.4.32,127.0.4.33"},
      {"ADestroyedQpsCompletionsLeaveItsCq", "127.0.4.30,127.0.4.31"},
      {"AnExtendedCqReadsEachFieldAndStampsTheCompletion", "127.0.4.34,127.0.4.35"},
      {"RereggedRegionsAndResizedCqsServeWithTheirNewAttributes", "127.0.4.36,127.0.4.37"},
      {"AnImplicitOdpRegionReachesMappedMemoryAndRefusesTheRest", "127.0.4.38,127.0.4.39"},
      {"AContextImportsAgainAfterAnImportedOneCloses", "127.0.4.40,127.0.4.41"},
      {"UdDatagramsToAGroupReachEveryAttachedQpThroughTheUdpPort", "127.0.4.42,127.0.4.43"},
  };
  for (const auto& [name, pair] : kPairs) {
    if (test == name) return pair;
  }
  return nullptr;
}

constexpr std::size_t kBufferSize = 4096;
constexpr int kGidIndex = 1;  // the IPv4-mapped RoCE v2 entry

struct Side {
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  alignas(8) std::array<std::uint8_t, kBufferSize> buffer{};
};

bool wait_readable(int fd, int timeout_ms) {
  pollfd entry{fd, POLLIN, 0};
  return ::poll(&entry, 1, timeout_ms) == 1;
}

class VerbsApi : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    const char* addresses = addresses_for(test);
    ASSERT_NE(addresses, nullptr) << test << " needs its own pair of addresses in addresses_for";
    ASSERT_EQ(::setenv("UROCE_ADDRESS", addresses, 1), 0);
    int count = 0;
    devices_ = ibv_get_device_list(&count);
    ASSERT_EQ(count, 2);
    ASSERT_NO_FATAL_FAILURE(open(a_, devices_[0]));
    ASSERT_NO_FATAL_FAILURE(open(b_, devices_[1]));
    ASSERT_NO_FATAL_FAILURE(connect(a_, b_));
    ASSERT_NO_FATAL_FAILURE(connect(b_, a_));
  }

  void TearDown() override {
    for (Side* side : {&a_, &b_}) {
      if (side->qp) {
        EXPECT_EQ(ibv_destroy_qp(side->qp), 0);
      }
      if (side->cq) {
        EXPECT_EQ(ibv_destroy_cq(side->cq), 0);
      }
      if (side->channel) {
        EXPECT_EQ(ibv_destroy_comp_channel(side->channel), 0);
      }
      if (side->mr) {
        EXPECT_EQ(ibv_dereg_mr(side->mr), 0);
      }
      if (side->pd) {
        EXPECT_EQ(ibv_dealloc_pd(side->pd), 0);
      }
      if (side->context) {
        EXPECT_EQ(ibv_close_device(side->context), 0);
      }
    }
    ibv_free_device_list(devices_);
  }

  void open(Side& side, ibv_device* device) {
    side.context = ibv_open_device(device);
    ASSERT_NE(side.context, nullptr);
    side.pd = ibv_alloc_pd(side.context);
    ASSERT_NE(side.pd, nullptr) << std::strerror(errno);
    side.mr = ibv_reg_mr(side.pd, side.buffer.data(), side.buffer.size(),
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC);
    ASSERT_NE(side.mr, nullptr);
    side.channel = ibv_create_comp_channel(side.context);
    ASSERT_NE(side.channel, nullptr);
    side.cq = ibv_create_cq(side.context, 64, &side, side.channel, 0);
    ASSERT_NE(side.cq, nullptr);
    ibv_qp_init_attr init{};
    init.send_cq = side.cq;
    init.recv_cq = side.cq;
    init.qp_type = IBV_QPT_RC;
    init.cap = {16, 16, 1, 1, 64};
    side.qp = ibv_create_qp(side.pd, &init);
    ASSERT_NE(side.qp, nullptr);
  }

  // Takes `from` to RTS towards `to`.
  void connect(Side& from, Side& to) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    ASSERT_EQ(ibv_modify_qp(from.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = IBV_MTU_1024;
    attr.dest_qp_num = to.qp->qp_num;
    attr.rq_psn = 100;
    attr.max_dest_rd_atomic = 4;
    attr.min_rnr_timer = 12;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.port_num = 1;
    attr.ah_attr.grh.sgid_index = kGidIndex;
    attr.ah_attr.grh.hop_limit = 64;
    ASSERT_EQ(ibv_query_gid(to.context, 1, kGidIndex, &attr.ah_attr.grh.dgid), 0);
    ASSERT_EQ(ibv_modify_qp(from.qp, &attr,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
              0);
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 100;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.max_rd_atomic = 4;
    ASSERT_EQ(ibv_modify_qp(from.qp, &attr,
                            IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_MAX_QP_RD_ATOMIC),
              0);
  }

  // Arms the CQ, sleeps on the channel's fd, takes the event and the completion.
  ibv_wc next_completion(Side& side) {
    ibv_wc wc{};
    if (ibv_poll_cq(side.cq, 1, &wc) == 1) return wc;
    EXPECT_EQ(ibv_req_notify_cq(side.cq, 0), 0);
    while (ibv_poll_cq(side.cq, 1, &wc) == 0) {
      EXPECT_TRUE(wait_readable(side.channel->fd, 5000)) << "no completion event";
      ibv_cq* cq = nullptr;
      void* cq_context = nullptr;
      EXPECT_EQ(ibv_get_cq_event(side.channel, &cq, &cq_context), 0);
      EXPECT_EQ(cq, side.cq);
      EXPECT_EQ(cq_context, &side);
      ibv_ack_cq_events(cq, 1);
      EXPECT_EQ(ibv_req_notify_cq(side.cq, 0), 0);
    }
    return wc;
  }

  ibv_send_wr remote(ibv_wr_opcode opcode, ibv_sge& sge, std::uint64_t offset, std::uint32_t rkey) {
    ibv_send_wr wr{};
    wr.wr_id = 7;
    wr.opcode = opcode;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(b_.buffer.data()) + offset;
    wr.wr.rdma.rkey = rkey;
    return wr;
  }

  // New QPs for both sides, on these CQs, connected again.
  void replace_qps(ibv_cq* a_cq, ibv_cq* b_cq) {
    for (auto [side, cq] : {std::pair{&a_, a_cq}, std::pair{&b_, b_cq}}) {
      ASSERT_EQ(ibv_destroy_qp(side->qp), 0);
      ibv_qp_init_attr init{};
      init.send_cq = cq;
      init.recv_cq = cq;
      init.qp_type = IBV_QPT_RC;
      init.cap = {16, 16, 1, 1, 64};
      side->qp = ibv_create_qp(side->pd, &init);
      ASSERT_NE(side->qp, nullptr);
    }
    ASSERT_NO_FATAL_FAILURE(connect(a_, b_));
    ASSERT_NO_FATAL_FAILURE(connect(b_, a_));
  }

  // Posts one WR from a and waits for its completion on a's own CQ.
  ibv_wc post_and_wait(ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(a_.qp, &wr, &bad), 0);
    return next_completion(a_);
  }

  ibv_device** devices_ = nullptr;
  Side a_, b_;
};

std::uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(now.tv_nsec);
}

// ibv_create_cq_ex with every field Soft-RoCE's provider offers and the
// completion timestamp: a WRITE with immediate read back field by field on
// both sides, stamped (in the 1 GHz clock query_device_ex reports) between
// the post and the poll.
TEST_F(VerbsApi, AnExtendedCqReadsEachFieldAndStampsTheCompletion) {
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 32;
  attr.wc_flags = std::uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  ibv_cq_ex* a_cq = ibv_create_cq_ex(a_.context, &attr);
  ibv_cq_ex* b_cq = ibv_create_cq_ex(b_.context, &attr);
  ASSERT_NE(a_cq, nullptr) << std::strerror(errno);
  ASSERT_NE(b_cq, nullptr);
  ASSERT_NO_FATAL_FAILURE(replace_qps(ibv_cq_ex_to_cq(a_cq), ibv_cq_ex_to_cq(b_cq)));
  ibv_device_attr_ex device{};
  ASSERT_EQ(ibv_query_device_ex(a_.context, nullptr, &device), 0);
  EXPECT_EQ(device.hca_core_clock, 1'000'000u);  // kHz

  ibv_sge landing{reinterpret_cast<std::uintptr_t>(b_.buffer.data()), 0, b_.mr->lkey};
  ibv_recv_wr receive{};
  receive.wr_id = 33;
  receive.sg_list = &landing;
  receive.num_sge = 1;
  ibv_recv_wr* bad_receive = nullptr;
  ASSERT_EQ(ibv_post_recv(b_.qp, &receive, &bad_receive), 0);
  std::memcpy(a_.buffer.data(), "extended", 8);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
  ibv_send_wr write = remote(IBV_WR_RDMA_WRITE_WITH_IMM, sge, 64, b_.mr->rkey);
  write.imm_data = htonl(0x12345678);
  std::uint64_t posted = monotonic_ns();
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_.qp, &write, &bad), 0);

  ibv_poll_cq_attr poll{};
  int polled = ENOENT;
  for (int i = 0; i < 5'000'000 && polled == ENOENT; ++i) polled = ibv_start_poll(b_cq, &poll);
  ASSERT_EQ(polled, 0);
  std::uint64_t taken = monotonic_ns();
  EXPECT_EQ(b_cq->status, IBV_WC_SUCCESS);
  EXPECT_EQ(b_cq->wr_id, 33u);
  EXPECT_EQ(ibv_wc_read_opcode(b_cq), IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(ibv_wc_read_byte_len(b_cq), 8u);
  EXPECT_EQ(ntohl(ibv_wc_read_imm_data(b_cq)), 0x12345678u);
  EXPECT_TRUE(ibv_wc_read_wc_flags(b_cq) & IBV_WC_WITH_IMM);
  EXPECT_EQ(ibv_wc_read_qp_num(b_cq), b_.qp->qp_num);
  EXPECT_EQ(ibv_wc_read_src_qp(b_cq), a_.qp->qp_num);
  std::uint64_t stamp = ibv_wc_read_completion_ts(b_cq);
  EXPECT_GE(stamp, posted);
  EXPECT_LE(stamp, taken);
  EXPECT_EQ(ibv_next_poll(b_cq), ENOENT);
  ibv_end_poll(b_cq);
  EXPECT_EQ(std::memcmp(b_.buffer.data() + 64, "extended", 8), 0);

  polled = ENOENT;
  for (int i = 0; i < 5'000'000 && polled == ENOENT; ++i) polled = ibv_start_poll(a_cq, &poll);
  ASSERT_EQ(polled, 0);
  EXPECT_EQ(ibv_wc_read_opcode(a_cq), IBV_WC_RDMA_WRITE);
  EXPECT_EQ(a_cq->wr_id, 7u);
  ibv_end_poll(a_cq);

  attr.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;  // a NIC's steering: not offered
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(a_.context, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  for (Side* side : {&a_, &b_}) {
    ASSERT_EQ(ibv_destroy_qp(side->qp), 0);
    side->qp = nullptr;
  }
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(a_cq)), 0);
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(b_cq)), 0);
}

// ibv_rereg_mr keeps the keys and from then on every access is checked
// against the new access flags, PD or range; ibv_resize_cq grows and shrinks.
TEST_F(VerbsApi, RereggedRegionsAndResizedCqsServeWithTheirNewAttributes) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
  std::uint32_t rkey = b_.mr->rkey;
  ASSERT_EQ(ibv_rereg_mr(b_.mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE), 0);
  EXPECT_EQ(b_.mr->rkey, rkey);
  ibv_send_wr write = remote(IBV_WR_RDMA_WRITE, sge, 0, rkey);
  EXPECT_EQ(post_and_wait(write).status, IBV_WC_REM_ACCESS_ERR);

  // Bad arguments, as rdma-core reports them.
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(b_.mr, 1 << 7, nullptr, nullptr, 0, 0), IBV_REREG_MR_ERR_INPUT);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_rereg_mr(b_.mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, nullptr, 0, 0), IBV_REREG_MR_ERR_INPUT);
  EXPECT_EQ(ibv_rereg_mr(b_.mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_REMOTE_WRITE),
            IBV_REREG_MR_ERR_CMD);  // remote write without local write

  // A new range: the old addresses are outside it, the new ones inside.
  ibv_pd* other = ibv_alloc_pd(b_.context);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(ibv_rereg_mr(b_.mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, nullptr,
                         b_.buffer.data() + 1024, 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
            0);
  EXPECT_EQ(ibv_dealloc_pd(other), 0);
  EXPECT_EQ(b_.mr->addr, b_.buffer.data() + 1024);
  EXPECT_EQ(b_.mr->length, 1024u);
  ASSERT_NO_FATAL_FAILURE(replace_qps(a_.cq, b_.cq));  // the refused WRITE left the QPs in error
  write = remote(IBV_WR_RDMA_WRITE, sge, 1024, rkey);
  EXPECT_EQ(post_and_wait(write).status, IBV_WC_SUCCESS);
  write = remote(IBV_WR_RDMA_WRITE, sge, 0, rkey);
  EXPECT_EQ(post_and_wait(write).status, IBV_WC_REM_ACCESS_ERR);

  EXPECT_EQ(ibv_resize_cq(a_.cq, 4096), 0);
  EXPECT_EQ(a_.cq->cqe, 4096);
  EXPECT_EQ(ibv_resize_cq(a_.cq, 8), 0);
  EXPECT_EQ(ibv_resize_cq(a_.cq, 0), EINVAL);
}

// A UD QP in RTS with rdma_cm's UDP Q_Key, on side's CQ.
ibv_qp* make_ud_qp(const Side& side) {
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = side.cq;
  init.qp_type = IBV_QPT_UD;
  init.cap = ibv_qp_cap{8, 8, 1, 1, 0};
  ibv_qp* qp = ibv_create_qp(side.pd, &init);
  if (qp == nullptr) return nullptr;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.qkey = 0x01234567;
  bool ok = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0;
  attr.qp_state = IBV_QPS_RTR;
  ok = ok && ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0;
  attr.qp_state = IBV_QPS_RTS;
  ok = ok && ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
  if (!ok) {
    ibv_destroy_qp(qp);
    return nullptr;
  }
  return qp;
}

// ibv_attach_mcast over real sockets: the device's UDP port joins the group
// on loopback, each attached QP gets its copy, a detached one none; what is
// not a UD QP or not a group is refused with EINVAL, and an IPv6 group on an
// IPv4 device with EOPNOTSUPP.
TEST_F(VerbsApi, UdDatagramsToAGroupReachEveryAttachedQpThroughTheUdpPort) {
  ibv_qp* sender = make_ud_qp(a_);
  ibv_qp* members[2] = {make_ud_qp(b_), make_ud_qp(b_)};
  ASSERT_TRUE(sender != nullptr && members[0] != nullptr && members[1] != nullptr) << std::strerror(errno);
  ibv_gid group{};
  group.raw[10] = group.raw[11] = 0xFF;
  group.raw[12] = 239, group.raw[13] = 127, group.raw[14] = 4, group.raw[15] = 42;
  for (ibv_qp* member : members) ASSERT_EQ(ibv_attach_mcast(member, &group, 0), 0);

  ibv_ah_attr ah_attr{};
  ah_attr.is_global = 1;
  ah_attr.port_num = 1;
  ah_attr.grh.dgid = group;
  ah_attr.grh.sgid_index = kGidIndex;
  ah_attr.grh.hop_limit = 1;
  ibv_ah* ah = ibv_create_ah(a_.pd, &ah_attr);
  ASSERT_NE(ah, nullptr);
  constexpr std::uint32_t kSlot = 1024;
  auto post_receives = [&](ibv_qp* qp, std::uint64_t slot) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(b_.buffer.data() + slot * kSlot), kSlot, b_.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
  };
  auto send = [&](const char* text) {
    std::memcpy(a_.buffer.data(), text, 8);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.ud = {ah, 0xFFFFFF, 0x01234567};
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(sender, &wr, &bad), 0);
    ibv_wc wc = next_completion(a_);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  };
  post_receives(members[0], 0);
  post_receives(members[1], 1);
  send("to both.");
  std::uint32_t received_by[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = next_completion(b_);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, 40u + 8);
    EXPECT_EQ(wc.src_qp, sender->qp_num);
    EXPECT_EQ(std::memcmp(b_.buffer.data() + wc.wr_id * kSlot + 40, "to both.", 8), 0);
    received_by[wc.wr_id] = wc.qp_num;
  }
  EXPECT_EQ(received_by[0], members[0]->qp_num);
  EXPECT_EQ(received_by[1], members[1]->qp_num);

  ASSERT_EQ(ibv_detach_mcast(members[0], &group, 0), 0);
  post_receives(members[0], 2);
  post_receives(members[1], 3);
  send("only 2nd");
  ibv_wc wc = next_completion(b_);
  EXPECT_EQ(wc.qp_num, members[1]->qp_num);
  EXPECT_EQ(wc.wr_id, 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ibv_poll_cq(b_.cq, 1, &wc), 0);  // the detached QP got nothing

  // What is refused.
  EXPECT_EQ(ibv_detach_mcast(members[0], &group, 0), EINVAL);  // not attached
  EXPECT_EQ(ibv_attach_mcast(a_.qp, &group, 0), EINVAL);       // an RC QP
  ibv_gid unicast{};
  ASSERT_EQ(ibv_query_gid(b_.context, 1, kGidIndex, &unicast), 0);
  EXPECT_EQ(ibv_attach_mcast(members[0], &unicast, 0), EINVAL);
  ibv_gid ipv6_group{};
  ipv6_group.raw[0] = 0xFF, ipv6_group.raw[1] = 0x0E, ipv6_group.raw[15] = 1;
  EXPECT_EQ(ibv_attach_mcast(members[0], &ipv6_group, 0), EOPNOTSUPP);

  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  EXPECT_EQ(ibv_destroy_qp(sender), 0);
  for (ibv_qp* member : members) EXPECT_EQ(ibv_destroy_qp(member), 0);  // the attached one is detached first
}

// An implicit ODP region (the whole address space) lets a peer write any
// page the program has mapped writable, and refuses one it may not touch,
// with a remote access error rather than a crash; ibv_advise_mr faults
// mapped pages in and reports the other. The page is PROT_NONE rather than
// unmapped: an unmapped address can be mapped again by another thread of
// the process before the WRITE arrives (it was, once, under the sanitizers).
TEST_F(VerbsApi, AnImplicitOdpRegionReachesMappedMemoryAndRefusesTheRest) {
  ibv_mr* implicit = ibv_reg_mr(b_.pd, nullptr, SIZE_MAX,
                                IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(implicit, nullptr) << std::strerror(errno);
  long page = sysconf(_SC_PAGESIZE);
  void* mapped = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  auto* target = static_cast<std::uint8_t*>(mapped);
  ASSERT_EQ(mprotect(target + page, page, PROT_NONE), 0);  // the second page may not be touched

  std::memcpy(a_.buffer.data(), "anywhere", 8);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
  ibv_send_wr write = remote(IBV_WR_RDMA_WRITE, sge, 0, implicit->rkey);
  write.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(target) + 100;
  EXPECT_EQ(post_and_wait(write).status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(target + 100, "anywhere", 8), 0);

  ibv_sge advice{reinterpret_cast<std::uintptr_t>(target), static_cast<std::uint32_t>(page), implicit->lkey};
  EXPECT_EQ(ibv_advise_mr(b_.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &advice, 1), 0);
  advice.addr += static_cast<std::uint64_t>(page);
  EXPECT_EQ(ibv_advise_mr(b_.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &advice, 1), EFAULT);
  advice.lkey ^= 1;
  EXPECT_EQ(ibv_advise_mr(b_.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &advice, 1), EINVAL);

  write.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(target) + page + 8;
  EXPECT_EQ(post_and_wait(write).status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ibv_dereg_mr(implicit), 0);
  EXPECT_EQ(munmap(target, 2 * page), 0);
}

TEST_F(VerbsApi, WriteReadAndFetchAddCompleteThroughTheChannel) {
  std::memcpy(a_.buffer.data(), "uroce over libibverbs", 21);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 21, a_.mr->lkey};
  ibv_send_wr write = remote(IBV_WR_RDMA_WRITE, sge, 100, b_.mr->rkey);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_.qp, &write, &bad), 0);
  ibv_wc wc = next_completion(a_);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(b_.buffer.data() + 100, "uroce over libibverbs", 21), 0);

  ibv_sge landing{reinterpret_cast<std::uintptr_t>(a_.buffer.data()) + 1000, 21, a_.mr->lkey};
  ibv_send_wr read = remote(IBV_WR_RDMA_READ, landing, 100, b_.mr->rkey);
  ASSERT_EQ(ibv_post_send(a_.qp, &read, &bad), 0);
  wc = next_completion(a_);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 21u);
  EXPECT_EQ(std::memcmp(a_.buffer.data() + 1000, "uroce over libibverbs", 21), 0);

  std::uint64_t counter = 40;
  std::memcpy(b_.buffer.data() + 2048, &counter, 8);
  ibv_sge old_value{reinterpret_cast<std::uintptr_t>(a_.buffer.data()) + 2048, 8, a_.mr->lkey};
  ibv_send_wr add = remote(IBV_WR_ATOMIC_FETCH_AND_ADD, old_value, 0, 0);
  add.wr.atomic.remote_addr = reinterpret_cast<std::uintptr_t>(b_.buffer.data()) + 2048;
  add.wr.atomic.rkey = b_.mr->rkey;
  add.wr.atomic.compare_add = 2;
  ASSERT_EQ(ibv_post_send(a_.qp, &add, &bad), 0);
  wc = next_completion(a_);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  std::memcpy(&counter, a_.buffer.data() + 2048, 8);
  EXPECT_EQ(counter, 40u);
  std::memcpy(&counter, b_.buffer.data() + 2048, 8);
  EXPECT_EQ(counter, 42u);
}

// As on mlx4 and mlx5, a QP destroyed with completions still in its CQ takes
// them along: their wr_ids name buffers the program freed with the QP
// (libfabric's rxm reposts such a receive buffer to the endpoint it closed).
TEST_F(VerbsApi, ADestroyedQpsCompletionsLeaveItsCq) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
  ibv_send_wr write = remote(IBV_WR_RDMA_WRITE, sge, 0, b_.mr->rkey);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_req_notify_cq(a_.cq, 0), 0);
  ASSERT_EQ(ibv_post_send(a_.qp, &write, &bad), 0);
  // The event says the completion is in the CQ; nothing takes it.
  ASSERT_TRUE(wait_readable(a_.channel->fd, 5000)) << "no completion event";
  ibv_cq* cq = nullptr;
  void* cq_context = nullptr;
  ASSERT_EQ(ibv_get_cq_event(a_.channel, &cq, &cq_context), 0);
  ibv_ack_cq_events(cq, 1);
  ASSERT_EQ(ibv_destroy_qp(a_.qp), 0);
  a_.qp = nullptr;
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(a_.cq, 1, &wc), 0) << "a completion of the destroyed QP, wr_id " << wc.wr_id;
}

TEST_F(VerbsApi, WrBuildersPostInlineWritesAsABatch) {
  ibv_qp_ex* qpx = ibv_qp_to_qp_ex(a_.qp);
  ASSERT_NE(qpx, nullptr);
  char first[] = "first", second[] = "second";
  ibv_wr_start(qpx);
  qpx->wr_id = 1;
  qpx->wr_flags = 0;
  ibv_wr_rdma_write(qpx, b_.mr->rkey, reinterpret_cast<std::uintptr_t>(b_.buffer.data()) + 10);
  ibv_wr_set_inline_data(qpx, first, 5);
  qpx->wr_id = 2;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qpx, b_.mr->rkey, reinterpret_cast<std::uintptr_t>(b_.buffer.data()) + 20);
  ibv_wr_set_inline_data(qpx, second, 6);
  std::memcpy(first, "XXXXX", 5);  // inline data is the library's copy from here on
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  ibv_wc wc = next_completion(a_);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);
  EXPECT_EQ(std::memcmp(b_.buffer.data() + 10, "first", 5), 0);
  EXPECT_EQ(std::memcmp(b_.buffer.data() + 20, "second", 6), 0);

  ibv_wr_start(qpx);
  ibv_wr_set_sge(qpx, a_.mr->lkey, 0, 0);  // a setter before any builder
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
}

TEST_F(VerbsApi, AsyncEventsReportPortActiveAndARefusedRemoteAccess) {
  // The port came up when the device opened; a non-blocking async_fd then
  // says EAGAIN once the events are taken.
  ASSERT_EQ(::fcntl(b_.context->async_fd, F_SETFL, O_NONBLOCK), 0);
  ibv_async_event event;
  ASSERT_EQ(ibv_get_async_event(b_.context, &event), 0);
  EXPECT_EQ(event.event_type, IBV_EVENT_PORT_ACTIVE);
  EXPECT_EQ(event.element.port_num, 1);
  ibv_ack_async_event(&event);
  EXPECT_EQ(ibv_get_async_event(b_.context, &event), -1);
  EXPECT_EQ(errno, EAGAIN);

  // A WRITE with a wrong rkey: the requester's completion says so, and the
  // responder's QP reports the access error on its context.
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
  ibv_send_wr write = remote(IBV_WR_RDMA_WRITE, sge, 0, b_.mr->rkey ^ 0x100);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_.qp, &write, &bad), 0);
  ibv_wc wc = next_completion(a_);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
  ASSERT_TRUE(wait_readable(b_.context->async_fd, 5000));
  ASSERT_EQ(ibv_get_async_event(b_.context, &event), 0);
  EXPECT_EQ(event.event_type, IBV_EVENT_QP_ACCESS_ERR);
  EXPECT_EQ(event.element.qp, b_.qp);
  ibv_ack_async_event(&event);
  EXPECT_EQ(b_.qp->events_completed, 1u);
}

// rdma-core's rule, which UCX relies on: destroying a QP waits until every
// async event handed out for it is acknowledged, since another thread may
// still be holding the event (and the QP pointer in it).
TEST_F(VerbsApi, DestroyingAQpWaitsForItsAsyncEventsToBeAcknowledged) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
  ibv_send_wr write = remote(IBV_WR_RDMA_WRITE, sge, 0, b_.mr->rkey ^ 0x100);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_.qp, &write, &bad), 0);
  next_completion(a_);
  ibv_async_event event;
  do {  // the port's event comes first
    ASSERT_TRUE(wait_readable(b_.context->async_fd, 5000));
    ASSERT_EQ(ibv_get_async_event(b_.context, &event), 0);
    if (event.event_type == IBV_EVENT_PORT_ACTIVE) ibv_ack_async_event(&event);
  } while (event.event_type == IBV_EVENT_PORT_ACTIVE);
  ASSERT_EQ(event.element.qp, b_.qp);

  std::atomic<bool> destroyed{false};
  std::atomic<int> result{-1};
  std::thread destroyer([&] {
    result = ibv_destroy_qp(b_.qp);
    destroyed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(destroyed.load()) << "the QP went while its event was still held";
  ibv_ack_async_event(&event);  // the QP is still there to be acknowledged
  destroyer.join();
  EXPECT_TRUE(destroyed.load());
  EXPECT_EQ(result.load(), 0);
  b_.qp = nullptr;
}

TEST_F(VerbsApi, WhatAProgramMayNotDoIsRefusedWithItsErrno) {
  ibv_qp_init_attr init{};
  init.send_cq = a_.cq;
  init.recv_cq = a_.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap = {4, 4, 1, 1, 0};
  ibv_qp* fresh = ibv_create_qp(a_.pd, &init);
  ASSERT_NE(fresh, nullptr);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(a_.buffer.data()), 8, a_.mr->lkey};
  ibv_send_wr send{};
  send.opcode = IBV_WR_SEND;
  send.sg_list = &sge;
  send.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(fresh, &send, &bad), EINVAL);  // still in RESET
  EXPECT_EQ(bad, &send);
  send.opcode = IBV_WR_TSO;  // segmentation offload: a NIC's, not served
  EXPECT_EQ(ibv_post_send(a_.qp, &send, &bad), EOPNOTSUPP);
  ibv_qp_attr attr{};
  EXPECT_EQ(ibv_modify_qp(fresh, &attr, IBV_QP_RATE_LIMIT), EOPNOTSUPP);
  EXPECT_EQ(ibv_destroy_qp(fresh), 0);

  EXPECT_EQ(ibv_destroy_comp_channel(a_.channel), EBUSY);  // a CQ still reports to it
  EXPECT_EQ(ibv_destroy_cq(a_.cq), EBUSY);                 // a QP still uses it
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova2(a_.pd, a_.buffer.data(), 64, 0x1000, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  init.qp_type = IBV_QPT_RAW_PACKET;  // a NIC's Ethernet queue: not served
  errno = 0;
  EXPECT_EQ(ibv_create_qp(a_.pd, &init), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

// ibv_import_device takes a dup of a context's command fd: the PD and MR
// come with it by handle, and closing one imported context leaves the
// original importable (both hold the same file).
TEST_F(VerbsApi, AContextImportsAgainAfterAnImportedOneCloses) {
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "first import" : "after the first imported context closed");
    ibv_context* imported = ibv_import_device(dup(a_.context->cmd_fd));
    ASSERT_NE(imported, nullptr) << std::strerror(errno);
    ibv_pd* pd = ibv_import_pd(imported, a_.pd->handle);
    ASSERT_NE(pd, nullptr);
    ibv_mr* mr = ibv_import_mr(pd, a_.mr->handle);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(mr->lkey, a_.mr->lkey);
    EXPECT_EQ(mr->rkey, a_.mr->rkey);
    errno = 0;
    EXPECT_EQ(ibv_import_mr(pd, a_.mr->handle ^ 1), nullptr);
    EXPECT_EQ(errno, EINVAL);
    ibv_unimport_mr(mr);
    ibv_unimport_pd(pd);
    EXPECT_EQ(ibv_close_device(imported), 0);
  }
  int unrelated = ::memfd_create("not-a-context", MFD_CLOEXEC);
  errno = 0;
  EXPECT_EQ(ibv_import_device(unrelated), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ::close(unrelated);
}

// rdma-core declares it in driver.h, which Debian does not install.
extern "C" const char* ibv_get_sysfs_path(void);

// Programs (librdmacm, UCX, Open MPI) call it for the sysfs mount point and
// use the string it returns: $SYSFS_PATH without trailing slashes, read once.
TEST(SysfsPath, IsTheEnvironmentsWithoutTrailingSlashes) {
  ASSERT_EQ(::setenv("SYSFS_PATH", "/tmp/uroce-sys//", 1), 0);
  EXPECT_STREQ(ibv_get_sysfs_path(), "/tmp/uroce-sys");
  ASSERT_EQ(::setenv("SYSFS_PATH", "/elsewhere", 1), 0);
  EXPECT_STREQ(ibv_get_sysfs_path(), "/tmp/uroce-sys");  // as rdma-core: read on first use
}

// A misspelt UROCE_PROGRESS is a clear error when the device opens (its
// first PD), naming the variable, its value and the choices; never a crash.
TEST(ProgressSetting, AnUnknownValueIsAClearError) {
  ASSERT_EQ(::setenv("UROCE_ADDRESS", "127.0.4.15", 1), 0);
  ASSERT_EQ(::setenv("UROCE_PROGRESS", "fastest", 1), 0);
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  ASSERT_EQ(count, 1);
  ibv_context* context = ibv_open_device(devices[0]);
  ASSERT_NE(context, nullptr);
  ::testing::internal::CaptureStderr();
  errno = 0;
  EXPECT_EQ(ibv_alloc_pd(context), nullptr);
  EXPECT_EQ(errno, ENODEV);
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("UROCE_PROGRESS='fastest' is not one of adaptive, thread, inline"), std::string::npos) << said;
  EXPECT_EQ(ibv_close_device(context), 0);
  ibv_free_device_list(devices);
}

}  // namespace
