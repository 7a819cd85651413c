// Engine timers with many QPs: each QP's retransmission timer fires at its
// own deadline (the engine keeps a heap, not a scan), destroyed and reset QPs
// leave no wake-ups behind, and next_deadline is exact.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_network.h"
#include "transport/queue_pair.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

TEST(EngineTimers, EachOfManyQpsTimesOutAtItsOwnDeadline) {
  ChannelFaults silent;
  silent.drop = 1.0;  // the peer never hears anything
  TestNetwork network(9, silent);
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  constexpr int kPairs = 300;
  std::vector<std::uint8_t> buffer(64);
  struct Pair {
    Endpoint requester;
    TimeNs expected_failure;
    TimeNs failed_at = -1;
  };
  std::vector<Pair> pairs;
  for (int i = 0; i < kPairs; ++i) {
    RcOptions options;
    options.timeout = static_cast<std::uint8_t>(8 + i % 7);
    options.retry_cnt = static_cast<std::uint8_t>(i % 3);
    auto [x, y] = connect_rc(a, b, options);
    MrKeys keys = *a.reg_mr(x.pd, buffer.data(), buffer.size(), kAll);
    Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), 8, keys.lkey};
    SendWr wr;
    wr.wr_id = static_cast<std::uint64_t>(i);
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {0x1000, 0x1234};
    ASSERT_EQ(a.post_send(x.qpn, wr), std::errc{});
    // The first transmission at time 0, then retry_cnt retransmissions, each
    // after one full timeout: the WR fails (retry_cnt + 1) timeouts in.
    pairs.push_back({x, (options.retry_cnt + 1) * transport::ack_timeout_ns(options.timeout)});
  }
  // A QP that is destroyed, and one that is reset, while their timers are armed.
  RcOptions options;
  auto [gone, gone_peer] = connect_rc(a, b, options);
  auto [reset, reset_peer] = connect_rc(a, b, options);
  for (const Endpoint& end : {gone, reset}) {
    MrKeys keys = *a.reg_mr(end.pd, buffer.data(), buffer.size(), kAll);
    Sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), 8, keys.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::rdma_write;
    wr.sg_list = {&sge, 1};
    wr.rdma = {0x1000, 0x1234};
    ASSERT_EQ(a.post_send(end.qpn, wr), std::errc{});
  }
  network.run_until([] { return false; }, 0);  // send everything at time 0
  EXPECT_EQ(a.next_deadline(), transport::ack_timeout_ns(8));
  ASSERT_EQ(a.destroy_qp(gone.qpn), std::errc{});
  QpAttr to_reset;
  to_reset.qp_state = QpState::reset;
  ASSERT_EQ(a.modify_qp(reset.qpn, to_reset, kQpAttrState), std::errc{});
  drain(reset);

  int failed = 0;
  network.run_until(
      [&] {
        for (Pair& pair : pairs) {
          for (const WorkCompletion& wc : drain(pair.requester)) {
            EXPECT_EQ(wc.status, WcStatus::retry_exc_err);
            pair.failed_at = network.now();
            ++failed;
          }
        }
        return failed == kPairs;
      },
      TimeNs{1} << 40);
  ASSERT_EQ(failed, kPairs);
  for (const Pair& pair : pairs) EXPECT_EQ(pair.failed_at, pair.expected_failure);
  EXPECT_EQ(a.next_deadline(), kNever);  // nothing left armed, stale entries included
}

}  // namespace
}  // namespace uroce::testing
