// Devices on a real network: two soft RNICs in one process, each on its own
// loopback address with a UDP port and a progress thread, exchange WRITE,
// READ, SEND and atomics through the kernel, and again through the
// intra-host path (DevicePaths: the same tests on both); and the UDP port's
// ICRC policy for arrivals whose IPv4 Identification it cannot see.
// Each test runs in a network namespace of its own (tests/support/isolated.sh).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "port/port.h"
#include "tests/support/device_completions.h"
#include "tests/support/test_network.h"
#include "uroce/device.h"
#include "wire/frame.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

std::unique_ptr<Device> open_device(const std::string& address, UdpIcrcPolicy icrc = UdpIcrcPolicy::verify_assuming_id0,
                                    bool local_path = false) {
  DeviceConfig config;
  config.address = address;
  config.icrc = icrc;
  config.local_path = local_path;
  auto device = Device::open(config);
  if (!device) ADD_FAILURE() << device.error();
  return device ? std::move(*device) : nullptr;
}

// The parameter: whether the devices take the intra-host path.
class DevicePaths : public ::testing::TestWithParam<bool> {
 protected:
  bool on_local_path() const { return GetParam(); }
  std::string address(int host) const { return (on_local_path() ? "127.0.11." : "127.0.1.") + std::to_string(host); }
  std::unique_ptr<Device> open(int host) const {
    return open_device(address(host), UdpIcrcPolicy::verify_assuming_id0, on_local_path());
  }
  // Every datagram took the path under test.
  void expect_path_taken(Device& device) const {
    port::PortCounters port = device.port_counters();
    EngineCounters engine = device.counters();
    if (on_local_path()) {
      EXPECT_EQ(port.local_receives, engine.packets_received);
    } else {
      EXPECT_EQ(port.local_receives, 0u);
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Paths, DevicePaths, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) { return param.param ? "Local" : "Wire"; });

TEST_P(DevicePaths, RcOperationsBetweenTwoDevices) {
  auto a = open(2);
  auto b = open(3);
  ASSERT_TRUE(a && b);
  RcOptions options;
  options.mtu = PathMtu::mtu1024;
  Endpoint x, y;  // not a structured binding: the lambdas below capture them
  std::tie(x, y) = a->call_and_wake([&](Engine& ea) { return b->call_and_wake([&](Engine& eb) { return connect_rc(ea, eb, options); }); });

  std::vector<std::uint8_t> local(1 << 20), remote(1 << 20, 0), inbox(8192, 0);
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = static_cast<std::uint8_t>(i * 13 + 5);
  std::uint64_t counter = 40;
  MrKeys local_keys = a->call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, local.data(), local.size(), kAll); });
  MrKeys remote_keys = b->call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, remote.data(), remote.size(), kAll); });
  MrKeys inbox_keys = b->call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, inbox.data(), inbox.size(), kAll); });
  MrKeys counter_keys = b->call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, &counter, 8, kAll); });
  Sge recv{reinterpret_cast<std::uintptr_t>(inbox.data()), 8192, inbox_keys.lkey};
  ASSERT_EQ(b->call_and_wake([&](Engine& e) { return e.post_recv(y.qpn, RecvWr{9, {&recv, 1}}); }), std::errc{});

  // WRITE 512 KiB, READ it back elsewhere, SEND 5000 bytes, FETCH_ADD.
  Sge write_sge{reinterpret_cast<std::uintptr_t>(local.data()), 512 << 10, local_keys.lkey};
  Sge read_sge{reinterpret_cast<std::uintptr_t>(local.data()) + (512 << 10), 512 << 10, local_keys.lkey};
  Sge send_sge{reinterpret_cast<std::uintptr_t>(local.data()) + 100, 5000, local_keys.lkey};
  std::uint64_t fetched = 0;
  MrKeys fetched_keys = a->call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, &fetched, 8, kAll); });
  Sge atomic_sge{reinterpret_cast<std::uintptr_t>(&fetched), 8, fetched_keys.lkey};
  std::vector<SendWr> wrs(4);
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    wrs[i].wr_id = i + 1;
    wrs[i].send_flags = kSendSignaled;
  }
  wrs[0].opcode = WrOpcode::rdma_write;
  wrs[0].sg_list = {&write_sge, 1};
  wrs[0].rdma = {reinterpret_cast<std::uintptr_t>(remote.data()), remote_keys.rkey};
  wrs[1].opcode = WrOpcode::rdma_read;
  wrs[1].sg_list = {&read_sge, 1};
  wrs[1].rdma = wrs[0].rdma;
  wrs[2].opcode = WrOpcode::send;
  wrs[2].sg_list = {&send_sge, 1};
  wrs[3].opcode = WrOpcode::atomic_fetch_and_add;
  wrs[3].sg_list = {&atomic_sge, 1};
  wrs[3].atomic = {reinterpret_cast<std::uintptr_t>(&counter), 2, 0, counter_keys.rkey};
  for (const SendWr& wr : wrs) ASSERT_EQ(a->call_and_wake([&](Engine& e) { return e.post_send(x.qpn, wr); }), std::errc{});

  auto done = wait_for(*a, x, 4);
  ASSERT_EQ(done.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(done[i].wr_id, i + 1);
    EXPECT_EQ(done[i].status, WcStatus::success) << to_string(done[i].status);
  }
  auto received = wait_for(*b, y, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].byte_len, 5000u);
  EXPECT_EQ(0, std::memcmp(remote.data(), local.data(), 512 << 10));
  EXPECT_EQ(0, std::memcmp(local.data() + (512 << 10), local.data(), 512 << 10));
  EXPECT_EQ(0, std::memcmp(inbox.data(), local.data() + 100, 5000));
  EXPECT_EQ(fetched, 40u);
  EXPECT_EQ(counter, 42u);
  EXPECT_EQ(b->counters().icrc_errors, 0u);  // the kernel sent Identification 0, as the ICRC assumed
  EXPECT_GT(b->counters().packets_received, 512u);
  expect_path_taken(*a);
  expect_path_taken(*b);
}

// The peer's device goes away in the middle of a stream of WRITEs (half
// posted before, half after): the survivor's work requests all complete
// (the first unacknowledged one with RETRY_EXC_ERR after the retry budget,
// the rest flushed), nothing hangs, and the device goes on to serve a new
// connection to another peer.
TEST_P(DevicePaths, PeerThatVanishesFailsWorkRequestsAndTheDeviceStaysUsable) {
  // Declared before the devices, so that they go after them: a device may
  // still write into its registered memory until it is closed.
  std::vector<std::uint8_t> local(64 << 10, 7), remote(64 << 10, 0), target(64 << 10, 0);
  auto a = open(9);
  auto b = open(10);
  ASSERT_TRUE(a && b);
  RcOptions options;
  options.timeout = 10;  // 4.096 us * 2^10: about 4 ms per try
  options.retry_cnt = 3;
  Endpoint x, y;
  std::tie(x, y) = a->call_and_wake([&](Engine& ea) { return b->call_and_wake([&](Engine& eb) { return connect_rc(ea, eb, options); }); });
  MrKeys local_keys = a->call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, local.data(), local.size(), kAll); });
  MrKeys remote_keys = b->call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, remote.data(), remote.size(), kAll); });
  Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), 64 << 10, local_keys.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {reinterpret_cast<std::uintptr_t>(remote.data()), remote_keys.rkey};
  constexpr std::size_t kWrites = 200;
  auto post = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      wr.wr_id = i;
      ASSERT_EQ(a->call_and_wake([&](Engine& e) { return e.post_send(x.qpn, wr); }), std::errc{});
    }
  };
  post(0, kWrites / 2);
  auto first = wait_for(*a, x, 1);  // the transfer is under way
  ASSERT_GE(first.size(), 1u);
  for (const WorkCompletion& wc : first) EXPECT_EQ(wc.status, WcStatus::success);
  b.reset();  // the peer vanishes: its socket is closed, nothing answers any more
  post(kWrites / 2, kWrites);

  auto rest = wait_for(*a, x, kWrites - first.size());
  ASSERT_EQ(rest.size(), kWrites - first.size());  // every work request completed, none hangs
  // In order: WRITEs the peer still acknowledged, the first it did not
  // (RETRY_EXC_ERR), then every one behind it flushed; how many of each
  // depends on how far the transfer got before the peer went.
  std::size_t at = 0;
  while (at < rest.size() && rest[at].status == WcStatus::success) ++at;
  ASSERT_LT(at, rest.size());
  EXPECT_EQ(rest[at].status, WcStatus::retry_exc_err);
  for (++at; at < rest.size(); ++at) EXPECT_EQ(rest[at].status, WcStatus::wr_flush_err) << "completion " << at;
  EXPECT_EQ(a->call_and_wake([&](Engine& e) { return e.query_qp(x.qpn)->qp_state; }), QpState::err);

  // The same device connects to a new peer and WRITEs again.
  auto c = open(11);
  ASSERT_TRUE(c);
  Endpoint x2, z;
  std::tie(x2, z) = a->call_and_wake([&](Engine& ea) { return c->call_and_wake([&](Engine& ec) { return connect_rc(ea, ec, options); }); });
  MrKeys local2 = a->call_and_wake([&](Engine& e) { return *e.reg_mr(x2.pd, local.data(), local.size(), kAll); });
  MrKeys target_keys = c->call_and_wake([&](Engine& e) { return *e.reg_mr(z.pd, target.data(), target.size(), kAll); });
  sge.lkey = local2.lkey;
  wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data()), target_keys.rkey};
  ASSERT_EQ(a->call_and_wake([&](Engine& e) { return e.post_send(x2.qpn, wr); }), std::errc{});
  auto done = wait_for(*a, x2, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(target, local);
  if (on_local_path()) {
    EXPECT_GT(a->port_counters().local_sends, 0u);
  }
}

// An event-driven receiver: it arms its CQ for solicited completions and
// sleeps in poll() on the completion channel; the progress thread receives
// the SEND and the fd wakes it, once.
TEST_P(DevicePaths, CompletionChannelWakesASleepingApplication) {
  auto a = open(12);
  auto b = open(13);
  ASSERT_TRUE(a && b);
  Endpoint x, y;
  std::tie(x, y) = a->call_and_wake([&](Engine& ea) { return b->call_and_wake([&](Engine& eb) { return connect_rc(ea, eb); }); });
  std::vector<std::uint8_t> local(3000, 9), inbox(4096, 0);
  MrKeys local_keys = a->call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, local.data(), local.size(), kAll); });
  MrKeys inbox_keys = b->call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, inbox.data(), inbox.size(), kAll); });
  Sge recv{reinterpret_cast<std::uintptr_t>(inbox.data()), 4096, inbox_keys.lkey};
  ASSERT_EQ(b->call_and_wake([&](Engine& e) { return e.post_recv(y.qpn, RecvWr{5, {&recv, 1}}); }), std::errc{});
  ASSERT_EQ(b->call_and_wake([&](Engine& e) { return e.req_notify_cq(y.cq, true); }), std::errc{});
  pollfd channel{b->completion_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&channel, 1, 0), 0);  // nothing yet

  Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), 3000, local_keys.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::send;
  wr.send_flags = kSendSolicited;
  wr.sg_list = {&sge, 1};
  ASSERT_EQ(a->call_and_wake([&](Engine& e) { return e.post_send(x.qpn, wr); }), std::errc{});
  ASSERT_EQ(::poll(&channel, 1, 10'000), 1);  // woken by the arrival, not by polling
  EXPECT_EQ(b->get_cq_event(), std::optional<std::uint32_t>(y.cq));
  auto received = b->call_and_wake([&](Engine&) { return drain(y); });
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].byte_len, 3000u);
  EXPECT_EQ(0, std::memcmp(inbox.data(), local.data(), 3000));
  EXPECT_EQ(b->get_cq_event(), std::nullopt);
  EXPECT_EQ(::poll(&channel, 1, 0), 0);  // taken: quiet until the CQ is armed and completes again
  expect_path_taken(*b);
}

TEST(UdpDevice, AddressInUseOrInvalidIsAClearError) {
  auto a = open_device("127.0.1.4");
  ASSERT_TRUE(a);
  DeviceConfig config;
  config.address = "127.0.1.4";
  auto again = Device::open(config);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find("127.0.1.4"), std::string::npos) << again.error();
  config.address = "not-an-address";
  auto bad = Device::open(config);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("not-an-address"), std::string::npos) << bad.error();
}

// Sends, from a plain UDP socket, a RoCEv2 packet whose ICRC was computed over
// an IPv4 header with Identification 0x1234, as Linux Soft-RoCE computes it.
void send_packet_with_icrc_over_id(const char* to, const char* from) {
  wire::RoceDatagramSpec spec;
  wire::Ipv4Repr ip;
  ip.identification = 0x1234;
  ::inet_pton(AF_INET, from, ip.src.data());
  ::inet_pton(AF_INET, to, ip.dst.data());
  spec.ip = ip;
  spec.udp.src_port = 0xC123;
  spec.headers.bth.opcode = wire::opcode::kRcAcknowledge;
  spec.headers.bth.dest_qp = 0x42;
  spec.headers.aeth = wire::AethRepr{0, 0};
  std::vector<std::uint8_t> datagram(256);
  auto layout = wire::begin_roce_datagram(spec, 0, datagram);
  ASSERT_TRUE(layout);
  wire::seal_roce_datagram(datagram, *layout);
  std::size_t offset = wire::kIpv4HeaderLength + wire::kUdpHeaderLength;

  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in source{}, destination{};
  source.sin_family = destination.sin_family = AF_INET;
  source.sin_port = htons(0xC123);
  destination.sin_port = htons(4791);
  ::inet_pton(AF_INET, from, &source.sin_addr);
  ::inet_pton(AF_INET, to, &destination.sin_addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source), 0);
  ASSERT_GT(::sendto(fd, datagram.data() + offset, layout->length - offset, 0,
                     reinterpret_cast<sockaddr*>(&destination), sizeof destination),
            0);
  ::close(fd);
}

EngineCounters counters_after_arrival(Device& device) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (device.counters().packets_received == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return device.counters();
}

TEST(UdpDevice, IcrcPolicyForIdentificationsTheSocketCannotSee) {
  auto strict = open_device("127.0.1.5");
  ASSERT_TRUE(strict);
  send_packet_with_icrc_over_id("127.0.1.5", "127.0.1.6");
  EngineCounters counters = counters_after_arrival(*strict);
  EXPECT_EQ(counters.packets_received, 1u);
  EXPECT_EQ(counters.icrc_errors, 1u);  // rebuilt with Identification 0: the ICRC does not match
  EXPECT_EQ(counters.icrc_unchecked, 0u);

  auto lenient = open_device("127.0.1.7", UdpIcrcPolicy::skip_ipv4);
  ASSERT_TRUE(lenient);
  send_packet_with_icrc_over_id("127.0.1.7", "127.0.1.8");
  counters = counters_after_arrival(*lenient);
  EXPECT_EQ(counters.icrc_errors, 0u);
  EXPECT_EQ(counters.icrc_unchecked, 1u);
  EXPECT_EQ(counters.unknown_qp_packets, 1u);  // accepted, then found no QP 0x42
}

}  // namespace
}  // namespace uroce::testing
