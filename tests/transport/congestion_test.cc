// Congestion control in the engine: the notification point (CNPs for
// CE-marked data, at most one per QP per interval; per source for UD) driving
// the sender's rate down and pacing its packets, and which packets are
// ECN-capable. The reaction points' arithmetic is in dcqcn_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "tests/support/test_network.h"
#include "wire/ipv4.h"
#include "wire/opcode.h"

namespace uroce {
namespace {

// A signalled WRITE or READ between the whole of local and of remote, run
// until the requester has its completion.
void transfer_all(testing::TestNetwork& network, Engine& a, const testing::Endpoint& requester, WrOpcode opcode,
                  std::vector<std::uint8_t>& local, std::uint32_t lkey, std::vector<std::uint8_t>& remote,
                  std::uint32_t rkey) {
  Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), static_cast<std::uint32_t>(local.size()), lkey};
  SendWr wr;
  wr.opcode = opcode;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {reinterpret_cast<std::uintptr_t>(remote.data()), rkey};
  ASSERT_EQ(a.post_send(requester.qpn, wr), std::errc{});
  ASSERT_TRUE(network.run_until([&] { return !testing::drain(requester).empty(); }, network.now() + 100'000'000));
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
  congestion.min_time_between_cnps_ns = 50'000;
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
  // One CNP per min_time_between_cnps at most: fewer CNPs than marked packets.
  EXPECT_GT(b.counters().cnps_sent, 0u);
  EXPECT_LT(b.counters().cnps_sent, b.counters().ecn_marked_received);
  EXPECT_LE(b.counters().cnps_sent, static_cast<std::uint64_t>((network.now() - start) / 50'000 + 1));
  EXPECT_EQ(a.counters().cnps_received, b.counters().cnps_sent);
  EXPECT_LT(lowest, 5e9);
  // 4 MiB at 10 Gb/s takes 3.4 ms; cut to a fraction of that rate it takes much longer.
  EXPECT_GT(network.now() - start, 5'000'000);
}

// RNICs send requests and READ responses ECN-capable (ECT(0)), and ACKs and
// CNPs not ECN-capable; a notification point answers CE marks on data only,
// so even a path that marks everything (this channel marks non-ECT packets
// too) draws no CNP for an ACK.
TEST(Congestion, OnlyDataIsEcnCapableAndOnlyMarkedDataDrawsCnps) {
  std::map<std::uint8_t, std::set<unsigned>> ecn_by_opcode;  // as the engines sent them
  testing::ChannelFaults faults;
  faults.ecn_mark = 1.0;
  faults.applies_to = [&](std::span<const std::uint8_t> d) {
    constexpr std::size_t kOpcode = 20 + 8;  // after the IPv4 and UDP headers
    if (d.size() > kOpcode) ecn_by_opcode[d[kOpcode]].insert(d[1] & 0x03u);
    return true;
  };
  testing::TestNetwork network(29, faults);
  CongestionConfig congestion;
  congestion.reaction_point = true;
  congestion.dcqcn.line_rate_bps = 10e9;
  Engine& a = network.add_engine(congestion);
  Engine& b = network.add_engine(congestion);
  testing::RcOptions options;
  options.mtu = PathMtu::mtu1024;
  // Named, not a structured binding: the lambda below captures it (C++20 in clang 14 cannot).
  const auto [requester_end, responder] = testing::connect_rc(a, b, options);
  const testing::Endpoint requester = requester_end;
  std::vector<std::uint8_t> local(16384, 5), remote(16384, 0);
  MrKeys l = *a.reg_mr(requester.pd, local.data(), local.size(), kAccessLocalWrite);
  MrKeys r = *b.reg_mr(responder.pd, remote.data(), remote.size(),
                       kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
  auto post = [&](WrOpcode opcode) {
    transfer_all(network, a, requester, opcode, local, l.lkey, remote, r.rkey);
  };
  post(WrOpcode::rdma_write);
  EXPECT_EQ(remote, local);
  EXPECT_GT(b.counters().cnps_sent, 0u);           // for the marked WRITEs
  EXPECT_EQ(a.counters().ecn_marked_received, 0u);  // the marked ACKs do not count
  EXPECT_EQ(a.counters().cnps_sent, 0u);
  post(WrOpcode::rdma_read);
  using namespace wire::opcode;
  const unsigned ect0 = static_cast<unsigned>(wire::Ecn::ect0), not_ect = static_cast<unsigned>(wire::Ecn::not_ect);
  for (std::uint8_t data : {kRcRdmaWriteFirst, kRcRdmaWriteMiddle, kRcRdmaWriteLast, kRcRdmaReadRequest,
                            kRcRdmaReadResponseFirst, kRcRdmaReadResponseMiddle, kRcRdmaReadResponseLast}) {
    EXPECT_EQ(ecn_by_opcode[data], std::set<unsigned>{ect0}) << "opcode " << int(data);
  }
  for (std::uint8_t control : {kRcAcknowledge, kCnp}) {
    EXPECT_EQ(ecn_by_opcode[control], std::set<unsigned>{not_ect}) << "opcode " << int(control);
  }
}

// ack_dscp (the simulator's option, to compare with HPCC's ns-3): the
// responder's ACKs leave in that traffic class, its READ responses and the
// requester's data in the QP's.
TEST(Congestion, AckDscpMovesAcksAndNothingElse) {
  std::map<std::uint8_t, std::set<unsigned>> dscp_by_opcode;
  testing::ChannelFaults faults;
  faults.applies_to = [&](std::span<const std::uint8_t> d) {
    constexpr std::size_t kOpcode = 20 + 8;
    if (d.size() > kOpcode) dscp_by_opcode[d[kOpcode]].insert(d[1] >> 2);
    return false;
  };
  testing::TestNetwork network(31, faults);
  EngineConfig config;
  config.ack_dscp = 56;
  Engine& a = network.add_engine(config);
  Engine& b = network.add_engine(config);
  const auto [requester_end, responder] = testing::connect_rc(a, b, testing::RcOptions{});
  const testing::Endpoint requester = requester_end;
  std::vector<std::uint8_t> local(8192, 5), remote(8192, 0);
  MrKeys l = *a.reg_mr(requester.pd, local.data(), local.size(), kAccessLocalWrite);
  MrKeys r = *b.reg_mr(responder.pd, remote.data(), remote.size(),
                       kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
  for (WrOpcode opcode : {WrOpcode::rdma_write, WrOpcode::rdma_read}) {
    transfer_all(network, a, requester, opcode, local, l.lkey, remote, r.rkey);
  }
  using namespace wire::opcode;
  EXPECT_EQ(dscp_by_opcode[kRcAcknowledge], std::set<unsigned>{56});
  for (std::uint8_t data : {kRcRdmaWriteFirst, kRcRdmaWriteLast, kRcRdmaReadRequest, kRcRdmaReadResponseFirst,
                            kRcRdmaReadResponseLast}) {
    EXPECT_EQ(dscp_by_opcode[data], std::set<unsigned>{0}) << "opcode " << int(data);  // the QP's
  }
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
