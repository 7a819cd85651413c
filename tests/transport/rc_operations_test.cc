// RC operations end to end between two engines over the test network: SEND
// (with immediate / invalidate), WRITE (with immediate), READ and atomics, in
// single- and multi-packet sizes, data and completions checked.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

struct Buffer {
  std::vector<std::uint8_t> bytes;
  MrKeys keys;
  std::uint64_t addr(std::size_t offset = 0) const { return reinterpret_cast<std::uintptr_t>(bytes.data()) + offset; }
  Sge sge(std::size_t offset, std::uint32_t length) const { return Sge{addr(offset), length, keys.lkey}; }
};

Buffer make_buffer(const Endpoint& end, std::size_t size, std::uint8_t seed, std::uint32_t access = kAll) {
  Buffer buffer;
  buffer.bytes.resize(size);
  for (std::size_t i = 0; i < size; ++i) buffer.bytes[i] = static_cast<std::uint8_t>(seed + i * 7 + (i >> 9));
  auto keys = end.engine->reg_mr(end.pd, buffer.bytes.data(), size, access);
  EXPECT_TRUE(keys);
  buffer.keys = *keys;
  return buffer;
}

class RcOperations : public ::testing::TestWithParam<std::uint32_t> {
 protected:
  void SetUp() override {
    engine_a_ = &network_.add_engine();
    engine_b_ = &network_.add_engine();
    std::tie(a_, b_) = connect_rc(*engine_a_, *engine_b_, options());
  }
  virtual RcOptions options() { return RcOptions{}; }

  // Runs until a's CQ has given a_count completions and b's b_count.
  std::pair<std::vector<WorkCompletion>, std::vector<WorkCompletion>> wait_for(std::size_t a_count,
                                                                              std::size_t b_count) {
    return wait_for_completions(network_, a_, b_, a_count, b_count);
  }

  TestNetwork network_{7, ChannelFaults{}};
  Engine* engine_a_ = nullptr;
  Engine* engine_b_ = nullptr;
  Endpoint a_, b_;
};

TEST_P(RcOperations, SendWithImmediateArrivesIntact) {
  std::uint32_t size = GetParam();
  Buffer source = make_buffer(a_, size + 8, 1);
  Buffer target = make_buffer(b_, size + 64, 0);
  std::fill(target.bytes.begin(), target.bytes.end(), 0);
  Sge recv_sge = target.sge(0, size + 64);
  ASSERT_EQ(engine_b_->post_recv(b_.qpn, RecvWr{11, {&recv_sge, 1}}), std::errc{});
  Sge send_sge = source.sge(8, size);
  SendWr wr;
  wr.wr_id = 22;
  wr.opcode = WrOpcode::send_with_imm;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&send_sge, 1};
  wr.imm_data = 0xA1B2C3D4;
  ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});

  auto [at_a, at_b] = wait_for(1, 1);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].wr_id, 22u);
  EXPECT_EQ(at_a[0].status, WcStatus::success);
  EXPECT_EQ(at_a[0].opcode, WcOpcode::send);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].wr_id, 11u);
  EXPECT_EQ(at_b[0].status, WcStatus::success);
  EXPECT_EQ(at_b[0].opcode, WcOpcode::recv);
  EXPECT_EQ(at_b[0].byte_len, size);
  EXPECT_EQ(at_b[0].wc_flags & kWcWithImm, kWcWithImm);
  EXPECT_EQ(at_b[0].imm_data, 0xA1B2C3D4u);
  EXPECT_EQ(at_b[0].src_qp, a_.qpn);
  EXPECT_EQ(at_b[0].qp_num, b_.qpn);
  EXPECT_TRUE(std::equal(target.bytes.begin(), target.bytes.begin() + size, source.bytes.begin() + 8));
  EXPECT_TRUE(std::all_of(target.bytes.begin() + size, target.bytes.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST_P(RcOperations, WriteLandsExactlyInRange) {
  std::uint32_t size = GetParam();
  Buffer source = make_buffer(a_, size, 3);
  Buffer target = make_buffer(b_, size + 32, 0);
  std::fill(target.bytes.begin(), target.bytes.end(), 0xEE);
  Sge sge = source.sge(0, size);
  SendWr wr;
  wr.wr_id = 5;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma.remote_addr = target.addr(16);
  wr.rdma.rkey = target.keys.rkey;
  ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  auto [at_a, at_b] = wait_for(1, 0);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].status, WcStatus::success);
  EXPECT_EQ(at_a[0].opcode, WcOpcode::rdma_write);
  EXPECT_TRUE(at_b.empty());  // a plain WRITE is invisible to the target's CQ
  EXPECT_TRUE(std::equal(source.bytes.begin(), source.bytes.end(), target.bytes.begin() + 16));
  for (std::size_t i : {std::size_t{0}, std::size_t{15}, std::size_t{size} + 16, std::size_t{size} + 31}) {
    EXPECT_EQ(target.bytes[i], 0xEE) << i;
  }
}

TEST_P(RcOperations, WriteWithImmediateConsumesAReceive) {
  std::uint32_t size = GetParam();
  Buffer source = make_buffer(a_, size, 9);
  Buffer target = make_buffer(b_, size, 0);
  ASSERT_EQ(engine_b_->post_recv(b_.qpn, RecvWr{77, {}}), std::errc{});
  Sge sge = source.sge(0, size);
  SendWr wr;
  wr.wr_id = 6;
  wr.opcode = WrOpcode::rdma_write_with_imm;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.imm_data = 0x01020304;
  wr.rdma.remote_addr = target.addr();
  wr.rdma.rkey = target.keys.rkey;
  ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  auto [at_a, at_b] = wait_for(1, 1);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].wr_id, 77u);
  EXPECT_EQ(at_b[0].opcode, WcOpcode::recv_rdma_with_imm);
  EXPECT_EQ(at_b[0].imm_data, 0x01020304u);
  EXPECT_EQ(at_b[0].byte_len, size);
  EXPECT_EQ(source.bytes, target.bytes);
}

TEST_P(RcOperations, ReadFetchesRemoteBytes) {
  std::uint32_t size = GetParam();
  Buffer remote = make_buffer(b_, size + 100, 42);
  Buffer local = make_buffer(a_, size, 0);
  std::fill(local.bytes.begin(), local.bytes.end(), 0);
  Sge sge = local.sge(0, size);
  SendWr wr;
  wr.wr_id = 8;
  wr.opcode = WrOpcode::rdma_read;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma.remote_addr = remote.addr(100);
  wr.rdma.rkey = remote.keys.rkey;
  ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  auto [at_a, at_b] = wait_for(1, 0);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].status, WcStatus::success);
  EXPECT_EQ(at_a[0].opcode, WcOpcode::rdma_read);
  EXPECT_EQ(at_a[0].byte_len, size);
  EXPECT_TRUE(std::equal(local.bytes.begin(), local.bytes.end(), remote.bytes.begin() + 100));
}

INSTANTIATE_TEST_SUITE_P(Sizes, RcOperations, ::testing::Values(0u, 1u, 3u, 1024u, 1025u, 4096u, 65536u + 13));

using RcAtomics = RcOperations;

TEST_F(RcAtomics, FetchAddAndCompareSwapReturnTheOriginal) {
  Buffer remote = make_buffer(b_, 64, 0);
  std::uint64_t start = 1000;
  std::memcpy(remote.bytes.data() + 8, &start, 8);
  Buffer results = make_buffer(a_, 24, 0);

  Sge first = results.sge(0, 8), second = results.sge(8, 8), third = results.sge(16, 8);
  SendWr add;
  add.wr_id = 1;
  add.opcode = WrOpcode::atomic_fetch_and_add;
  add.send_flags = kSendSignaled;
  add.sg_list = {&first, 1};
  add.atomic = {remote.addr(8), 5, 0, remote.keys.rkey};
  SendWr swap_hit = add;
  swap_hit.wr_id = 2;
  swap_hit.opcode = WrOpcode::atomic_cmp_and_swp;
  swap_hit.sg_list = {&second, 1};
  swap_hit.atomic = {remote.addr(8), 1005, 77, remote.keys.rkey};
  SendWr swap_miss = swap_hit;
  swap_miss.wr_id = 3;
  swap_miss.sg_list = {&third, 1};
  swap_miss.atomic = {remote.addr(8), 1005, 99, remote.keys.rkey};
  for (const SendWr& wr : {add, swap_hit, swap_miss}) ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});

  auto [at_a, at_b] = wait_for(3, 0);
  ASSERT_EQ(at_a.size(), 3u);
  EXPECT_EQ(at_a[0].opcode, WcOpcode::fetch_add);
  EXPECT_EQ(at_a[1].opcode, WcOpcode::comp_swap);
  std::uint64_t values[3];
  std::memcpy(values, results.bytes.data(), 24);
  EXPECT_EQ(values[0], 1000u);
  EXPECT_EQ(values[1], 1005u);
  EXPECT_EQ(values[2], 77u);
  std::uint64_t final_value;
  std::memcpy(&final_value, remote.bytes.data() + 8, 8);
  EXPECT_EQ(final_value, 77u);
}

// IBTA 1.5's RDMA ATOMIC WRITE: 8 bytes placed at an aligned address under
// remote write access, the data inline (its 8 bytes ride in the WQE) or from
// an SGE; one packet with a RETH; a misaligned address or a length other than
// 8 is refused at the responder (invalid request) or at posting.
TEST_F(RcAtomics, AtomicWritePlacesEightAlignedBytes) {
  Buffer remote = make_buffer(b_, 64, 0, kAccessLocalWrite | kAccessRemoteWrite);
  Buffer local = make_buffer(a_, 16, 0);
  std::uint64_t value = 0x1122334455667788ull;
  std::memcpy(local.bytes.data(), &value, 8);
  Sge from_sge = local.sge(0, 8);
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::atomic_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&from_sge, 1};
  wr.rdma = {remote.addr(16), remote.keys.rkey};
  std::uint64_t inline_value = 0x0102030405060708ull;
  Sge inline_sge{reinterpret_cast<std::uintptr_t>(&inline_value), 8, 0};
  SendWr inlined = wr;
  inlined.wr_id = 2;
  inlined.send_flags = kSendSignaled | kSendInline;
  inlined.sg_list = {&inline_sge, 1};
  inlined.rdma = {remote.addr(24), remote.keys.rkey};
  ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  ASSERT_EQ(engine_a_->post_send(a_.qpn, inlined), std::errc{});
  auto [done, none] = wait_for(2, 0);
  ASSERT_EQ(done.size(), 2u);
  for (const WorkCompletion& completion : done) {
    EXPECT_EQ(completion.status, WcStatus::success);
    EXPECT_EQ(completion.opcode, WcOpcode::atomic_write);
  }
  std::uint64_t landed[2];
  std::memcpy(landed, remote.bytes.data() + 16, 16);
  EXPECT_EQ(landed[0], value);
  EXPECT_EQ(landed[1], inline_value);
  EXPECT_EQ(remote.bytes[15], static_cast<std::uint8_t>(15 * 7));  // nothing around them touched
  EXPECT_EQ(remote.bytes[32], static_cast<std::uint8_t>(32 * 7));

  Sge seven = local.sge(0, 7);
  SendWr short_wr = wr;
  short_wr.sg_list = {&seven, 1};
  EXPECT_EQ(engine_a_->post_send(a_.qpn, short_wr), std::errc::invalid_argument);
  SendWr misaligned = wr;
  misaligned.wr_id = 3;
  misaligned.rdma = {remote.addr(4), remote.keys.rkey};
  ASSERT_EQ(engine_a_->post_send(a_.qpn, misaligned), std::errc{});
  auto [refused, unused] = wait_for(1, 0);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].status, WcStatus::rem_inv_req_err);
  EXPECT_EQ(remote.bytes[4], static_cast<std::uint8_t>(4 * 7));
}

TEST_F(RcAtomics, SendWithInvalidateRevokesTheRemoteKey) {
  Buffer exposed = make_buffer(b_, 64, 1);
  Buffer target = make_buffer(b_, 64, 0);
  Sge recv_sge = target.sge(0, 64);
  ASSERT_EQ(engine_b_->post_recv(b_.qpn, RecvWr{1, {&recv_sge, 1}}), std::errc{});
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::send_with_inv;
  wr.send_flags = kSendSignaled | kSendInline;
  std::uint8_t message[4] = {1, 2, 3, 4};
  Sge inline_sge{reinterpret_cast<std::uintptr_t>(message), 4, 0};
  wr.sg_list = {&inline_sge, 1};
  wr.invalidate_rkey = exposed.keys.rkey;
  ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  auto [at_a, at_b] = wait_for(1, 1);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].wc_flags & kWcWithInv, kWcWithInv);
  EXPECT_EQ(at_b[0].imm_data, exposed.keys.rkey);
  EXPECT_EQ(target.bytes[3], 4);

  // The invalidated rkey no longer grants access.
  Buffer local = make_buffer(a_, 8, 0);
  Sge sge = local.sge(0, 8);
  SendWr read;
  read.wr_id = 2;
  read.opcode = WrOpcode::rdma_read;
  read.send_flags = kSendSignaled;
  read.sg_list = {&sge, 1};
  read.rdma = {exposed.addr(), exposed.keys.rkey};
  ASSERT_EQ(engine_a_->post_send(a_.qpn, read), std::errc{});
  auto [errors, unused] = wait_for(1, 0);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].status, WcStatus::rem_access_err);
}

TEST_F(RcAtomics, ManyMessagesCompleteInOrder) {
  Buffer source = make_buffer(a_, 1 << 16, 5);
  Buffer target = make_buffer(b_, 1 << 16, 0);
  constexpr int kCount = 500;
  std::vector<Sge> sges(kCount);
  for (int i = 0; i < kCount; ++i) {
    sges[i] = source.sge(static_cast<std::size_t>(i) * 100, 100);
    SendWr wr;
    wr.wr_id = static_cast<std::uint64_t>(i);
    wr.opcode = i % 2 ? WrOpcode::rdma_write : WrOpcode::rdma_read;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sges[i], 1};
    wr.rdma = {target.addr(static_cast<std::size_t>(i) * 100), target.keys.rkey};
    ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  }
  auto [at_a, at_b] = wait_for(kCount, 0);
  ASSERT_EQ(at_a.size(), static_cast<std::size_t>(kCount));
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(at_a[i].wr_id, static_cast<std::uint64_t>(i));
    EXPECT_EQ(at_a[i].status, WcStatus::success);
  }
}

}  // namespace
}  // namespace uroce::testing
