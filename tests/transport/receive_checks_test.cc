// The receive checks against a third host: packets forged with the right QPN,
// PSN and a valid ICRC but from another address (a WRITE, a NAK, a CNP), a
// foreign P_Key, a CNP to a UD QP from a stranger. Each is dropped and counted,
// and the real transfer beside it completes with every byte right. Controls
// send the same forgery from the peer's own address, to show it would bite.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/forged_datagram.h"
#include "tests/support/test_network.h"
#include "transport/receive_checks.h"
#include "wire/opcode.h"

namespace uroce::testing {
namespace {

constexpr std::array<std::uint8_t, 4> kEngineA{10, 0, 0, 1}, kEngineB{10, 0, 0, 2}, kIntruder{10, 0, 0, 99};
constexpr TimeNs kSecond = 1'000'000'000;

std::uint8_t opcode_of(std::span<const std::uint8_t> datagram) { return datagram[20 + 8]; }

// Two engines with an RC or UC connection and a 64 KiB WRITE ready to post.
// tap sees every datagram as it is sent; forgeries queued by it are delivered
// to their target right after that step, ahead of the real packet.
class ForgedPackets : public ::testing::Test {
 protected:
  struct Injection {
    std::size_t to;
    std::vector<std::uint8_t> bytes;
  };

  void connect(QpType type, const CongestionConfig& congestion = {}) {
    ChannelFaults faults;
    faults.applies_to = [this](std::span<const std::uint8_t> d) {
      if (tap) tap(d);
      return false;
    };
    network = std::make_unique<TestNetwork>(31, faults);
    a = &network->add_engine(congestion);
    b = &network->add_engine(congestion);
    RcOptions options;
    options.type = type;
    const auto [requester_end, responder_end] = connect_rc(*a, *b, options);
    requester = requester_end;
    responder = responder_end;
    local_keys = *a->reg_mr(requester.pd, local.data(), local.size(), kAccessLocalWrite);
    remote_keys = *b->reg_mr(responder.pd, remote.data(), remote.size(), kAccessLocalWrite | kAccessRemoteWrite);
  }

  // Posts the WRITE, runs until it completes and the network is quiet; its completion status.
  WcStatus write_and_wait() {
    Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), static_cast<std::uint32_t>(local.size()),
            local_keys.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(remote.data()), remote_keys.rkey};
    EXPECT_EQ(a->post_send(requester.qpn, wr), std::errc{});
    std::vector<WorkCompletion> done;
    network->run_until(
        [&] {
          deliver_injections();
          for (const WorkCompletion& wc : drain(requester)) done.push_back(wc);
          return !done.empty();
        },
        network->now() + kSecond);
    // UC completes at the requester when sent: let the last packets land.
    network->run_until([] { return false; }, network->now() + kSecond / 1000);
    return done.empty() ? WcStatus::general_err : done.front().status;
  }

  void deliver_injections() {
    for (const Injection& injection : injections) {
      network->engine(injection.to).on_datagram(injection.bytes, network->now(), true);
    }
    injections.clear();
  }

  std::unique_ptr<TestNetwork> network;
  Engine* a = nullptr;
  Engine* b = nullptr;
  Endpoint requester, responder;
  std::vector<std::uint8_t> local = std::vector<std::uint8_t>(65536, 0x5A);
  std::vector<std::uint8_t> remote = std::vector<std::uint8_t>(65536, 0);
  MrKeys local_keys, remote_keys;
  std::function<void(std::span<const std::uint8_t>)> tap;
  std::vector<Injection> injections;
};

struct WriteForgery {
  QpType type;
  bool from_peer;  // the control: the same forgery from the peer's own address
};

class ForgedWrite : public ForgedPackets, public ::testing::WithParamInterface<WriteForgery> {};

// The first WRITE packet, copied with the same QPN and PSN and full of 0xEE,
// arrives before the real one. From a third address it is dropped; from the
// peer's (the control) RC takes it and drops the real packet as a duplicate,
// so the forgery lands and the WRITE still completes successfully.
TEST_P(ForgedWrite, OnlyThePeersAddressIsTakenAndTheTransferCompletes) {
  const WriteForgery forgery = GetParam();
  connect(forgery.type);
  std::size_t first_length = 0;
  tap = [&](std::span<const std::uint8_t> d) {
    std::uint8_t op = opcode_of(d) & 0x1F;
    if (first_length != 0 || (op != wire::opcode::kRcRdmaWriteFirst && op != wire::opcode::kRcRdmaWriteOnly)) return;
    first_length = wire::parse_roce_datagram(d)->packet.payload.size();
    std::vector<std::uint8_t> bad_bytes(first_length, 0xEE);
    injections.push_back({1, forge(d, {forgery.from_peer ? kEngineA : kIntruder, {}, bad_bytes})});
  };
  EXPECT_EQ(write_and_wait(), WcStatus::success);
  ASSERT_GT(first_length, 0u);
  if (forgery.from_peer) {
    EXPECT_EQ(b->counters().wrong_source_packets, 0u);
    EXPECT_EQ(remote[0], 0xEE);
    EXPECT_EQ(remote[first_length - 1], 0xEE);
  } else {
    EXPECT_EQ(b->counters().wrong_source_packets, 1u);
    EXPECT_EQ(remote, local);
  }
}

INSTANTIATE_TEST_SUITE_P(Forgeries, ForgedWrite,
                         ::testing::Values(WriteForgery{QpType::rc, false}, WriteForgery{QpType::uc, false},
                                           WriteForgery{QpType::rc, true}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.type == QpType::rc ? "Rc" : "Uc") +
                                  (param_info.param.from_peer ? "FromPeerControl" : "FromIntruder");
                         });

// The responder's first ACK turned into a "remote access error" NAK.
class ForgedNak : public ForgedPackets, public ::testing::WithParamInterface<bool> {};

TEST_P(ForgedNak, OnlyThePeersAddressCanBreakTheConnection) {
  const bool from_peer = GetParam();
  connect(QpType::rc);
  bool forged = false;
  tap = [&](std::span<const std::uint8_t> d) {
    if (forged || opcode_of(d) != wire::opcode::kRcAcknowledge) return;
    forged = true;
    auto to_nak = [](wire::TransportHeaders& h) { h.aeth->syndrome = 0x62; };  // NAK, remote access error
    injections.push_back({0, forge(d, {from_peer ? kEngineB : kIntruder, to_nak, {}})});
  };
  WcStatus status = write_and_wait();
  EXPECT_TRUE(forged);
  if (from_peer) {
    EXPECT_EQ(status, WcStatus::rem_access_err);  // the forgery bites when it passes the check
  } else {
    EXPECT_EQ(status, WcStatus::success);
    EXPECT_EQ(a->counters().wrong_source_packets, 1u);
    EXPECT_EQ(remote, local);
  }
}

INSTANTIATE_TEST_SUITE_P(FromPeerOrIntruder, ForgedNak, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "FromPeer" : "FromIntruder"; });

TEST_F(ForgedPackets, CnpFromAStrangerIsRejectedAndFromThePeerAccepted) {
  CongestionConfig congestion;
  congestion.reaction_point = true;
  congestion.dcqcn.line_rate_bps = 10e9;
  connect(QpType::rc, congestion);
  a->on_datagram(forge_cnp(kIntruder, kEngineA, requester.qpn), network->now(), true);
  EXPECT_EQ(a->counters().cnps_rejected, 1u);
  EXPECT_EQ(a->counters().cnps_received, 0u);
  EXPECT_EQ(*a->qp_rate_bps(requester.qpn), 10e9);
  a->on_datagram(forge_cnp(kEngineB, kEngineA, requester.qpn), network->now(), true);
  EXPECT_EQ(a->counters().cnps_rejected, 1u);
  EXPECT_EQ(a->counters().cnps_received, 1u);
  EXPECT_EQ(write_and_wait(), WcStatus::success);
  EXPECT_EQ(remote, local);
}

TEST_F(ForgedPackets, ForeignPkeyIsDroppedEvenFromThePeer) {
  connect(QpType::uc);
  bool forged = false;
  tap = [&](std::span<const std::uint8_t> d) {
    if (forged || (opcode_of(d) & 0x1F) != wire::opcode::kRcRdmaWriteFirst) return;
    forged = true;
    auto other_partition = [](wire::TransportHeaders& h) { h.bth.pkey = 0x8123; };
    std::vector<std::uint8_t> bad_bytes(wire::parse_roce_datagram(d)->packet.payload.size(), 0xEE);
    injections.push_back({1, forge(d, {kEngineA, other_partition, bad_bytes})});
  };
  EXPECT_EQ(write_and_wait(), WcStatus::success);
  EXPECT_EQ(b->counters().pkey_mismatches, 1u);
  EXPECT_EQ(remote, local);
}

TEST(ReceiveChecks, PkeyMatchingFollowsTheMembershipRule) {
  using transport::pkey_matches;
  EXPECT_TRUE(pkey_matches(0xFFFF, 0xFFFF));
  EXPECT_TRUE(pkey_matches(0x7FFF, 0xFFFF));   // a limited member talks to a full member
  EXPECT_FALSE(pkey_matches(0x7FFF, 0x7FFF));  // two limited members do not
  EXPECT_FALSE(pkey_matches(0x8123, 0xFFFF));  // another partition
  EXPECT_FALSE(pkey_matches(0x8000, 0x8000));  // the invalid key matches nothing
}

TEST(ReceiveChecks, UdCnpOnlyFromAnAddressTheConsumerNamed) {
  CongestionConfig congestion;
  congestion.reaction_point = true;
  TestNetwork network(3, ChannelFaults{});
  Engine& a = network.add_engine(congestion);
  Engine& b = network.add_engine(congestion);
  Endpoint sender = make_ud_qp(a, 0x11111111);
  make_ud_qp(b, 0x11111111);
  a.on_datagram(forge_cnp(kEngineB, kEngineA, sender.qpn), 0, true);
  EXPECT_EQ(a.counters().cnps_rejected, 1u);  // no address handle names 10.0.0.2 yet
  AddressVector av;
  av.dgid = b.gid();
  ASSERT_TRUE(a.create_ah(sender.pd, av));
  a.on_datagram(forge_cnp(kEngineB, kEngineA, sender.qpn), 0, true);
  a.on_datagram(forge_cnp(kIntruder, kEngineA, sender.qpn), 0, true);
  EXPECT_EQ(a.counters().cnps_received, 1u);
  EXPECT_EQ(a.counters().cnps_rejected, 2u);
}

// modify_qp refuses a controlled Q_Key with EPERM, and only that: the same
// QP takes an ordinary Q_Key, and a privileged engine takes the controlled one.
TEST(ReceiveChecks, AControlledQkeyNeedsAPrivilegedConsumer) {
  auto qkey_refusal = [](Engine& engine, std::uint32_t qkey) {
    std::uint32_t pd = *engine.alloc_pd();
    std::uint32_t cq = *engine.create_cq(16);
    QpInitAttr init;
    init.qp_type = QpType::ud;
    init.pd = pd;
    init.send_cq = init.recv_cq = cq;
    init.cap = QpCap{4, 4, 1, 1, 0};
    std::uint32_t qpn = *engine.create_qp(init);
    QpAttr attr;
    attr.qp_state = QpState::init;
    attr.qkey = qkey;
    return engine.modify_qp(qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrQkey);
  };
  TestNetwork network(4, ChannelFaults{});
  Engine& a = network.add_engine();
  EXPECT_EQ(qkey_refusal(a, 0x80010000), std::errc::operation_not_permitted);
  EXPECT_EQ(qkey_refusal(a, 0x00010000), std::errc{});
  EngineConfig privileged;
  privileged.allow_controlled_qkey = true;
  Engine trusted(privileged);
  EXPECT_EQ(qkey_refusal(trusted, 0x80010000), std::errc{});
}

}  // namespace
}  // namespace uroce::testing
