// Memory windows in the engine (IBTA 10.6.7): a bind is a work request that
// completes in send-queue order; a peer reaches exactly the window's bytes,
// with its access, through its key; type 2 windows answer only the QP that
// bound them until a local invalidate or a SEND with invalidate closes them;
// a type 1 window closes with a zero-length bind. Every broken bind rule is a
// bind error, and remote memory outside the window stays untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

class MemoryWindows : public ::testing::Test {
 protected:
  void SetUp() override {
    network_ = std::make_unique<TestNetwork>(5, ChannelFaults{});
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    std::tie(a_, b_) = connect_rc(a, b);
    local_.assign(256, 0x11);
    remote_.assign(4096, 0x22);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, remote_.data(), remote_.size(), kAccessLocalWrite | kAccessMwBind);
  }

  std::uint64_t remote_addr(std::size_t offset) { return reinterpret_cast<std::uintptr_t>(remote_.data()) + offset; }

  // b binds window `rkey` over [offset, offset + length) of its region.
  WcStatus bind(std::uint32_t rkey, std::size_t offset, std::uint64_t length, std::uint32_t access, std::uint8_t type,
                std::uint32_t lkey = 0) {
    SendWr wr;
    wr.wr_id = 50;
    wr.opcode = WrOpcode::bind_mw;
    wr.send_flags = kSendSignaled;
    wr.bind = {rkey, lkey != 0 ? lkey : remote_keys_.lkey, remote_addr(offset), length, access, type};
    EXPECT_EQ(b_.engine->post_send(b_.qpn, wr), std::errc{});
    auto [at_a, at_b] = wait_for_completions(*network_, a_, b_, 0, 1);
    EXPECT_EQ(at_b.size(), 1u);
    if (at_b.empty()) return WcStatus::general_err;
    EXPECT_EQ(at_b[0].opcode, WcOpcode::bind_mw);
    return at_b[0].status;
  }

  // a writes `length` bytes at remote offset through rkey.
  WcStatus write(std::uint32_t rkey, std::size_t offset, std::uint32_t length) {
    Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()), length, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = 60;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {remote_addr(offset), rkey};
    EXPECT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
    auto [at_a, at_b] = wait_for_completions(*network_, a_, b_, 1, 0);
    EXPECT_EQ(at_a.size(), 1u);
    return at_a.empty() ? WcStatus::general_err : at_a[0].status;
  }

  // Only [from, to) of the remote buffer was written.
  bool written_only(std::size_t from, std::size_t to) const {
    for (std::size_t i = 0; i < remote_.size(); ++i) {
      if ((remote_[i] == 0x11) != (i >= from && i < to)) return false;
    }
    return true;
  }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_, remote_keys_;
};

TEST_F(MemoryWindows, AType2WindowOpensExactlyItsBytesWithItsAccess) {
  std::uint32_t key = *b_.engine->alloc_mw(b_.pd, 2);
  std::uint32_t bound = (key & ~0xFFu) | ((key + 1) & 0xFF);
  ASSERT_EQ(bind(bound, 1024, 512, kAccessRemoteWrite, 2), WcStatus::success);
  EXPECT_EQ(write(bound, 1024, 64), WcStatus::success);
  EXPECT_TRUE(written_only(1024, 1088));
  EXPECT_EQ(write(bound, 1500, 64), WcStatus::rem_access_err);  // past the window's end
  EXPECT_TRUE(written_only(1024, 1088));
}

TEST_F(MemoryWindows, AWindowsOldKeyAndAReadItDoesNotAllowAreRefused) {
  std::uint32_t key = *b_.engine->alloc_mw(b_.pd, 2);
  std::uint32_t bound = key ^ 1;
  ASSERT_EQ(bind(bound, 0, 4096, kAccessRemoteWrite, 2), WcStatus::success);
  EXPECT_EQ(write(key, 0, 8), WcStatus::rem_access_err);  // the key before the bind
  EXPECT_TRUE(written_only(0, 0));
}

TEST_F(MemoryWindows, LocalInvalidateClosesAType2Window) {
  std::uint32_t key = *b_.engine->alloc_mw(b_.pd, 2);
  ASSERT_EQ(bind(key, 0, 4096, kAccessRemoteWrite, 2), WcStatus::success);
  SendWr invalidate;
  invalidate.opcode = WrOpcode::local_inv;
  invalidate.send_flags = kSendSignaled;
  invalidate.invalidate_rkey = key;
  ASSERT_EQ(b_.engine->post_send(b_.qpn, invalidate), std::errc{});
  auto [at_a, at_b] = wait_for_completions(*network_, a_, b_, 0, 1);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].status, WcStatus::success);
  EXPECT_EQ(at_b[0].opcode, WcOpcode::local_inv);
  EXPECT_EQ(write(key, 0, 8), WcStatus::rem_access_err);
  EXPECT_TRUE(written_only(0, 0));
}

TEST_F(MemoryWindows, ASendWithInvalidateClosesAType2Window) {
  std::uint32_t key = *b_.engine->alloc_mw(b_.pd, 2);
  ASSERT_EQ(bind(key, 0, 4096, kAccessRemoteWrite, 2), WcStatus::success);
  std::vector<std::uint8_t> landing(64);
  MrKeys landing_keys = *b_.engine->reg_mr(b_.pd, landing.data(), landing.size(), kAll);
  Sge receive{reinterpret_cast<std::uintptr_t>(landing.data()), 64, landing_keys.lkey};
  ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{9, {&receive, 1}}), std::errc{});
  Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()), 8, local_keys_.lkey};
  SendWr send;
  send.opcode = WrOpcode::send_with_inv;
  send.send_flags = kSendSignaled;
  send.sg_list = {&sge, 1};
  send.invalidate_rkey = key;
  ASSERT_EQ(a_.engine->post_send(a_.qpn, send), std::errc{});
  auto [at_a, at_b] = wait_for_completions(*network_, a_, b_, 1, 1);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_TRUE(at_b[0].wc_flags & kWcWithInv);
  EXPECT_EQ(write(key, 0, 8), WcStatus::rem_access_err);
}

// A type 1 window answers any QP of its PD and closes with a zero-length bind.
TEST_F(MemoryWindows, AType1WindowClosesWithAZeroLengthBind) {
  std::uint32_t key = *b_.engine->alloc_mw(b_.pd, 1);
  std::uint32_t bound = key ^ 1;
  ASSERT_EQ(bind(bound, 0, 128, kAccessRemoteWrite, 1), WcStatus::success);
  EXPECT_EQ(write(bound, 0, 8), WcStatus::success);
  std::uint32_t closed = key ^ 2;
  ASSERT_EQ(bind(closed, 0, 0, 0, 1), WcStatus::success);
  EXPECT_EQ(write(bound, 0, 8), WcStatus::rem_access_err);  // (the QP fails with it)
}

// Each rule a bind may break is a bind error (and the QP fails, as an error
// completion on a send queue does); the window stays closed.
TEST_F(MemoryWindows, BrokenBindRulesAreBindErrors) {
  struct Case {
    const char* what;
    std::size_t offset;
    std::uint64_t length;
    std::uint32_t access;
    std::uint8_t type;
    bool region_without_mw_bind;
    bool window_of_another_pd;
  };
  for (const Case& c : {Case{"a range past the region", 4000, 200, kAccessRemoteWrite, 2, false, false},
                        Case{"a region without MW_BIND", 0, 64, kAccessRemoteWrite, 2, true, false},
                        Case{"a type 1 bind of a type 2 window", 0, 64, kAccessRemoteWrite, 1, false, false},
                        Case{"a window of another PD", 0, 64, kAccessRemoteWrite, 2, false, true},
                        Case{"local access asked of a window", 0, 64, kAccessLocalWrite, 2, false, false}}) {
    SCOPED_TRACE(c.what);
    SetUp();
    std::uint32_t pd = c.window_of_another_pd ? *b_.engine->alloc_pd() : b_.pd;
    std::uint32_t key = *b_.engine->alloc_mw(pd, 2);
    std::uint32_t lkey = 0;
    if (c.region_without_mw_bind) lkey = b_.engine->reg_mr(b_.pd, remote_.data(), 4096, kAccessLocalWrite)->lkey;
    EXPECT_EQ(bind(key, c.offset, c.length, c.access, c.type, lkey), WcStatus::mw_bind_err);
    auto attr = b_.engine->query_qp(b_.qpn);
    ASSERT_TRUE(attr);
    EXPECT_EQ(attr->qp_state, QpState::err);
    EXPECT_TRUE(written_only(0, 0));
  }
}

// A region opened by a bound window cannot go, nor can the window's PD.
TEST_F(MemoryWindows, ABoundRegionCannotBeDeregisteredUntilItsWindowGoes) {
  std::uint32_t key = *b_.engine->alloc_mw(b_.pd, 2);
  ASSERT_EQ(bind(key, 0, 64, kAccessRemoteWrite, 2), WcStatus::success);
  EXPECT_EQ(b_.engine->dereg_mr(remote_keys_.lkey), std::errc::device_or_resource_busy);
  EXPECT_EQ(b_.engine->rereg_mr(remote_keys_.lkey, b_.pd, remote_.data(), 64, kAccessLocalWrite),
            std::errc::device_or_resource_busy);
  EXPECT_EQ(b_.engine->dealloc_mw(key), std::errc{});
  EXPECT_EQ(write(key, 0, 8), WcStatus::rem_access_err);
  EXPECT_EQ(b_.engine->dereg_mr(remote_keys_.lkey), std::errc{});
  EXPECT_EQ(b_.engine->dealloc_mw(key), std::errc::invalid_argument);
  EXPECT_EQ(b_.engine->alloc_mw(b_.pd, 3).error(), std::errc::invalid_argument);
}

}  // namespace
}  // namespace uroce::testing
