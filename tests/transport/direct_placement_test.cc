// Multipath direct placement (MultipathConfig::direct_placement): a WRITE
// packet that arrives after a gap is in memory before the gap fills, with
// only its headers held, and a SEND packet in the receive WQE its message
// will take; a WRITE behind a SEND that invalidates its rkey is not placed; a WRITE that overlaps an earlier one in flight
// waits its turn, so the later one's bytes win as PSN order says; a forged
// placement header that points outside the region writes nothing and fails
// the QP when its turn comes; and both ends must agree on the mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/bytes.h"
#include "tests/support/forged_datagram.h"
#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr TimeNs kUs = 1'000;
constexpr std::uint32_t kMtu = 1024;   // RcOptions' default path MTU
constexpr std::size_t kGuard = 4096;   // bytes before and after the remote region, never registered
constexpr std::size_t kRegion = 64 * 1024;

// An IPv4 datagram's transport fields (the BTH starts after 20 + 8 bytes).
std::uint8_t opcode(std::span<const std::uint8_t> datagram) { return datagram[28]; }
std::uint32_t psn(std::span<const std::uint8_t> datagram) { return load_be24(&datagram[37]); }
bool to_b(std::span<const std::uint8_t> datagram) { return datagram[19] == 2; }  // 10.0.0.2
bool is_request(std::span<const std::uint8_t> datagram) { return to_b(datagram) && opcode(datagram) < 0x10; }

constexpr std::uint8_t kWriteFirst = 0x06, kWriteMiddle = 0x07;

class DirectPlacement : public ::testing::Test {
 protected:
  void connect(ChannelFaults faults, bool requester_places = true, bool responder_places = true) {
    network_ = std::make_unique<TestNetwork>(11, std::move(faults));
    Engine& a = network_->add_engine();
    Engine& b = network_->add_engine();
    RcOptions options;
    options.recovery = LossRecovery::selective_repeat;
    options.multipath.entropy_values = 16;
    options.multipath.direct_placement = requester_places;
    options.responder_multipath = options.multipath;
    options.responder_multipath->direct_placement = responder_places;
    std::tie(a_, b_) = connect_rc(a, b, options);
    local_.resize(kRegion);
    for (std::size_t i = 0; i < local_.size(); ++i) local_[i] = static_cast<std::uint8_t>(i * 7 + 3);
    remote_.assign(kGuard + kRegion + kGuard, 0);
    local_keys_ = *a.reg_mr(a_.pd, local_.data(), local_.size(), kAll);
    remote_keys_ = *b.reg_mr(b_.pd, region(), kRegion, kAll);
  }

  std::uint8_t* region() { return remote_.data() + kGuard; }
  std::uintptr_t remote_address(std::size_t offset) { return reinterpret_cast<std::uintptr_t>(region()) + offset; }

  void post_write(std::uint64_t wr_id, std::size_t local_offset, std::size_t remote_offset, std::uint32_t length) {
    Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()) + local_offset, length, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {remote_address(remote_offset), remote_keys_.rkey};
    ASSERT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
  }

  std::vector<WorkCompletion> run_to_completions(std::size_t count) {
    std::vector<WorkCompletion> done;
    network_->run_until(
        [&] {
          for (const WorkCompletion& wc : drain(a_)) done.push_back(wc);
          return done.size() >= count;
        },
        network_->now() + 100'000 * kUs);
    return done;
  }

  bool region_holds(std::size_t remote_offset, std::size_t local_offset, std::size_t length) {
    return std::equal(local_.begin() + static_cast<std::ptrdiff_t>(local_offset),
                      local_.begin() + static_cast<std::ptrdiff_t>(local_offset + length), region() + remote_offset);
  }
  bool untouched(const std::uint8_t* from, std::size_t length) {
    return std::all_of(from, from + length, [](std::uint8_t byte) { return byte == 0; });
  }
  bool guards_untouched() { return untouched(remote_.data(), kGuard) && untouched(region() + kRegion, kGuard); }

  std::unique_ptr<TestNetwork> network_;
  Endpoint a_, b_;
  std::vector<std::uint8_t> local_, remote_;
  MrKeys local_keys_{}, remote_keys_{};
};

TEST_F(DirectPlacement, APacketAfterAGapIsInMemoryBeforeTheGapFills) {
  ChannelFaults faults;
  faults.path_delay_ns = [](std::span<const std::uint8_t> datagram) {
    return is_request(datagram) && opcode(datagram) == kWriteFirst ? 30 * kUs : TimeNs{0};  // within the reorder window
  };
  connect(faults);
  post_write(1, 0, 0, 3 * kMtu);  // FIRST (late), MIDDLE, LAST
  const EngineCounters& responder = b_.engine->counters();
  ASSERT_TRUE(network_->run_until([&] { return responder.placed_out_of_order == 2; }, network_->now() + 20 * kUs));
  EXPECT_TRUE(untouched(region(), kMtu));                     // the FIRST has not come
  EXPECT_TRUE(region_holds(kMtu, kMtu, 2 * kMtu));            // MIDDLE and LAST are in place
  EXPECT_TRUE(drain(a_).empty());                             // and nothing completed yet

  std::vector<WorkCompletion> done = run_to_completions(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_TRUE(region_holds(0, 0, 3 * kMtu));
  EXPECT_EQ(responder.held_out_of_order, 2u);
  EXPECT_EQ(a_.engine->counters().retransmitted_packets, 0u);
  EXPECT_TRUE(guards_untouched());
}

TEST_F(DirectPlacement, AWriteOverAnEarlierOneInFlightWaitsItsTurn) {
  std::uint32_t first_write_psn = RcOptions{}.sq_psn;
  ChannelFaults faults;
  faults.path_delay_ns = [&](std::span<const std::uint8_t> datagram) {
    bool first_write = psn(datagram) == first_write_psn || psn(datagram) == first_write_psn + 1;
    return is_request(datagram) && first_write ? 30 * kUs : TimeNs{0};
  };
  connect(faults);
  post_write(1, 0, 0, 2 * kMtu);
  post_write(2, 8 * kMtu, kMtu, 2 * kMtu);  // overlaps the first's second half
  const EngineCounters& responder = b_.engine->counters();
  ASSERT_TRUE(network_->run_until([&] { return responder.held_out_of_order == 2; }, network_->now() + 20 * kUs));
  EXPECT_EQ(responder.placed_out_of_order, 0u);  // held whole, not placed
  EXPECT_TRUE(untouched(region(), 3 * kMtu));

  std::vector<WorkCompletion> done = run_to_completions(2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(region_holds(0, 0, kMtu));                 // the first's own half
  EXPECT_TRUE(region_holds(kMtu, 8 * kMtu, 2 * kMtu));   // the later WRITE's bytes win where they overlap
  EXPECT_EQ(a_.engine->counters().retransmitted_packets, 0u);
}

// A SEND with invalidate ahead of a WRITE under the rkey it invalidates:
// in PSN order the WRITE finds the rkey gone and fails. Its packets must
// not be placed while the SEND is late, or they would write through a key
// that is about to be revoked.
TEST_F(DirectPlacement, AWriteBehindASendThatInvalidatesItsKeyIsNotPlaced) {
  std::uint32_t send_psn = RcOptions{}.sq_psn;
  ChannelFaults faults;
  faults.path_delay_ns = [&](std::span<const std::uint8_t> datagram) {
    return to_b(datagram) && psn(datagram) == send_psn ? 30 * kUs : TimeNs{0};  // SEND_ONLY_WITH_INVALIDATE is 0x17
  };
  connect(faults);
  std::vector<std::uint8_t> receive(64, 0);
  MrKeys receive_keys = *b_.engine->reg_mr(b_.pd, receive.data(), receive.size(), kAll);
  Sge recv_sge{reinterpret_cast<std::uintptr_t>(receive.data()), 64, receive_keys.lkey};
  ASSERT_EQ(b_.engine->post_recv(b_.qpn, RecvWr{.wr_id = 7, .sg_list = {&recv_sge, 1}}), std::errc{});
  Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()), 16, local_keys_.lkey};
  SendWr send;
  send.wr_id = 1;
  send.opcode = WrOpcode::send_with_inv;
  send.invalidate_rkey = remote_keys_.rkey;
  send.send_flags = kSendSignaled;
  send.sg_list = {&sge, 1};
  ASSERT_EQ(a_.engine->post_send(a_.qpn, send), std::errc{});
  post_write(2, 0, 0, 3 * kMtu);

  const EngineCounters& responder = b_.engine->counters();
  ASSERT_TRUE(network_->run_until([&] { return responder.held_out_of_order == 3; }, network_->now() + 20 * kUs));
  EXPECT_EQ(responder.placed_out_of_order, 0u);
  std::vector<WorkCompletion> done = run_to_completions(2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(done[1].status, WcStatus::rem_access_err);
  EXPECT_TRUE(untouched(region(), kRegion));  // the WRITE came after its key was revoked
}

TEST_F(DirectPlacement, AWriteBesideAnEarlierOneIsPlacedAtOnce) {
  std::uint32_t first_write_psn = RcOptions{}.sq_psn;
  ChannelFaults faults;
  faults.path_delay_ns = [&](std::span<const std::uint8_t> datagram) {
    return is_request(datagram) && psn(datagram) == first_write_psn ? 30 * kUs : TimeNs{0};
  };
  connect(faults);
  post_write(1, 0, 0, kMtu);
  post_write(2, kMtu, kMtu, 2 * kMtu);  // the next bytes: no overlap
  const EngineCounters& responder = b_.engine->counters();
  ASSERT_TRUE(network_->run_until([&] { return responder.placed_out_of_order == 2; }, network_->now() + 20 * kUs));
  EXPECT_TRUE(region_holds(kMtu, kMtu, 2 * kMtu));
  EXPECT_EQ(run_to_completions(2).size(), 2u);
  EXPECT_TRUE(region_holds(0, 0, 3 * kMtu));
}

// SENDs: each packet names its message (counted among those that take a
// receive WQE) and its offset, so a MIDDLE and LAST that arrive before the
// FIRST go straight into the second receive WQE posted, the one their
// message will take; the first WQE's message completes first.
TEST_F(DirectPlacement, ASendPacketAfterAGapGoesStraightIntoItsReceive) {
  std::uint32_t second_send_first_psn = RcOptions{}.sq_psn + 1;
  ChannelFaults faults;
  faults.path_delay_ns = [&](std::span<const std::uint8_t> datagram) {
    bool late = psn(datagram) == RcOptions{}.sq_psn || psn(datagram) == second_send_first_psn;
    return is_request(datagram) && late ? 30 * kUs : TimeNs{0};
  };
  connect(faults);
  std::vector<std::uint8_t> receives(2 * 4 * kMtu, 0);
  MrKeys receive_keys = *b_.engine->reg_mr(b_.pd, receives.data(), receives.size(), kAll);
  for (std::uint64_t i = 0; i < 2; ++i) {
    Sge sge{reinterpret_cast<std::uintptr_t>(receives.data()) + i * 4 * kMtu, 4 * kMtu, receive_keys.lkey};
    RecvWr recv{.wr_id = 10 + i, .sg_list = {&sge, 1}};
    ASSERT_EQ(b_.engine->post_recv(b_.qpn, recv), std::errc{});
  }
  for (std::uint64_t i = 0; i < 2; ++i) {
    std::uint32_t length = i == 0 ? 100 : 3 * kMtu;  // one packet, then FIRST (late), MIDDLE, LAST
    Sge sge{reinterpret_cast<std::uintptr_t>(local_.data()) + i * kMtu, length, local_keys_.lkey};
    SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::send;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    ASSERT_EQ(a_.engine->post_send(a_.qpn, wr), std::errc{});
  }
  const EngineCounters& responder = b_.engine->counters();
  ASSERT_TRUE(network_->run_until([&] { return responder.placed_out_of_order == 2; }, network_->now() + 20 * kUs));
  const std::uint8_t* second = receives.data() + 4 * kMtu;
  EXPECT_TRUE(std::equal(local_.begin() + 2 * kMtu, local_.begin() + 3 * kMtu, second + kMtu));  // MIDDLE
  EXPECT_TRUE(std::equal(local_.begin() + 3 * kMtu, local_.begin() + 4 * kMtu, second + 2 * kMtu));  // LAST
  EXPECT_TRUE(untouched(second, kMtu));
  EXPECT_TRUE(drain(b_).empty());  // nothing completes before its turn

  ASSERT_EQ(run_to_completions(2).size(), 2u);
  std::vector<WorkCompletion> received = drain(b_);
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0].wr_id, 10u);
  EXPECT_EQ(received[0].byte_len, 100u);
  EXPECT_EQ(received[1].wr_id, 11u);
  EXPECT_EQ(received[1].byte_len, 3 * kMtu);
  EXPECT_TRUE(std::equal(local_.begin(), local_.begin() + 100, receives.begin()));
  EXPECT_TRUE(std::equal(local_.begin() + kMtu, local_.begin() + 4 * kMtu, second));
}

// A peer that forges the placement header of an out-of-order MIDDLE packet
// to reach past the region: nothing is written on arrival (the packet is
// held whole), and in its turn the header disagrees with the message and
// the QP fails with an invalid request. No byte outside the region changes.
TEST_F(DirectPlacement, AForgedPlacementHeaderOutsideTheRegionWritesNothing) {
  std::vector<std::vector<std::uint8_t>> captured;
  ChannelFaults faults;
  faults.path_down = [&](std::span<const std::uint8_t> datagram) {
    if (!is_request(datagram)) return false;
    if (captured.size() < 3) captured.emplace_back(datagram.begin(), datagram.end());
    return true;  // every request is "lost" here; the test delivers them itself
  };
  connect(faults);
  post_write(1, 0, kRegion - 3 * kMtu, 3 * kMtu);  // ends exactly at the region's end
  network_->run_until([&] { return captured.size() >= 3; }, network_->now() + 10 * kUs);
  ASSERT_EQ(captured.size(), 3u);
  ASSERT_EQ(opcode(captured[1]), kWriteMiddle);

  auto middle = wire::parse_roce_datagram(captured[1]);
  ASSERT_TRUE(middle);
  std::vector<std::uint8_t> payload(middle->packet.payload.begin(), middle->packet.payload.end());
  wire::RethRepr outside{remote_address(kRegion - kMtu / 2), remote_keys_.rkey, 2 * kMtu};  // straddles the end
  outside.emit(MutableByteSpan(payload.data(), wire::RethRepr::kLength));
  Forgery forgery;
  forgery.payload = payload;
  std::vector<std::uint8_t> forged = forge(captured[1], forgery);

  Engine& b = *b_.engine;
  b.on_datagram(forged, network_->now());
  EXPECT_EQ(b.counters().placed_out_of_order, 0u);
  EXPECT_EQ(b.counters().held_out_of_order, 1u);
  EXPECT_TRUE(guards_untouched());
  EXPECT_TRUE(untouched(region(), kRegion));

  b.on_datagram(captured[0], network_->now());  // the FIRST: the forged MIDDLE's turn comes
  EXPECT_EQ(b.query_qp(b_.qpn)->qp_state, QpState::err);
  EXPECT_TRUE(guards_untouched());
  EXPECT_TRUE(region_holds(kRegion - 3 * kMtu, 0, kMtu));     // the FIRST alone landed
  EXPECT_TRUE(untouched(region() + kRegion - 2 * kMtu, 2 * kMtu));
}

// Both ends must agree: a responder without direct placement takes a MIDDLE
// packet's placement header for payload, finds the length wrong and fails
// the QP, instead of writing misplaced bytes.
TEST_F(DirectPlacement, ARequesterAndResponderThatDisagreeFailLoudly) {
  connect(ChannelFaults{}, true, false);
  post_write(1, 0, 0, 3 * kMtu);
  std::vector<WorkCompletion> done = run_to_completions(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_NE(done[0].status, WcStatus::success);
  EXPECT_TRUE(untouched(region() + kMtu, kRegion - kMtu));  // past the FIRST, nothing landed
  EXPECT_TRUE(guards_untouched());
}

}  // namespace
}  // namespace uroce::testing
