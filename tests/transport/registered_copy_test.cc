// Registered memory that the program unmaps before deregistering it: the
// engine's copies leave out the pages that fault, as a NIC's DMA would land
// in pages the program no longer sees, and the process lives on. Faults that
// are not the engine's still reach the handler installed before uroce's.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "tests/support/test_network.h"
#include "transport/registered_copy.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kQkey = 0x22222222;
constexpr TimeNs kSecond = 1'000'000'000;

// Pages of the program's own, mapped readable and writable.
struct Pages {
  explicit Pages(std::size_t count)
      : size(count * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))),
        bytes(static_cast<std::uint8_t*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {}
  ~Pages() { ::munmap(bytes, size); }  // a page already unmapped is no error
  std::size_t page() const { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
  void unmap(std::size_t index) { ASSERT_EQ(::munmap(bytes + index * page(), page()), 0); }
  std::size_t size;
  std::uint8_t* bytes;
};

TEST(RegisteredCopy, AnUnmappedDestinationPageIsLeftOutAndTheOthersAreWritten) {
  transport::guard_registered_copies();
  Pages to(3);
  std::vector<std::uint8_t> from(to.size);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<std::uint8_t>(i * 13 + 1);
  to.unmap(1);
  std::uint64_t faults = transport::registered_copy_faults();
  transport::copy_registered(to.bytes, from.data(), to.size);
  EXPECT_GT(transport::registered_copy_faults(), faults);
  EXPECT_EQ(std::memcmp(to.bytes, from.data(), to.page()), 0);
  EXPECT_EQ(std::memcmp(to.bytes + 2 * to.page(), from.data() + 2 * to.page(), to.page()), 0);
}

TEST(RegisteredCopy, AnUnmappedSourcePageReadsAsZeros) {
  transport::guard_registered_copies();
  Pages from(3);
  std::memset(from.bytes, 0x5A, from.size);
  from.unmap(1);
  std::vector<std::uint8_t> to(from.size, 0xFF);
  // Offset by 100 bytes, so that no piece lines up with a page of both sides.
  transport::copy_registered(to.data(), from.bytes + 100, from.size - 100);
  for (std::size_t i = 0; i < from.size - 100; ++i) {
    std::uint8_t expected = (i + 100) / from.page() == 1 ? 0 : 0x5A;
    ASSERT_EQ(to[i], expected) << "at " << i;
  }
  EXPECT_EQ(to[from.size - 100], 0xFF);  // nothing past the copy
}

TEST(RegisteredCopy, AStoreToAnUnmappedPageIsDropped) {
  transport::guard_registered_copies();
  Pages pages(1);
  pages.unmap(0);
  transport::store_registered(reinterpret_cast<std::uint64_t*>(pages.bytes), 7);
  Pages mapped(1);
  transport::store_registered(reinterpret_cast<std::uint64_t*>(mapped.bytes), 7);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(mapped.bytes), 7u);
}

void exit_42(int) { ::_exit(42); }

// In a process of its own (the death test runs the binary again), so that
// the handler before uroce's is the test's.
TEST(RegisteredCopyDeathTest, AFaultOutsideACopyGoesToTheHandlerInstalledBefore) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        struct sigaction before {};
        before.sa_handler = exit_42;
        sigemptyset(&before.sa_mask);
        sigaction(SIGSEGV, &before, nullptr);
        transport::guard_registered_copies();
        Pages pages(1);
        pages.unmap(0);
        transport::copy_registered(pages.bytes, "x", 1);  // guarded: no exit
        *reinterpret_cast<volatile std::uint8_t*>(pages.bytes) = 1;
      },
      ::testing::ExitedWithCode(42), "");
}

// UCX's UD transport at teardown: it frees the receive buffers still posted
// to its QP, then destroys the QP. A datagram arriving between the two
// completes its receive, and the bytes go nowhere.
TEST(RegisteredCopy, ADatagramIntoAReceiveBufferTheProgramUnmappedCompletes) {
  transport::guard_registered_copies();
  TestNetwork network{11, ChannelFaults{}};
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  Endpoint sender = make_ud_qp(a, kQkey);
  Endpoint receiver = make_ud_qp(b, kQkey);
  std::vector<std::uint8_t> source(1000, 0x33);
  MrKeys source_keys = *a.reg_mr(sender.pd, source.data(), source.size(), kAccessLocalWrite);
  Pages buffer(1);
  MrKeys buffer_keys = *b.reg_mr(receiver.pd, buffer.bytes, buffer.size, kAccessLocalWrite);
  Sge receive_sge{reinterpret_cast<std::uintptr_t>(buffer.bytes), static_cast<std::uint32_t>(buffer.size),
                  buffer_keys.lkey};
  ASSERT_EQ(b.post_recv(receiver.qpn, RecvWr{5, {&receive_sge, 1}}), std::errc{});
  buffer.unmap(0);

  AddressVector av;
  av.dgid = b.gid();
  std::uint32_t ah = *a.create_ah(sender.pd, av);
  Sge send_sge{reinterpret_cast<std::uintptr_t>(source.data()), 1000, source_keys.lkey};
  SendWr wr;
  wr.wr_id = 6;
  wr.opcode = WrOpcode::send;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&send_sge, 1};
  wr.ud = {ah, receiver.qpn, kQkey};
  ASSERT_EQ(a.post_send(sender.qpn, wr), std::errc{});
  std::uint64_t faults = transport::registered_copy_faults();
  network.run_until([] { return false; }, network.now() + kSecond);

  auto received = drain(receiver);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].status, WcStatus::success);
  EXPECT_EQ(received[0].byte_len, kGrhLength + 1000);
  EXPECT_GT(transport::registered_copy_faults(), faults);
}

// A READ of a region whose pages the responder's program unmapped: the
// requester gets zeros for them, as a NIC would read pinned pages that
// nobody writes any more, and both sides go on.
TEST(RegisteredCopy, AReadOfUnmappedPagesBringsZeros) {
  transport::guard_registered_copies();
  TestNetwork network{12, ChannelFaults{}};
  Engine& a = network.add_engine();
  Engine& b = network.add_engine();
  auto [requester, responder] = connect_rc(a, b);
  Pages remote(2);
  std::memset(remote.bytes, 0x77, remote.size);
  MrKeys remote_keys = *b.reg_mr(responder.pd, remote.bytes, remote.size, kAccessRemoteRead | kAccessLocalWrite);
  remote.unmap(0);
  std::vector<std::uint8_t> local(remote.size, 0xEE);
  MrKeys local_keys = *a.reg_mr(requester.pd, local.data(), local.size(), kAccessLocalWrite);
  Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), static_cast<std::uint32_t>(local.size()), local_keys.lkey};
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = WrOpcode::rdma_read;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(remote.bytes);
  wr.rdma.rkey = remote_keys.rkey;
  ASSERT_EQ(a.post_send(requester.qpn, wr), std::errc{});
  auto [at_a, at_b] = wait_for_completions(network, requester, responder, 1, 0);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].status, WcStatus::success);
  for (std::size_t i = 0; i < local.size(); ++i) {
    ASSERT_EQ(local[i], i < remote.page() ? 0 : 0x77) << "at " << i;
  }
}

}  // namespace
}  // namespace uroce::testing
