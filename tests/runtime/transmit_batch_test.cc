// TransmitBatch (src/runtime/transmit_batch.h) against a port that pushes
// back, as a full receiver's inbox does: what the port refuses must leave
// later unchanged and in order, however often it is refused. The oracle is
// the receiving engine: a datagram reordered, duplicated or garbled would
// show as out-of-sequence or malformed packets there and as retransmissions
// at the sender, and the bytes would not all arrive.
#include "runtime/transmit_batch.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_network.h"

namespace uroce {
namespace {

// Takes at most `limit` datagrams per send, and none on every other call;
// hands what it takes straight to `receiver`.
class StingyPort final : public port::Port {
 public:
  StingyPort(Engine& receiver, std::size_t limit) : receiver_(receiver), limit_(limit) {}

  const Gid& gid() const override { return gid_; }
  int receive_fd() const override { return -1; }
  std::size_t send(std::span<const DescribedDatagram> datagrams) override {
    ++calls_;
    if (calls_ % 2 == 0) return 0;
    std::size_t taken = std::min(datagrams.size(), limit_);
    for (std::size_t i = 0; i < taken; ++i) {
      receiver_.on_datagram(datagrams[i].bytes, now_);
      ++taken_total_;
    }
    refused_total_ += datagrams.size() - taken;
    return taken;
  }
  std::span<const port::ReceivedDatagram> receive(TimeNs) override { return {}; }
  port::PortCounters counters() const override { return {}; }
  std::size_t max_datagram_length() const override { return kMaxDatagramLength; }

  std::uint64_t taken_total() const { return taken_total_; }
  std::uint64_t refused_total() const { return refused_total_; }
  void set_now(TimeNs now) { now_ = now; }

 private:
  Engine& receiver_;
  std::size_t limit_;
  Gid gid_{};
  std::uint64_t calls_ = 0, taken_total_ = 0, refused_total_ = 0;
  TimeNs now_ = 0;
};

TEST(TransmitBatch, WhatAPortRefusesLeavesLaterUnchangedAndInOrder) {
  testing::TestNetwork network(7, {});
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  auto [sender, receiver] = testing::connect_rc(a, b);
  std::vector<std::uint8_t> source(1 << 20), target(1 << 20, 0);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i * 7 + i / 4096);
  MrKeys s = *a.reg_mr(sender.pd, source.data(), source.size(), kAccessLocalWrite);
  MrKeys t = *b.reg_mr(receiver.pd, target.data(), target.size(), kAccessLocalWrite | kAccessRemoteWrite);
  for (std::size_t offset = 0; offset < source.size(); offset += 256 << 10) {  // four WRITEs of 256 KiB
    Sge sge{reinterpret_cast<std::uintptr_t>(source.data() + offset), 256 << 10, s.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data() + offset), t.rkey};
    ASSERT_EQ(a.post_send(sender.qpn, wr), std::errc{});
  }

  StingyPort to_b(b, 5), to_a(a, 64);
  runtime::TransmitBatch from_a(0), from_b(0);
  std::size_t completions = 0;
  TimeNs now = 1'000'000;
  for (int round = 0; round < 100'000 && completions < 4; ++round, now += 1'000) {
    to_b.set_now(now);
    to_a.set_now(now);
    from_a.transmit(a, to_b, now, runtime::AckRelease::now);
    from_b.transmit(b, to_a, now, runtime::AckRelease::now);
    for (const WorkCompletion& completion : testing::drain(sender)) {
      EXPECT_EQ(completion.status, WcStatus::success);
      ++completions;
    }
  }
  EXPECT_EQ(completions, 4u);
  EXPECT_EQ(target, source);
  EXPECT_GT(to_b.refused_total(), 1000u);  // the batch was refused often, and in part
  EXPECT_GE(to_b.taken_total(), 256u);
  EXPECT_EQ(b.counters().out_of_sequence, 0u);
  EXPECT_EQ(b.counters().duplicate_requests, 0u);
  EXPECT_EQ(b.counters().malformed_packets, 0u);
  EXPECT_EQ(a.counters().retransmitted_packets, 0u);
}

}  // namespace
}  // namespace uroce
