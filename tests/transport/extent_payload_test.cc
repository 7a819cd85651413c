// Payloads by reference (uroce/engine.h, RegionBacking) between two engines
// whose datagrams the test network delivers as from a local device's shared
// memory: a long SEND or WRITE from a region with a backing goes as one
// extent packet once the peer is known to be local, arrives intact, and
// meets every check a packet-per-MTU message meets; a long READ of a shared
// region comes back as one response; an extent packet from a wire or
// naming unreadable bytes touches no memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr TimeNs kSecond = 1'000'000'000;
constexpr std::uint64_t kFileId = 0x5eed;
constexpr std::uint64_t kFileOffset = 4096;  // the region starts this far into its file
constexpr std::uint64_t kReadFileId = 0xfeed;

// What a port's ExtentMappings does, over buffers of this process that
// stand for the peers' files: a's (pid 77, fd 5) and b's (pid 78, fd 6).
class BufferExtents : public ExtentSource {
 public:
  std::optional<std::span<const std::uint8_t>> resolve(const PayloadExtent& extent, std::uint64_t length) override {
    ++calls;
    std::span<const std::uint8_t> file = extent.id == kFileId && extent.pid == 77 && extent.fd == 5       ? file_bytes
                                         : extent.id == kReadFileId && extent.pid == 78 && extent.fd == 6 ? read_file_bytes
                                                                                                          : std::span<const std::uint8_t>();
    std::uint64_t start = extent.id == kFileId ? kFileOffset : 0;
    if (unreadable || file.empty() || extent.offset < start || length > file.size() ||
        extent.offset - start > file.size() - length) {
      return std::nullopt;
    }
    return file.subspan(extent.offset - start, length);
  }
  // A peer's own memory (pid 79): this process's, as long as readable.
  bool may_read_process(std::uint32_t pid, std::uint64_t) override { return pid == 79 && !unreadable; }
  std::uint64_t copy_from_process(std::uint32_t pid, std::uint64_t address, void* to, std::uint64_t length) override {
    ++process_copies;
    if (pid != 79 || unreadable) return 0;
    std::uint64_t n = std::min(length, readable_process_bytes);
    std::memcpy(to, reinterpret_cast<const void*>(address), n);
    return n;
  }
  std::uint64_t readable_process_bytes = UINT64_MAX;  // how much of each copy succeeds
  int process_copies = 0;
  std::span<const std::uint8_t> file_bytes;
  std::span<const std::uint8_t> read_file_bytes;
  bool unreadable = false;
  int calls = 0;
};

struct Buffer {
  std::vector<std::uint8_t> bytes;
  MrKeys keys;
  std::uint64_t addr(std::size_t offset = 0) const { return reinterpret_cast<std::uintptr_t>(bytes.data()) + offset; }
  Sge sge(std::size_t offset, std::uint32_t length) const { return Sge{addr(offset), length, keys.lkey}; }
};

class ExtentPayloads : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_a_ = &network_.add_engine();
    engine_b_ = &network_.add_engine();
    std::tie(a_, b_) = connect_rc(*engine_a_, *engine_b_, RcOptions{});  // MTU 1024
    network_.set_extent_source(&extents_);

    source_.bytes.resize(kLength + 64);
    for (std::size_t i = 0; i < source_.bytes.size(); ++i) source_.bytes[i] = static_cast<std::uint8_t>(i * 13 + (i >> 8));
    source_.keys = *engine_a_->reg_mr(a_.pd, source_.bytes.data(), source_.bytes.size(), kAccessLocalWrite,
                                      RegionBacking{77, 5, kFileId, kFileOffset});
    extents_.file_bytes = source_.bytes;
    target_.bytes.assign(kLength + 64, 0);
    target_.keys = *engine_b_->reg_mr(b_.pd, target_.bytes.data(), target_.bytes.size(),
                                      kAccessLocalWrite | kAccessRemoteWrite);
  }

  // Runs until a's CQ holds a_count completions and b's b_count.
  std::pair<std::vector<WorkCompletion>, std::vector<WorkCompletion>> completions(std::size_t a_count,
                                                                                 std::size_t b_count = 0) {
    return wait_for_completions(network_, a_, b_, a_count, b_count);
  }

  // A signaled SEND or WRITE of `length` bytes from source_ at `offset`; a
  // WRITE goes to target_ at `target_offset`.
  void post(std::uint64_t wr_id, WrOpcode opcode, std::size_t offset, std::uint32_t length,
            std::size_t target_offset, std::uint32_t imm_data = 0) {
    Sge sge = source_.sge(offset, length);
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.imm_data = imm_data;
    wr.rdma.remote_addr = target_.addr(target_offset);
    wr.rdma.rkey = target_.keys.rkey;
    ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  }
  // A WRITE from source_ at `offset` to target_ at the same offset.
  void post_write(std::uint64_t wr_id, std::size_t offset, std::uint32_t length) {
    post(wr_id, WrOpcode::rdma_write, offset, length, offset);
  }

  // Nothing of target_ written past the 64 bytes meet() wrote.
  bool target_untouched_past_meet() const {
    return std::all_of(target_.bytes.begin() + 64, target_.bytes.end(), [](std::uint8_t b) { return b == 0; });
  }

  // A READ of `length` bytes from b's region at `offset` into a's sink_.
  void post_read(std::uint64_t wr_id, const Buffer& region, std::size_t offset, std::uint32_t length) {
    Sge sge = sink_.sge(0, length);
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::rdma_read;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma.remote_addr = region.addr(offset);
    wr.rdma.rkey = region.keys.rkey;
    ASSERT_EQ(engine_a_->post_send(a_.qpn, wr), std::errc{});
  }

  // A region of b's that a READs: on a file (pid 78, fd 6), in its process's
  // memory (pid 79), or with no backing.
  enum class Served : std::uint8_t { plain, on_a_file, in_process_memory };
  Buffer served_region(Served how) {
    Buffer served;
    served.bytes.resize(kLength + 4096);
    for (std::size_t i = 0; i < served.bytes.size(); ++i) served.bytes[i] = static_cast<std::uint8_t>(i * 5 + 1);
    std::optional<RegionBacking> backing;
    if (how == Served::on_a_file) backing = RegionBacking{78, 6, kReadFileId, 0};
    if (how == Served::in_process_memory) backing = RegionBacking{79, -1, 0, served.addr()};
    served.keys = *engine_b_->reg_mr(b_.pd, served.bytes.data(), served.bytes.size(),
                                     kAccessLocalWrite | kAccessRemoteRead, backing);
    sink_.bytes.assign(kLength, 0);
    sink_.keys = *engine_a_->reg_mr(a_.pd, sink_.bytes.data(), sink_.bytes.size(), kAccessLocalWrite);
    return served;
  }

  // source_ registered again, backed by its process's memory (pid 79) instead of a file.
  void source_in_process_memory() {
    ASSERT_EQ(engine_a_->dereg_mr(source_.keys.lkey), std::errc{});
    source_.keys = *engine_a_->reg_mr(a_.pd, source_.bytes.data(), source_.bytes.size(), kAccessLocalWrite,
                                      RegionBacking{79, -1, 0, source_.addr()});
  }

  // A long WRITE whose named bytes the port may not read: REM_OP_ERR, and nothing written.
  void expect_unreadable_write_fails() {
    meet();
    extents_.unreadable = true;
    post_write(2, 0, kLength);
    auto done = completions(1).first;
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, WcStatus::rem_op_err);
    EXPECT_EQ(engine_b_->counters().extents_unreadable, 1u);
    EXPECT_TRUE(target_untouched_past_meet());
  }

  // A long READ of served at 300, answered by one response by reference, arrives intact.
  void expect_one_response_read(const Buffer& served) {
    std::uint64_t received_before = engine_a_->counters().packets_received;
    post_read(5, served, 300, kLength);
    auto done = completions(1).first;
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, WcStatus::success);
    EXPECT_EQ(done[0].opcode, WcOpcode::rdma_read);
    EXPECT_EQ(engine_a_->counters().packets_received - received_before, 1u);
    EXPECT_EQ(engine_b_->counters().extent_packets_sent, 1u);
    EXPECT_EQ(engine_a_->counters().extent_packets_received, 1u);
    EXPECT_EQ(std::memcmp(sink_.bytes.data(), served.bytes.data() + 300, kLength), 0);
  }

  // One small WRITE and its ACK: a learns that b is local.
  void meet() {
    post_write(1, 0, 64);
    auto done = completions(1).first;
    ASSERT_EQ(done.size(), 1u);
    ASSERT_EQ(done[0].status, WcStatus::success);
  }

  static constexpr std::uint32_t kLength = 64 * 1024 + 100;
  TestNetwork network_{11, ChannelFaults{}};
  BufferExtents extents_;
  Engine* engine_a_ = nullptr;
  Engine* engine_b_ = nullptr;
  Endpoint a_, b_;
  Buffer source_, target_, sink_;
};

TEST_F(ExtentPayloads, ALongWriteToALocalPeerIsOnePacketAndArrivesIntact) {
  meet();
  std::uint64_t sent_before = engine_a_->counters().packets_sent;
  post_write(2, 32, kLength);
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(engine_a_->counters().packets_sent - sent_before, 1u);  // 65 packets at MTU 1024 otherwise
  EXPECT_EQ(engine_a_->counters().extent_packets_sent, 1u);
  EXPECT_EQ(engine_b_->counters().extent_packets_received, 1u);
  EXPECT_EQ(std::memcmp(target_.bytes.data() + 32, source_.bytes.data() + 32, kLength), 0);
  EXPECT_EQ(target_.bytes[32 + kLength], 0);
}

TEST_F(ExtentPayloads, TheFirstWriteBeforeThePeerIsKnownLocalGoesPacketByPacket) {
  post_write(2, 0, kLength);
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(engine_a_->counters().extent_packets_sent, 0u);
  EXPECT_EQ(std::memcmp(target_.bytes.data(), source_.bytes.data(), kLength), 0);
}

TEST_F(ExtentPayloads, ALongSendWithImmediateFillsTheReceiveAndReportsItsLength) {
  meet();
  Sge recv_sge = target_.sge(0, kLength + 64);
  ASSERT_EQ(engine_b_->post_recv(b_.qpn, RecvWr{9, {&recv_sge, 1}}), std::errc{});
  post(3, WrOpcode::send_with_imm, 16, kLength, 0, 0x01020304);
  auto [at_a, at_b] = completions(1, 1);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].status, WcStatus::success);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].status, WcStatus::success);
  EXPECT_EQ(at_b[0].byte_len, kLength);
  EXPECT_EQ(at_b[0].imm_data, 0x01020304u);
  EXPECT_EQ(engine_b_->counters().extent_packets_received, 1u);
  EXPECT_EQ(std::memcmp(target_.bytes.data(), source_.bytes.data() + 16, kLength), 0);
}

TEST_F(ExtentPayloads, AReceiveTooShortForTheNamedBytesFailsBothEnds) {
  meet();
  Sge recv_sge = target_.sge(0, 4096);
  ASSERT_EQ(engine_b_->post_recv(b_.qpn, RecvWr{9, {&recv_sge, 1}}), std::errc{});
  post(3, WrOpcode::send, 0, kLength, 0);
  auto [at_a, at_b] = completions(1, 1);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].status, WcStatus::rem_inv_req_err);
  ASSERT_FALSE(at_b.empty());
  EXPECT_EQ(at_b[0].status, WcStatus::loc_len_err);
  EXPECT_TRUE(target_untouched_past_meet());
}

TEST_F(ExtentPayloads, AWriteBeyondTheTargetRegionIsARemoteAccessErrorAndWritesNothing) {
  meet();
  post(4, WrOpcode::rdma_write, 0, kLength, 128);  // 128 + kLength runs past the region's end
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::rem_access_err);
  EXPECT_EQ(engine_b_->counters().extent_packets_received, 1u);
  EXPECT_TRUE(target_untouched_past_meet());
}

TEST_F(ExtentPayloads, BytesThePortCannotReadAreARemoteOperationalError) { expect_unreadable_write_fails(); }

TEST_F(ExtentPayloads, AnExtentPacketFromAWireIsDroppedAndTheRequesterRunsOutOfRetries) {
  meet();
  network_.set_extent_source(nullptr);  // a still thinks b local: its next WRITE names bytes
  post_write(2, 0, kLength);
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::retry_exc_err);
  EXPECT_GE(engine_b_->counters().extents_from_wire, 1u);
  EXPECT_EQ(extents_.calls, 0);
  EXPECT_TRUE(target_untouched_past_meet());
}

TEST_F(ExtentPayloads, MessagesByReferenceInFlightAreCountedInMtusAgainstTheWindow) {
  meet();
  // ACKs held back: what is in flight stays in flight.
  network_.faults().drop = 1.0;
  network_.faults().applies_to = [](std::span<const std::uint8_t> d) { return d.size() < 60; };
  for (std::uint64_t i = 0; i < 10; ++i) post_write(10 + i, 0, kLength);
  network_.idle_until(network_.now() + 1'000'000);  // 1 ms, well inside the retransmit timeout
  // 65 MTUs of 1024 bytes each against a window of 256: three at a time.
  EXPECT_EQ(engine_a_->counters().extent_packets_sent, 3u);
  network_.faults().drop = 0;
  auto done = completions(10).first;
  ASSERT_EQ(done.size(), 10u);
  for (const WorkCompletion& wc : done) EXPECT_EQ(wc.status, WcStatus::success);
}

TEST_F(ExtentPayloads, ALostExtentPacketIsSentAgainAsOne) {
  meet();
  network_.faults().drop = 1.0;
  network_.faults().applies_to = [](std::span<const std::uint8_t> d) { return d.size() > 60 && d.size() < 120; };
  post_write(2, 0, kLength);
  network_.run_until([&] { return engine_a_->counters().extent_packets_sent >= 1; }, network_.now() + kSecond);
  network_.faults().drop = 0;
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(engine_a_->counters().extent_packets_sent, 2u);
  EXPECT_EQ(engine_b_->counters().extent_packets_received, 1u);
  EXPECT_EQ(std::memcmp(target_.bytes.data(), source_.bytes.data(), kLength), 0);
}

TEST_F(ExtentPayloads, ALongReadOfASharedRegionIsOneResponseAndTheQpGoesOn) {
  Buffer served = served_region(Served::on_a_file);
  extents_.read_file_bytes = served.bytes;
  meet();
  expect_one_response_read(served);
  // The READ's PSNs are all acknowledged: what follows completes.
  post_write(6, 0, kLength);
  post_read(7, served, 0, 100);
  auto done = completions(2).first;
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(done[1].status, WcStatus::success);
  EXPECT_EQ(std::memcmp(target_.bytes.data(), source_.bytes.data(), kLength), 0);
}

TEST_F(ExtentPayloads, AReadOfARegionThatIsNotSharedComesInPackets) {
  Buffer served = served_region(Served::plain);
  meet();
  post_read(5, served, 0, kLength);
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(engine_b_->counters().extent_packets_sent, 0u);
  EXPECT_EQ(std::memcmp(sink_.bytes.data(), served.bytes.data(), kLength), 0);
}

TEST_F(ExtentPayloads, AReadResponseNamingUnreadableBytesEndsTheRead) {
  Buffer served = served_region(Served::on_a_file);  // extents_ is not told where b's file is
  meet();
  post_read(5, served, 0, kLength);
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::rem_op_err);
  EXPECT_EQ(engine_a_->counters().extents_unreadable, 1u);
  EXPECT_TRUE(std::all_of(sink_.bytes.begin(), sink_.bytes.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST_F(ExtentPayloads, ALongWriteFromAPeersOwnMemoryIsCopiedStraightIntoTheTarget) {
  source_in_process_memory();
  meet();
  post_write(2, 40, kLength);
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(engine_b_->counters().extent_packets_received, 1u);
  EXPECT_EQ(extents_.calls, 0);           // no file
  EXPECT_EQ(extents_.process_copies, 1);  // one copy of the whole message
  EXPECT_EQ(std::memcmp(target_.bytes.data() + 40, source_.bytes.data() + 40, kLength), 0);
  EXPECT_EQ(target_.bytes[40 + kLength], 0);
}

TEST_F(ExtentPayloads, ALongSendFromAPeersOwnMemoryFillsAReceiveOfSeveralElements) {
  source_in_process_memory();
  meet();
  // Three elements: the message lands in pieces of 1000, 30000 and the rest.
  Sge recv_sges[3] = {target_.sge(0, 1000), target_.sge(1064, 30000), target_.sge(31064, kLength - 31000)};
  ASSERT_EQ(engine_b_->post_recv(b_.qpn, RecvWr{9, {recv_sges, 3}}), std::errc{});
  post(3, WrOpcode::send, 8, kLength, 0);
  auto [at_a, at_b] = completions(1, 1);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].status, WcStatus::success);
  EXPECT_EQ(at_b[0].byte_len, kLength);
  const std::uint8_t* sent = source_.bytes.data() + 8;
  EXPECT_EQ(std::memcmp(target_.bytes.data(), sent, 1000), 0);
  EXPECT_EQ(std::memcmp(target_.bytes.data() + 1064, sent + 1000, 30000), 0);
  EXPECT_EQ(std::memcmp(target_.bytes.data() + 31064, sent + 31000, kLength - 31000), 0);
  EXPECT_EQ(target_.bytes[1030], 0);  // between the elements
}

TEST_F(ExtentPayloads, APeerWhoseMemoryMayNotBeReadGetsARemoteOperationalError) {
  source_in_process_memory();
  expect_unreadable_write_fails();
}

TEST_F(ExtentPayloads, BytesAPeerUnmappedWhilePlacedReadAsZeros) {
  source_in_process_memory();
  meet();
  extents_.readable_process_bytes = 5000;  // the rest of each copy faults
  post_write(2, 0, kLength);
  auto done = completions(1).first;
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);  // a NIC reading freed pages sends what they hold
  EXPECT_EQ(engine_b_->counters().extents_unreadable, 1u);
  EXPECT_EQ(std::memcmp(target_.bytes.data(), source_.bytes.data(), 5000), 0);
  EXPECT_TRUE(std::all_of(target_.bytes.begin() + 5000, target_.bytes.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST_F(ExtentPayloads, ALongReadOfARegionInItsProcesssMemoryIsOneResponse) {
  Buffer served = served_region(Served::in_process_memory);
  meet();
  expect_one_response_read(served);
}

}  // namespace
}  // namespace uroce::testing
