// poll_transmit's description of each datagram (uroce/transmit.h) is what
// the device, the ports and the simulator act on without reading the bytes.
// The oracle is the wire layer reading those bytes: for every datagram of a
// congested, lossy RC transfer (data, ACKs, NAKs, CNPs, retransmissions)
// and of READs and atomics, the two must agree field for field.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_network.h"

namespace uroce {
namespace {

TEST(TransmitDescription, EveryDatagramOfALossyCongestedWriteIsDescribedAsBuilt) {
  testing::ChannelFaults faults;
  faults.ecn_mark = 0.3;
  faults.drop = 0.02;
  testing::TestNetwork network(5, faults);
  CongestionConfig congestion;
  congestion.reaction_point = true;
  congestion.min_time_between_cnps_ns = 20'000;
  congestion.dcqcn.line_rate_bps = 10e9;
  Engine& a = network.add_engine(congestion);
  Engine& b = network.add_engine(congestion);
  auto [sender, receiver] = testing::connect_rc(a, b);
  std::vector<std::uint8_t> source(1 << 20, 3), target(1 << 20, 0);
  MrKeys s = *a.reg_mr(sender.pd, source.data(), source.size(), kAccessLocalWrite);
  MrKeys t = *b.reg_mr(receiver.pd, target.data(), target.size(), kAccessLocalWrite | kAccessRemoteWrite);
  Sge sge{reinterpret_cast<std::uintptr_t>(source.data()), static_cast<std::uint32_t>(source.size()), s.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data()), t.rkey};
  ASSERT_EQ(a.post_send(sender.qpn, wr), std::errc{});
  testing::Endpoint requester = sender;
  ASSERT_TRUE(network.run_until([&] { return !testing::drain(requester).empty(); }, 2'000'000'000));
  EXPECT_EQ(source, target);
  EXPECT_GT(network.stats().dropped, 0u);
  EXPECT_GT(network.stats().described_acknowledgements, 0u);
  EXPECT_GT(network.stats().described_cnps, 0u);
  EXPECT_EQ(network.stats().description_mismatches, 0u);
}

TEST(TransmitDescription, ReadsAndAtomicsAreDescribedAsBuilt) {
  testing::TestNetwork network(6, {});
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  auto [requester, responder] = testing::connect_rc(a, b);
  std::vector<std::uint64_t> local(1024, 0), remote(1024, 9);
  MrKeys l = *a.reg_mr(requester.pd, local.data(), local.size() * 8, kAccessLocalWrite);
  MrKeys r = *b.reg_mr(responder.pd, remote.data(), remote.size() * 8,
                       kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteAtomic);
  for (WrOpcode opcode : {WrOpcode::rdma_read, WrOpcode::atomic_fetch_and_add, WrOpcode::atomic_cmp_and_swp}) {
    bool atomic = opcode != WrOpcode::rdma_read;
    Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), atomic ? 8u : 8192u, l.lkey};
    SendWr wr;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(remote.data()), r.rkey};
    wr.atomic = {reinterpret_cast<std::uintptr_t>(remote.data()), 1, 1, r.rkey};
    ASSERT_EQ(a.post_send(requester.qpn, wr), std::errc{});
    testing::Endpoint end = requester;
    ASSERT_TRUE(network.run_until([&] { return !testing::drain(end).empty(); }, network.now() + 100'000'000));
  }
  EXPECT_EQ(network.stats().description_mismatches, 0u);
  EXPECT_GT(network.stats().delivered, 10u);
}

}  // namespace
}  // namespace uroce
