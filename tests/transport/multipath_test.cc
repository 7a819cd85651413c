// Multipath RC (MultipathConfig, after MRC): EntropyPaths on its own (round
// robin, ports mapping back to EVs, retirement after a loss, the probe after
// the backoff, avoidance after congestion), then end to end: every EV is
// used and echoed, reordering between paths within the reorder window
// resends nothing (where plain selective repeat resends late packets), a
// failed path is retired and routed around with no timeout, a path back up
// is restored by a probe, a CNP and a trimmed NAK name the EV they concern,
// on IPv6 each packet's flow label maps back to its EV's port as rdma-core
// maps labels to ports, and configurations the mode cannot run are refused.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>  // rdma-core's ibv_flow_label_to_udp_sport: the oracle for the flow label

#include <algorithm>
#include <set>
#include <vector>

#include "common/bytes.h"
#include "tests/support/test_network.h"
#include "transport/multipath.h"

namespace uroce::testing {
namespace {

using transport::EntropyPaths;

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kUs = 1'000;
constexpr TimeNs kMs = 1'000'000;

MultipathConfig paths_config(std::uint16_t evs) {
  MultipathConfig config;
  config.entropy_values = evs;
  config.reorder_window_ns = 10 * kUs;
  config.avoid_ns = 20 * kUs;
  config.probe_after_ns = 100 * kUs;
  return config;
}

TEST(EntropyPaths, RoundRobinUsesEveryEvAndPortsMapBack) {
  EngineCounters counters;
  EntropyPaths paths(paths_config(8), 0x11, 64, counters);
  std::vector<std::uint16_t> ports;
  for (std::uint32_t psn = 0; psn < 16; ++psn) ports.push_back(paths.send(psn, 0));
  EXPECT_EQ(std::set<std::uint16_t>(ports.begin(), ports.end()).size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(ports[i], ports[i + 8]);
    EXPECT_GE(ports[i], 0xC000);
    EXPECT_EQ(paths.ev_of_port(paths.port(i)), i);
  }
  EXPECT_FALSE(paths.ev_of_port(4791));
  EXPECT_FALSE(paths.ev_of_port(paths.port(8)));  // the next port is not ours
}

TEST(EntropyPaths, ALostPacketRetiresItsEvUntilAProbeGetsThrough) {
  EngineCounters counters;
  EntropyPaths paths(paths_config(8), 0x22, 64, counters);
  std::uint16_t lost_port = 0;
  for (std::uint32_t psn = 0; psn < 20; ++psn) {
    std::uint16_t port = paths.send(psn, psn * kUs);
    if (psn == 0) lost_port = port;
  }
  for (std::uint32_t psn = 1; psn < 20; ++psn) paths.delivered(psn, 25 * kUs);  // round trip 6 us
  std::vector<std::uint32_t> lost;
  auto has = [](std::uint32_t psn) { return psn != 0; };
  paths.find_lost(0, 19, 30 * kUs, has, lost);
  EXPECT_EQ(lost, std::vector<std::uint32_t>{0});
  EXPECT_EQ(paths.usable(), 7u);
  EXPECT_EQ(counters.paths_retired, 1u);
  lost.clear();
  paths.find_lost(0, 19, 31 * kUs, has, lost);  // judged once
  EXPECT_TRUE(lost.empty());

  // Until the probe time, the retired EV carries nothing.
  std::uint32_t psn = 20;
  for (; psn < 40; ++psn) EXPECT_NE(paths.send(psn, 40 * kUs), lost_port);
  // After it, one packet tries it; its arrival brings the EV back.
  std::uint32_t probe = 0;
  for (int i = 0; i < 8 && probe == 0; ++i, ++psn) {
    if (paths.send(psn, 140 * kUs) == lost_port) probe = psn;
  }
  ASSERT_NE(probe, 0u);
  EXPECT_EQ(counters.paths_probes, 1u);
  paths.delivered(probe, 150 * kUs);
  EXPECT_EQ(counters.paths_restored, 1u);
  EXPECT_EQ(paths.usable(), 8u);
}

TEST(EntropyPaths, ReorderingWithinTheWindowIsNotLossButBeyondItIs) {
  EngineCounters counters;
  EntropyPaths paths(paths_config(4), 0x33, 64, counters);
  for (std::uint32_t psn = 0; psn < 10; ++psn) paths.send(psn, psn * kUs);
  paths.delivered(9, 12 * kUs);  // round trip 3 us; PSNs 0 to 8 were sent before it
  std::vector<std::uint32_t> lost;
  auto has = [](std::uint32_t psn) { return psn == 9; };
  paths.find_lost(0, 9, 11 * kUs, has, lost);
  EXPECT_TRUE(lost.empty());  // PSN 0 may still come: sent at 0, due by 0 + 3 + 10 us
  EXPECT_EQ(paths.loss_check_at(), 13 * kUs);
  paths.find_lost(0, 9, 13 * kUs, has, lost);
  EXPECT_EQ(lost, std::vector<std::uint32_t>{0});
  EXPECT_EQ(paths.loss_check_at(), 14 * kUs);  // PSN 1's turn
  EXPECT_EQ(paths.usable(), 3u);
}

// The send records start small and grow with what is in flight: with a
// whole window in flight (far more than the first ring holds), the lost
// one is still found among them, and a record a window old is gone, as a
// ring of the whole window would have it.
TEST(EntropyPaths, AWholeWindowInFlightKeepsEveryRecord) {
  EngineCounters counters;
  EntropyPaths paths(paths_config(8), 0x55, 256, counters);
  for (std::uint32_t psn = 0; psn < 256; ++psn) paths.send(psn, psn * kUs);
  for (std::uint32_t psn = 0; psn < 256; ++psn) {
    if (psn != 37) paths.delivered(psn, (psn + 5) * kUs);
  }
  std::vector<std::uint32_t> lost;
  auto has = [](std::uint32_t psn) { return psn != 37; };
  paths.find_lost(0, 255, 400 * kUs, has, lost);
  EXPECT_EQ(lost, std::vector<std::uint32_t>{37});
  EXPECT_EQ(counters.paths_lost, 1u);

  // PSN 256 + 40 takes the slot PSN 40 had in a ring of 256: 40 is gone, 41 is not.
  EngineCounters others;
  EntropyPaths fresh(paths_config(8), 0x56, 256, others);
  for (std::uint32_t psn = 0; psn <= 296; ++psn) fresh.send(psn, psn * kUs);
  fresh.timed_out(40, kMs);
  EXPECT_EQ(others.paths_lost, 0u);
  fresh.timed_out(41, kMs);
  EXPECT_EQ(others.paths_lost, 1u);
  fresh.timed_out(296, kMs);
  EXPECT_EQ(others.paths_lost, 2u);
}

TEST(EntropyPaths, ACongestedEvIsPassedOverForAWhile) {
  EngineCounters counters;
  EntropyPaths paths(paths_config(4), 0x44, 64, counters);
  std::uint16_t hot = paths.port(2);
  paths.congested(hot, 0);
  EXPECT_EQ(counters.paths_congested, 1u);
  for (std::uint32_t psn = 0; psn < 12; ++psn) EXPECT_NE(paths.send(psn, 10 * kUs), hot);
  bool used = false;
  for (std::uint32_t psn = 12; psn < 16; ++psn) used |= paths.send(psn, 25 * kUs) == hot;
  EXPECT_TRUE(used);
  paths.congested(4791, 0);  // not one of ours: ignored
  EXPECT_EQ(counters.paths_congested, 1u);
}

TEST(EntropyPaths, WithEveryEvRetiredItStillSends) {
  EngineCounters counters;
  EntropyPaths paths(paths_config(2), 0x55, 64, counters);
  paths.send(0, 0);
  paths.send(1, 0);
  paths.timed_out(0, 0);
  paths.timed_out(1, 0);
  EXPECT_EQ(paths.usable(), 0u);
  std::uint16_t port = paths.send(2, 1 * kUs);
  EXPECT_TRUE(paths.ev_of_port(port).has_value());
}

// --- End to end, between two engines on the test network.

std::uint16_t source_port(std::span<const std::uint8_t> datagram) { return load_be16(&datagram[20]); }
std::uint8_t opcode(std::span<const std::uint8_t> datagram) { return datagram[28]; }
bool to_b(std::span<const std::uint8_t> datagram) { return datagram[19] == 2; }  // 10.0.0.2
bool is_request(std::span<const std::uint8_t> datagram) { return to_b(datagram) && opcode(datagram) < 0x10; }

class Multipath : public ::testing::Test {
 protected:
  void connect(ChannelFaults faults, LossRecovery recovery, std::uint16_t evs, CongestionConfig congestion = {},
               TimeNs loss_probe_ns = 0) {
    network_ = std::make_unique<TestNetwork>(7, std::move(faults));
    Engine& a = network_->add_engine(congestion);
    Engine& b = network_->add_engine(congestion);
    RcOptions options;
    options.recovery = recovery;
    options.timeout = 18;  // ~1 s: a timeout here would show in the clock and the counter
    options.loss_probe_ns = loss_probe_ns;
    if (evs != 0) {
      options.multipath = paths_config(evs);
      options.multipath.reorder_window_ns = 50 * kUs;
      options.multipath.probe_after_ns = 500 * kUs;
    }
    std::tie(a_, b_) = connect_rc(a, b, options);
    local_.assign(1 << 20, 0);
    for (std::size_t i = 0; i < local_.size(); ++i) local_[i] = static_cast<std::uint8_t>(i * 13 + 5);
    remote_.assign(local_.size(), 0);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, remote_.data(), remote_.size(), kAll);
  }

  // count WRITEs of `length` bytes, one after another in the buffers; runs
  // until all completed and returns how long that took.
  TimeNs write(std::size_t count, std::uint32_t length, std::size_t from = 0) {
    TimeNs start = network_->now();
    for (std::size_t i = 0; i < count; ++i) {
      std::size_t offset = (from + i * length) % (local_.size() - length + 1);
      Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()) + offset, length, local_keys_.lkey};
      SendWr wr;
      wr.wr_id = i;
      wr.opcode = WrOpcode::rdma_write;
      wr.send_flags = kSendSignaled;
      wr.sg_list = {&sge, 1};
      wr.rdma = {reinterpret_cast<std::uintptr_t>(remote_.data()) + offset, remote_keys_.rkey};
      EXPECT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
    }
    std::size_t done = 0;
    bool finished = network_->run_until(
        [&] {
          for (const WorkCompletion& wc : drain(a_)) {
            EXPECT_EQ(wc.status, WcStatus::success);
            ++done;
          }
          return done >= count;
        },
        network_->now() + 10'000 * kMs);
    EXPECT_TRUE(finished);
    return network_->now() - start;
  }

  void expect_written(std::size_t bytes) {
    EXPECT_TRUE(std::equal(local_.begin(), local_.begin() + static_cast<std::ptrdiff_t>(bytes), remote_.begin()));
  }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_{}, remote_keys_{};
};

TEST_F(Multipath, SpraysOverEveryEvAndTheResponderEchoesThem) {
  std::set<std::uint16_t> request_ports, ack_ports;
  std::vector<std::uint16_t> plain_ports;
  ChannelFaults faults;
  faults.applies_to = [&](std::span<const std::uint8_t> datagram) {
    (is_request(datagram) ? request_ports : ack_ports).insert(source_port(datagram));
    return false;
  };
  connect(faults, LossRecovery::selective_repeat, 16);
  write(8, 16 * 1024);
  expect_written(8 * 16 * 1024);
  EXPECT_EQ(request_ports.size(), 16u);
  EXPECT_FALSE(ack_ports.empty());
  for (std::uint16_t port : ack_ports) EXPECT_TRUE(request_ports.contains(port)) << port;
  EXPECT_EQ(a_.engine->counters().retransmitted_packets, 0u);
}

TEST_F(Multipath, PlainQpsKeepOnePort) {
  std::set<std::uint16_t> request_ports;
  ChannelFaults faults;
  faults.applies_to = [&](std::span<const std::uint8_t> datagram) {
    if (is_request(datagram)) request_ports.insert(source_port(datagram));
    return false;
  };
  connect(faults, LossRecovery::selective_repeat, 0);
  write(4, 16 * 1024);
  EXPECT_EQ(request_ports.size(), 1u);
}

// Paths of different lengths: up to 35 us apart, within the 50 us window.
ChannelFaults paths_of_different_delays() {
  ChannelFaults faults;
  faults.path_delay_ns = [](std::span<const std::uint8_t> datagram) {
    return is_request(datagram) ? static_cast<TimeNs>(source_port(datagram) % 8) * 5 * kUs : TimeNs{0};
  };
  return faults;
}

TEST_F(Multipath, ReorderingBetweenPathsResendsNothing) {
  connect(paths_of_different_delays(), LossRecovery::selective_repeat, 16);
  write(64, 8 * 1024);
  expect_written(64 * 8 * 1024);
  const EngineCounters& counters = a_.engine->counters();
  EXPECT_GT(b_.engine->counters().held_out_of_order, 0u);  // it was reordered
  EXPECT_EQ(counters.retransmitted_packets, 0u);
  EXPECT_EQ(counters.paths_lost, 0u);
  EXPECT_EQ(counters.timeouts, 0u);
}

TEST_F(Multipath, PlainSelectiveRepeatResendsLatePackets) {
  // The comparison: the same 35 us of reordering, on one path, makes IRN-style
  // selective repeat resend packets that were only late.
  ChannelFaults faults;
  faults.reorder = 0.2;
  faults.extra_delay_ns = 35 * kUs;
  faults.applies_to = is_request;
  connect(faults, LossRecovery::selective_repeat, 0);
  write(64, 8 * 1024);
  expect_written(64 * 8 * 1024);
  EXPECT_GT(a_.engine->counters().retransmitted_packets, 0u);
}

TEST_F(Multipath, AFailedPathIsRetiredAndRoutedAroundWithoutATimeout) {
  bool down = true;
  ChannelFaults faults = paths_of_different_delays();
  // A quarter of the paths lose every request: a failed link under ECMP.
  faults.path_down = [&](std::span<const std::uint8_t> datagram) {
    return down && is_request(datagram) && source_port(datagram) % 4 == 0;
  };
  connect(faults, LossRecovery::selective_repeat, 16);
  TimeNs took = write(64, 8 * 1024);
  expect_written(64 * 8 * 1024);
  const EngineCounters& counters = a_.engine->counters();
  EXPECT_EQ(counters.timeouts, 0u);
  EXPECT_LT(took, 2 * kMs);  // microseconds of recovery, not the ~1 s ACK timeout
  EXPECT_EQ(counters.paths_retired, 4u);  // exactly the EVs on the failed path
  EXPECT_EQ(counters.paths_lost, counters.retransmitted_packets);

  // The path comes back: after the probe time, probes find it and restore it.
  down = false;
  network_->idle_until(network_->now() + 1 * kMs);
  write(64, 8 * 1024, 64 * 8 * 1024);
  EXPECT_EQ(counters.paths_restored, 4u);
  expect_written(128 * 8 * 1024);
}

// A failed link on the way back: a quarter of the EVs lose every ACK the
// responder sends on them. A WRITE whose last packet went on one of them
// hears nothing more, and only the ACK timeout (about 1 s here) would end
// it; the loss probe resends that packet on the next EV, whose ACK gets
// through, so each such tail costs a probe interval.
TEST_F(Multipath, AProbeOnAnotherEvAnswersAnAckLostOnTheWayBack) {
  ChannelFaults faults;
  faults.path_down = [](std::span<const std::uint8_t> datagram) {
    return !to_b(datagram) && source_port(datagram) % 4 == 0;
  };
  connect(faults, LossRecovery::selective_repeat, 16, {}, 100 * kUs);
  TimeNs took = write(64, 8 * 1024);
  expect_written(64 * 8 * 1024);
  const EngineCounters& counters = a_.engine->counters();
  EXPECT_EQ(counters.timeouts, 0u);
  EXPECT_GT(counters.loss_probes, 0u);
  EXPECT_LT(took, 100 * kMs);
}

TEST_F(Multipath, ACnpNamesTheMarkedPacketsEv) {
  std::uint16_t marked_port = 0;
  std::set<std::uint16_t> cnp_ports;
  ChannelFaults faults;
  faults.ecn_mark = 1.0;
  faults.applies_to = [&](std::span<const std::uint8_t> datagram) {
    if (!to_b(datagram) && opcode(datagram) == 0x81) cnp_ports.insert(source_port(datagram));
    if (!is_request(datagram)) return false;
    if (marked_port == 0) marked_port = source_port(datagram);  // the first EV is the congested one
    return source_port(datagram) == marked_port;
  };
  CongestionConfig congestion;
  congestion.notification_point = true;
  connect(faults, LossRecovery::selective_repeat, 16, congestion);
  write(16, 16 * 1024);
  expect_written(16 * 16 * 1024);
  EXPECT_EQ(cnp_ports, std::set<std::uint16_t>{marked_port});
  EXPECT_GE(a_.engine->counters().paths_congested, 1u);
}

TEST_F(Multipath, ATrimmedPacketIsResentAtOnceAndItsEvAvoided) {
  ChannelFaults faults;
  faults.trim = 0.05;
  faults.applies_to = is_request;
  connect(faults, LossRecovery::selective_repeat, 16);
  write(64, 8 * 1024);
  expect_written(64 * 8 * 1024);
  const EngineCounters& counters = a_.engine->counters();
  EXPECT_GT(network_->stats().trimmed, 0u);
  EXPECT_EQ(counters.paths_congested, b_.engine->counters().trimmed_received);
  EXPECT_EQ(counters.timeouts, 0u);
  EXPECT_EQ(counters.paths_retired, 0u);  // congestion is not failure
}

// IPv6: every request carries its EV in the flow label as well as in the
// UDP source port, and every ACK the EV it echoes; rdma-core's own mapping
// from flow label to source port (IBTA's) agrees with the port on each.
TEST(MultipathIpv6, EachPacketCarriesItsEvInTheFlowLabel) {
  auto ipv6_engine = [](std::uint8_t host) {
    EngineConfig config;
    config.gid = Gid{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, host};
    return std::make_unique<Engine>(config);
  };
  std::unique_ptr<Engine> a = ipv6_engine(1), b = ipv6_engine(2);
  RcOptions options;
  options.recovery = LossRecovery::selective_repeat;
  options.multipath = paths_config(8);
  auto [end_a, end_b] = connect_rc(*a, *b, options);
  std::vector<std::uint8_t> source(16 * 1024, 0x3C), target(source.size());
  MrKeys source_keys = *a->reg_mr(end_a.pd, source.data(), source.size(), kAll);
  MrKeys target_keys = *b->reg_mr(end_b.pd, target.data(), target.size(), kAll);
  Sge sge{reinterpret_cast<std::uintptr_t>(source.data()), static_cast<std::uint32_t>(source.size()), source_keys.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data()), target_keys.rkey};
  ASSERT_EQ(a->post_send(end_a.qpn, wr), std::errc{});

  std::set<std::uint32_t> request_labels, ack_labels;
  std::size_t packets = 0;
  auto check = [&](std::span<const std::uint8_t> datagram, std::set<std::uint32_t>& labels) {
    ASSERT_EQ(datagram[0] >> 4, 6);
    std::uint32_t label = load_be32(&datagram[0]) & 0xFFFFF;
    std::uint16_t port = load_be16(&datagram[40]);  // the UDP header follows the 40-byte IPv6 header
    EXPECT_NE(label, 0u);
    EXPECT_EQ(ibv_flow_label_to_udp_sport(label), port) << "label " << label;
    labels.insert(label);
    ++packets;
  };
  std::vector<std::uint8_t> buffer(kMaxDatagramLength);
  WorkCompletion completion[1];
  std::size_t done = 0;
  for (TimeNs now = 0; done == 0 && now < 1'000 * kUs; now += kUs) {
    while (std::size_t length = a->poll_transmit(buffer, now).length) {
      check(std::span(buffer).first(length), request_labels);
      b->on_datagram(std::span(buffer).first(length), now);
    }
    while (std::size_t length = b->poll_transmit(buffer, now).length) {
      check(std::span(buffer).first(length), ack_labels);
      a->on_datagram(std::span(buffer).first(length), now);
    }
    done = *a->poll_cq(end_a.cq, completion);
  }
  ASSERT_EQ(done, 1u);
  EXPECT_EQ(completion[0].status, WcStatus::success);
  EXPECT_EQ(source, target);
  EXPECT_EQ(request_labels.size(), 8u);  // one per EV
  EXPECT_FALSE(ack_labels.empty());
  for (std::uint32_t label : ack_labels) EXPECT_TRUE(request_labels.contains(label)) << label;
}

TEST(MultipathConfiguration, WhatTheModeCannotRunIsRefused) {
  EngineConfig config;
  config.gid = gid_from_ipv4({10, 0, 0, 1});
  Engine engine(config);
  std::uint32_t pd = *engine.alloc_pd();
  std::uint32_t cq = *engine.create_cq(16);
  QpInitAttr init;
  init.pd = pd;
  init.send_cq = init.recv_cq = cq;
  init.multipath.entropy_values = 16;
  EXPECT_EQ(engine.create_qp(init).error(), std::errc::invalid_argument);  // go-back-N
  init.recovery = LossRecovery::selective_repeat;
  init.multipath.entropy_values = 5000;
  EXPECT_EQ(engine.create_qp(init).error(), std::errc::invalid_argument);
  init.multipath.entropy_values = 16;
  init.multipath.reorder_window_ns = 0;
  EXPECT_EQ(engine.create_qp(init).error(), std::errc::invalid_argument);
  init.multipath.reorder_window_ns = 50 * kUs;
  EXPECT_TRUE(engine.create_qp(init).has_value());
}

}  // namespace
}  // namespace uroce::testing
