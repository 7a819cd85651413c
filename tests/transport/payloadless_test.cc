// The engine without payload bytes (EngineConfig::carry_payload = false, the
// simulator's mode): memory regions are bare address ranges with no memory
// behind them, packets travel as their headers only, and WRITE, READ and SEND
// still complete with the right lengths and the same access checks. Any
// read or write of a region's bytes would fault (the addresses are unmapped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint64_t kUnmappedBase = 0x7e0000000000;  // never mapped in a test process
constexpr std::uint64_t kRegionLength = 1ull << 30;
constexpr std::size_t kHeaderBytes = 96;  // longest IPv6 + UDP + BTH + extension headers fit

EngineConfig payloadless(std::uint8_t host) {
  EngineConfig config;
  config.gid = gid_from_ipv4({10, 0, 0, host});
  config.seed = host;
  config.carry_payload = false;
  return config;
}

class Payloadless : public ::testing::Test {
 protected:
  void SetUp() override {
    RcOptions options;
    options.mtu = PathMtu::mtu4096;
    std::tie(a_, b_) = connect_rc(engine_a_, engine_b_, options);
    void* base = reinterpret_cast<void*>(kUnmappedBase);
    auto keys_a = engine_a_.reg_mr(a_.pd, base, kRegionLength, options.access);
    auto keys_b = engine_b_.reg_mr(b_.pd, base, kRegionLength, options.access);
    ASSERT_TRUE(keys_a && keys_b);
    keys_a_ = *keys_a;
    keys_b_ = *keys_b;
  }

  // Moves packets between the two engines as a simulator does: only the
  // header bytes travel; the receiver gets a datagram of the full length
  // whose payload area is whatever its buffer held. Returns the packets moved.
  std::size_t exchange_until_quiet() {
    std::vector<std::uint8_t> out(kMaxDatagramLength), in(kMaxDatagramLength, 0xEE);
    std::size_t moved = 0;
    for (bool any = true; any;) {
      any = false;
      for (auto [from, to] : {std::pair{&engine_a_, &engine_b_}, std::pair{&engine_b_, &engine_a_}}) {
        while (std::size_t length = from->poll_transmit(out, now_).length) {
          std::memcpy(in.data(), out.data(), std::min(length, kHeaderBytes));
          now_ += 1000;
          to->on_datagram(std::span(in).first(length), now_, false);
          ++moved;
          any = true;
        }
      }
    }
    return moved;
  }

  Engine engine_a_{payloadless(1)};
  Engine engine_b_{payloadless(2)};
  Endpoint a_, b_;
  MrKeys keys_a_, keys_b_;
  TimeNs now_ = 0;
};

TEST_F(Payloadless, WriteOfAMegabyteCompletesWithoutTouchingMemory) {
  Sge sge{kUnmappedBase + 4096, 1 << 20, keys_a_.lkey};
  SendWr write;
  write.wr_id = 7;
  write.opcode = WrOpcode::rdma_write;
  write.send_flags = kSendSignaled;
  write.sg_list = {&sge, 1};
  write.rdma = {kUnmappedBase + 8192, keys_b_.rkey};
  ASSERT_EQ(engine_a_.post_send(a_.qpn, write), std::errc{});
  EXPECT_GE(exchange_until_quiet(), 256u);  // 256 data packets and their ACKs
  std::vector<WorkCompletion> done = drain(a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(done[0].wr_id, 7u);
  EXPECT_EQ(engine_b_.counters().icrc_unchecked, engine_b_.counters().packets_received);
}

TEST_F(Payloadless, ReadAndSendReportTheirLengths) {
  Sge landing{kUnmappedBase, 10'000, keys_a_.lkey};
  SendWr read;
  read.wr_id = 1;
  read.opcode = WrOpcode::rdma_read;
  read.send_flags = kSendSignaled;
  read.sg_list = {&landing, 1};
  read.rdma = {kUnmappedBase + 100, keys_b_.rkey};
  ASSERT_EQ(engine_a_.post_send(a_.qpn, read), std::errc{});

  Sge receive_area{kUnmappedBase + (1 << 20), 64'000, keys_b_.lkey};
  ASSERT_EQ(engine_b_.post_recv(b_.qpn, RecvWr{2, {&receive_area, 1}}), std::errc{});
  Sge message{kUnmappedBase + (2 << 20), 50'000, keys_a_.lkey};
  SendWr send;
  send.wr_id = 3;
  send.opcode = WrOpcode::send;
  send.send_flags = kSendSignaled;
  send.sg_list = {&message, 1};
  ASSERT_EQ(engine_a_.post_send(a_.qpn, send), std::errc{});
  exchange_until_quiet();

  std::vector<WorkCompletion> at_a = drain(a_), at_b = drain(b_);
  ASSERT_EQ(at_a.size(), 2u);
  EXPECT_EQ(at_a[0].status, WcStatus::success);
  EXPECT_EQ(at_a[0].opcode, WcOpcode::rdma_read);
  EXPECT_EQ(at_a[0].byte_len, 10'000u);
  EXPECT_EQ(at_a[1].status, WcStatus::success);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].status, WcStatus::success);
  EXPECT_EQ(at_b[0].byte_len, 50'000u);
}

TEST_F(Payloadless, AccessChecksStillApply) {
  Sge sge{kUnmappedBase, 4096, keys_a_.lkey};
  SendWr write;
  write.wr_id = 9;
  write.opcode = WrOpcode::rdma_write;
  write.send_flags = kSendSignaled;
  write.sg_list = {&sge, 1};
  write.rdma = {kUnmappedBase + kRegionLength - 100, keys_b_.rkey};  // runs past the region's end
  ASSERT_EQ(engine_a_.post_send(a_.qpn, write), std::errc{});
  exchange_until_quiet();
  std::vector<WorkCompletion> done = drain(a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::rem_access_err);
}

}  // namespace
}  // namespace uroce::testing
