// Congestion control: the DCQCN reaction point's arithmetic, and the engine's
// notification point (CNPs for CE-marked arrivals, at most one per QP per
// interval; per source for UD) driving the sender's rate down and pacing its
// packets.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/test_network.h"
#include "transport/cc/dcqcn.h"

namespace uroce {
namespace {

using transport::Dcqcn;

DcqcnParams params() {
  DcqcnParams p;
  p.line_rate_bps = 40e9;
  return p;
}

TEST(Dcqcn, FirstCnpHalvesTheRateAndRaisesAlpha) {
  Dcqcn cc(params());
  EXPECT_FALSE(cc.limiting());
  EXPECT_EQ(cc.next_deadline(), kNever);
  cc.on_cnp(0);
  EXPECT_TRUE(cc.limiting());
  EXPECT_DOUBLE_EQ(cc.rate_bps(), 20e9);  // alpha starts at 1: R_C x (1 - 1/2)
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), 40e9);
  EXPECT_DOUBLE_EQ(cc.alpha(0), 1.0);  // (1-g) x 1 + g
  EXPECT_EQ(cc.next_deadline(), 55'000);
}

TEST(Dcqcn, AlphaDecaysOncePerQuietPeriod) {
  Dcqcn cc(params());
  cc.on_cnp(0);
  double g = params().g;
  EXPECT_DOUBLE_EQ(cc.alpha(54'999), 1.0);
  EXPECT_NEAR(cc.alpha(55'000), 1 - g, 1e-12);
  EXPECT_NEAR(cc.alpha(10 * 55'000 + 1), std::pow(1 - g, 10), 1e-12);
  cc.on_cnp(10 * 55'000 + 1);  // the cut uses the decayed alpha
  double alpha = std::pow(1 - g, 10);
  EXPECT_NEAR(cc.alpha(10 * 55'000 + 1), (1 - g) * alpha + g, 1e-12);
}

TEST(Dcqcn, RecoversThroughFastRecoveryAdditiveAndHyperIncrease) {
  DcqcnParams p = params();
  Dcqcn cc(p);
  cc.on_cnp(0);  // R_C = 20G, R_T = 40G
  TimeNs t = 0;
  double previous = cc.rate_bps();
  // Fast recovery: each timer event moves R_C halfway to R_T, R_T unchanged.
  for (int i = 1; i < 5; ++i) {
    t += p.rate_timer_ns;
    cc.on_timer(t);
    EXPECT_DOUBLE_EQ(cc.target_rate_bps(), 40e9);
    EXPECT_DOUBLE_EQ(cc.rate_bps(), (40e9 + previous) / 2);
    previous = cc.rate_bps();
  }
  // A second cut with the rate below line rate, then additive increase steps.
  cc.on_cnp(t);
  double target = previous;  // R_T = R_C at the cut
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), target);
  for (int i = 1; i <= 5; ++i) {
    t += p.rate_timer_ns;
    cc.on_timer(t);
  }
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), target + p.additive_increase_bps);  // the 5th event is additive
  // Bytes past F byte-counter events as well: hyper increase.
  double before = cc.target_rate_bps();
  cc.on_bytes_sent(7 * p.byte_counter);  // i_B = 7 > F while i_T = 5: additive still (min(i_T,i_B) = 5)
  t += p.rate_timer_ns;
  cc.on_timer(t);  // i_T = 6, i_B = 7: hyper with i = 1
  EXPECT_GT(cc.target_rate_bps(), before + 7 * p.additive_increase_bps);
  // Eventually back at line rate, and idle.
  for (int i = 0; i < 2000 && cc.limiting(); ++i) {
    t += p.rate_timer_ns;
    cc.on_timer(t);
  }
  EXPECT_FALSE(cc.limiting());
  EXPECT_DOUBLE_EQ(cc.rate_bps(), p.line_rate_bps);
  EXPECT_EQ(cc.next_deadline(), kNever);
}

TEST(Dcqcn, RateNeverFallsBelowTheFloor) {
  DcqcnParams p = params();
  Dcqcn cc(p);
  for (int i = 0; i < 100; ++i) cc.on_cnp(i * 1000);
  EXPECT_DOUBLE_EQ(cc.rate_bps(), p.min_rate_bps);
}

TEST(Congestion, CeMarksBringCnpsThatSlowTheSenderAndDataStillArrives) {
  testing::ChannelFaults faults;
  faults.ecn_mark = 0.5;
  faults.delay_ns = 2000;
  // Only data (requests from engine 0) gets marked, as on a congested path one way.
  faults.applies_to = [](std::span<const std::uint8_t> d) { return d.size() > 200; };
  testing::TestNetwork network(21, faults);
  CongestionConfig congestion;
  congestion.reaction_point = true;
  congestion.dcqcn.line_rate_bps = 10e9;
  Engine& a = network.add_engine(congestion);
  Engine& b = network.add_engine(congestion);
  testing::RcOptions options;
  options.mtu = PathMtu::mtu4096;
  auto [sender_end, receiver_end] = testing::connect_rc(a, b, options);
  testing::Endpoint sender = sender_end, receiver = receiver_end;  // lambdas capture these
  std::vector<std::uint8_t> source(1 << 22, 7), target(1 << 22, 0);
  MrKeys s = *a.reg_mr(sender.pd, source.data(), source.size(), kAccessLocalWrite);
  MrKeys t = *b.reg_mr(receiver.pd, target.data(), target.size(), kAccessLocalWrite | kAccessRemoteWrite);
  Sge sge{reinterpret_cast<std::uintptr_t>(source.data()), static_cast<std::uint32_t>(source.size()), s.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data()), t.rkey};
  ASSERT_EQ(a.post_send(sender.qpn, wr), std::errc{});

  double lowest = 10e9;
  TimeNs start = network.now();
  bool done = network.run_until(
      [&] {
        lowest = std::min(lowest, *a.qp_rate_bps(sender.qpn));
        return !testing::drain(sender).empty();
      },
      network.now() + 1'000'000'000);
  ASSERT_TRUE(done);
  EXPECT_EQ(source, target);
  EXPECT_GT(b.counters().ecn_marked_received, 100u);
  // One CNP per 50 us at most: far fewer CNPs than marked packets.
  EXPECT_GT(b.counters().cnps_sent, 0u);
  EXPECT_LE(b.counters().cnps_sent, static_cast<std::uint64_t>((network.now() - start) / 50'000 + 1));
  EXPECT_EQ(a.counters().cnps_received, b.counters().cnps_sent);
  EXPECT_LT(lowest, 5e9);
  // 4 MiB at 10 Gb/s takes 3.4 ms; cut to a fraction of that rate it takes much longer.
  EXPECT_GT(network.now() - start, 5'000'000);
}

// A UD QP hears from several senders: each marked sender gets its own CNPs
// (rate-limited per source, not per receiving QP) and slows down.
TEST(Congestion, UdReceiverSendsCnpsToEachMarkedSource) {
  testing::ChannelFaults faults;
  faults.ecn_mark = 1.0;
  faults.applies_to = [](std::span<const std::uint8_t> d) { return d.size() > 200; };  // data, not CNPs
  testing::TestNetwork network(23, faults);
  CongestionConfig congestion;
  congestion.reaction_point = true;
  congestion.dcqcn.line_rate_bps = 10e9;
  Engine& first = network.add_engine(congestion);
  Engine& second = network.add_engine(congestion);
  Engine& receiver_engine = network.add_engine(congestion);
  constexpr std::uint32_t kQkey = 0x1234;
  testing::Endpoint senders[2] = {testing::make_ud_qp(first, kQkey), testing::make_ud_qp(second, kQkey)};
  testing::Endpoint receiver = testing::make_ud_qp(receiver_engine, kQkey);
  std::vector<std::uint8_t> inbox(128 * 2048);
  MrKeys inbox_keys = *receiver_engine.reg_mr(receiver.pd, inbox.data(), inbox.size(), kAccessLocalWrite);
  for (std::uint32_t i = 0; i < 128; ++i) {
    Sge sge{reinterpret_cast<std::uintptr_t>(inbox.data()) + i * 2048u, 2048, inbox_keys.lkey};
    ASSERT_EQ(receiver_engine.post_recv(receiver.qpn, RecvWr{i, {&sge, 1}}), std::errc{});
  }
  std::vector<std::uint8_t> payload(1000, 3);
  for (const testing::Endpoint& sender : senders) {
    MrKeys keys = *sender.engine->reg_mr(sender.pd, payload.data(), payload.size(), 0);
    AddressVector av;
    av.dgid = receiver_engine.gid();
    std::uint32_t ah = *sender.engine->create_ah(sender.pd, av);
    Sge sge{reinterpret_cast<std::uintptr_t>(payload.data()), 1000, keys.lkey};
    for (int i = 0; i < 32; ++i) {
      SendWr wr;
      wr.opcode = WrOpcode::send;
      wr.sg_list = {&sge, 1};
      wr.ud = {ah, receiver.qpn, kQkey};
      ASSERT_EQ(sender.engine->post_send(sender.qpn, wr), std::errc{});
    }
  }
  double lowest[2] = {10e9, 10e9};
  network.run_until(
      [&] {
        for (int i = 0; i < 2; ++i) lowest[i] = std::min(lowest[i], *senders[i].engine->qp_rate_bps(senders[i].qpn));
        return false;
      },
      network.now() + 10'000'000);
  EXPECT_EQ(testing::drain(receiver).size(), 64u);
  EXPECT_EQ(receiver_engine.counters().ecn_marked_received, 64u);
  EXPECT_EQ(receiver_engine.counters().cnps_sent, first.counters().cnps_received + second.counters().cnps_received);
  for (int i = 0; i < 2; ++i) {
    EXPECT_GE(senders[i].engine->counters().cnps_received, 1u);
    EXPECT_LE(lowest[i], 5e9);  // the first CNP halves the rate
  }
}

}  // namespace
}  // namespace uroce
