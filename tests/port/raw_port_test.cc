// The raw Ethernet port inside two network namespaces joined by a veth pair
// (made and removed by each test): devices find each other by ARP (through
// the kernel, or answering themselves for an address the kernel does not
// hold) and run RC operations; an injected frame whose ICRC covers a non-zero
// IPv4 Identification (as Linux Soft-RoCE sends) is verified and delivered,
// one with a wrong ICRC is dropped and counted; bad configurations are clear
// errors. Needs root and iproute2; skipped without them.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <cstring>
#include <memory>
#include <thread>

#include "port/interface_info.h"
#include "port/port.h"
#include "port/raw_port.h"
#include "tests/support/device_completions.h"
#include "tests/support/peak_rss.h"
#include "tests/support/sanitized_build.h"
#include "tests/support/test_network.h"
#include "tests/support/veth_pair.h"
#include "uroce/device.h"
#include "wire/arp.h"
#include "wire/frame.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

class RawPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = VethPair::unavailable()) GTEST_SKIP() << *reason;
    pair_ = std::make_unique<VethPair>("10.79.3");
    ASSERT_EQ(pair_->error(), "");
  }

  // A device on a raw port, opened inside side's namespace.
  static std::unique_ptr<Device> open_raw(const VethPair::Side& side, const std::string& address) {
    return in_namespace(side.ns, [&]() -> std::unique_ptr<Device> {
      DeviceConfig config;
      config.interface = side.interface;
      config.address = address;
      auto device = Device::open(config);
      if (!device) ADD_FAILURE() << device.error();
      return device ? std::move(*device) : nullptr;
    });
  }

  // A raw socket bound to the client's end of the veth, which sends whole
  // frames to the server's end; -1 if it cannot be made.
  int open_injector() const {
    return in_namespace(pair_->client().ns, [&] {
      auto client_if = port::find_interface(pair_->client().interface);
      int fd = client_if ? ::socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)) : -1;
      if (fd < 0) return -1;
      sockaddr_ll link{};
      link.sll_family = AF_PACKET;
      link.sll_ifindex = client_if->index;
      if (::bind(fd, reinterpret_cast<sockaddr*>(&link), sizeof link) != 0) {
        ::close(fd);
        return -1;
      }
      return fd;
    });
  }

  std::unique_ptr<VethPair> pair_;
};

// WRITEs 256 KiB and READs it back between two devices, and checks that both
// completed and the bytes match.
void write_and_read_back(Device& a, Device& b, const RcOptions& options = {}) {
  Endpoint x, y;  // not a structured binding: the lambdas below capture them
  std::tie(x, y) =
      a.call_and_wake([&](Engine& ea) { return b.call_and_wake([&](Engine& eb) { return connect_rc(ea, eb, options); }); });
  std::vector<std::uint8_t> local(512 << 10), remote(256 << 10, 0);
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = static_cast<std::uint8_t>(i * 7 + 3);
  MrKeys local_keys = a.call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, local.data(), local.size(), kAll); });
  MrKeys remote_keys = b.call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, remote.data(), remote.size(), kAll); });
  Sge write_sge{reinterpret_cast<std::uintptr_t>(local.data()), 256 << 10, local_keys.lkey};
  Sge read_sge{reinterpret_cast<std::uintptr_t>(local.data()) + (256 << 10), 256 << 10, local_keys.lkey};
  SendWr write;
  write.wr_id = 1;
  write.opcode = WrOpcode::rdma_write;
  write.send_flags = kSendSignaled;
  write.sg_list = {&write_sge, 1};
  write.rdma = {reinterpret_cast<std::uintptr_t>(remote.data()), remote_keys.rkey};
  SendWr read = write;
  read.wr_id = 2;
  read.opcode = WrOpcode::rdma_read;
  read.sg_list = {&read_sge, 1};
  ASSERT_EQ(a.call_and_wake([&](Engine& e) { return e.post_send(x.qpn, write); }), std::errc{});
  ASSERT_EQ(a.call_and_wake([&](Engine& e) { return e.post_send(x.qpn, read); }), std::errc{});
  auto done = wait_for(a, x, 2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].status, WcStatus::success) << to_string(done[0].status);
  EXPECT_EQ(done[1].status, WcStatus::success) << to_string(done[1].status);
  EXPECT_EQ(0, std::memcmp(remote.data(), local.data(), 256 << 10));
  EXPECT_EQ(0, std::memcmp(local.data() + (256 << 10), local.data(), 256 << 10));
  // The buffers die with this function: nothing may serve a late duplicate
  // (a retransmitted READ request) from them afterwards.
  a.call_and_wake([&](Engine& e) {
    e.destroy_qp(x.qpn);
    return e.dereg_mr(local_keys.lkey);
  });
  b.call_and_wake([&](Engine& e) {
    e.destroy_qp(y.qpn);
    return e.dereg_mr(remote_keys.lkey);
  });
}

TEST_F(RawPortTest, DevicesResolveEachOtherAndMoveData) {
  auto a = open_raw(pair_->client(), pair_->client().address);
  auto b = open_raw(pair_->server(), "");  // the interface's own address
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->gid(), gid_from_ipv4({10, 79, 3, 1}));
  write_and_read_back(*a, *b);
  EXPECT_GE(a->port_counters().arp_requests, 1u);  // a had to find b's MAC address
  EXPECT_EQ(a->port_counters().unresolved_drops, 0u);
  EXPECT_EQ(a->counters().icrc_errors + b->counters().icrc_errors, 0u);
  EXPECT_EQ(a->counters().retransmitted_packets, 0u);  // the first packets waited for ARP, none were lost
  EXPECT_EQ(a->max_path_mtu(), PathMtu::mtu1024);      // veth MTU 1500
}

// Addresses the kernel does not hold: the ports answer ARP for them.
TEST_F(RawPortTest, PortAnswersArpForAnAddressTheKernelDoesNotHold) {
  auto a = open_raw(pair_->client(), "10.79.3.21");
  auto b = open_raw(pair_->server(), "10.79.3.22");
  ASSERT_TRUE(a && b);
  write_and_read_back(*a, *b);
  EXPECT_GE(a->port_counters().arp_requests, 1u);
}

TEST_F(RawPortTest, ConfigurationErrorsAreClear) {
  in_namespace(pair_->server().ns, [&] {
    auto missing = port::RawPort::open("no-such-if0", "");
    EXPECT_FALSE(missing);
    if (!missing) {
      EXPECT_NE(missing.error().find("no-such-if0"), std::string::npos) << missing.error();
    }
    auto ipv6 = port::RawPort::open(pair_->server().interface, "fd00::1");
    EXPECT_FALSE(ipv6);
    if (!ipv6) {
      EXPECT_NE(ipv6.error().find("IPv4 only"), std::string::npos) << ipv6.error();
    }
    auto first = port::RawPort::open(pair_->server().interface, pair_->server().address);
    EXPECT_TRUE(first);
    auto second = port::RawPort::open(pair_->server().interface, pair_->server().address);
    EXPECT_FALSE(second);  // the UDP port on that address is taken
    if (!second) {
      EXPECT_NE(second.error().find("4791"), std::string::npos) << second.error();
    }
    return 0;
  });
}

// Builds a UD SEND frame from the client side's address to the server's,
// with the IPv4 Identification the kernel's Soft-RoCE would use.
std::vector<std::uint8_t> ud_send_frame(const VethPair& pair, const wire::MacAddress& to_mac,
                                        const wire::MacAddress& from_mac, std::uint32_t qpn, ByteSpan payload) {
  wire::RoceFrameSpec spec;
  spec.ethernet.dst = to_mac;
  spec.ethernet.src = from_mac;
  wire::Ipv4Repr ip;
  ip.identification = 0x5a17;
  ip.dont_fragment = true;
  ::inet_pton(AF_INET, pair.client().address.c_str(), ip.src.data());
  ::inet_pton(AF_INET, pair.server().address.c_str(), ip.dst.data());
  spec.ip = ip;
  spec.udp.src_port = 0xC321;
  spec.headers.bth.opcode = wire::opcode::kUdSendOnly;
  spec.headers.bth.dest_qp = qpn;
  spec.headers.bth.psn = 5;
  spec.headers.deth = wire::DethRepr{0x1111, 0x99};
  spec.payload = payload;
  std::vector<std::uint8_t> frame(2048);
  auto length = wire::emit_roce_frame(spec, frame);
  if (!length) throw std::runtime_error("emit_roce_frame failed");
  frame.resize(*length);
  return frame;
}

TEST_F(RawPortTest, VerifiesIcrcOverTheRealIdentificationAndDropsBadOnes) {
  auto device = open_raw(pair_->server(), pair_->server().address);
  ASSERT_TRUE(device);
  std::vector<std::uint8_t> inbox(4096, 0);
  Endpoint ud;
  MrKeys keys;
  device->call_and_wake([&](Engine& e) {
    ud = make_ud_qp(e, 0x1111);
    keys = *e.reg_mr(ud.pd, inbox.data(), inbox.size(), kAll);
    Sge sge{reinterpret_cast<std::uintptr_t>(inbox.data()), static_cast<std::uint32_t>(inbox.size()), keys.lkey};
    return e.post_recv(ud.qpn, RecvWr{7, {&sge, 1}});
  });

  // An injector on the other end of the veth sends whole frames.
  auto server_if = in_namespace(pair_->server().ns, [&] { return port::find_interface(pair_->server().interface); });
  ASSERT_TRUE(server_if);
  int injector = open_injector();
  ASSERT_GE(injector, 0);
  auto client_if = in_namespace(pair_->client().ns, [&] { return port::find_interface(pair_->client().interface); });
  ASSERT_TRUE(client_if);

  std::vector<std::uint8_t> payload(300);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i ^ 0x5a);
  std::vector<std::uint8_t> good = ud_send_frame(*pair_, server_if->mac, client_if->mac, ud.qpn, payload);
  std::vector<std::uint8_t> bad = good;
  bad.back() ^= 0x01;  // the last ICRC byte
  ASSERT_EQ(::send(injector, bad.data(), bad.size(), 0), static_cast<ssize_t>(bad.size()));
  ASSERT_EQ(::send(injector, good.data(), good.size(), 0), static_cast<ssize_t>(good.size()));
  ::close(injector);

  auto received = wait_for(*device, ud, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].status, WcStatus::success);
  EXPECT_EQ(received[0].byte_len, 40u + payload.size());  // GRH area, then the payload
  EXPECT_EQ(0, std::memcmp(inbox.data() + 40, payload.data(), payload.size()));
  EngineCounters counters = device->counters();
  EXPECT_EQ(counters.icrc_errors, 1u);  // the corrupted copy
  EXPECT_EQ(counters.icrc_unchecked, 0u);
  EXPECT_EQ(device->call_and_wake([&](Engine&) { return drain(ud); }).size(), 0u);  // nothing more landed
}

// An ARP request "who has target? tell sender_ip at sender_mac", broadcast.
std::vector<std::uint8_t> arp_request(const wire::MacAddress& sender_mac, std::array<std::uint8_t, 4> sender_ip,
                                      std::array<std::uint8_t, 4> target_ip) {
  std::vector<std::uint8_t> frame(60, 0);  // the Ethernet minimum, padded
  std::fill_n(frame.begin(), 6, 0xFF);
  std::copy(sender_mac.begin(), sender_mac.end(), frame.begin() + 6);
  frame[12] = wire::kEthertypeArp >> 8;
  frame[13] = wire::kEthertypeArp & 0xFF;
  wire::ArpRepr arp;
  arp.operation = wire::ArpOperation::request;
  arp.sender_mac = sender_mac;
  arp.sender_ip = sender_ip;
  arp.target_ip = target_ip;
  arp.emit(MutableByteSpan(frame.data() + 14, wire::kArpLength));
  return frame;
}

// ARP requests for the port's address from made-up senders, as fast as one
// thread can send them for 5 s, while WRITE + READ round trips run between
// two raw-port devices: the transfers complete and the process's peak RSS
// grows by less than 16 MiB (the port learns unsolicited senders
// only while its neighbour table is small).
TEST_F(RawPortTest, ArpRequestFloodLeavesMemoryBoundedAndTrafficFlowing) {
  auto a = open_raw(pair_->client(), "10.79.3.21");
  auto b = open_raw(pair_->server(), "10.79.3.22");
  ASSERT_TRUE(a && b);
  int injector = open_injector();
  ASSERT_GE(injector, 0);

  long rss_before = peak_rss_kib();
  std::atomic<bool> stop{false};
  std::uint64_t sent = 0;
  std::thread flood([&] {
    for (std::uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      wire::MacAddress mac{0x02, 0x55, static_cast<std::uint8_t>(i >> 24), static_cast<std::uint8_t>(i >> 16),
                           static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i)};
      std::array<std::uint8_t, 4> sender{11, static_cast<std::uint8_t>(i >> 16), static_cast<std::uint8_t>(i >> 8),
                                         static_cast<std::uint8_t>(i)};
      std::vector<std::uint8_t> frame = arp_request(mac, sender, {10, 79, 3, 22});
      if (::send(injector, frame.data(), frame.size(), 0) > 0) ++sent;
      // The sanitized device is several times slower than the sender: pace
      // the flood so that it exercises the paths instead of overflowing the socket.
      if (kSanitizedBuild && i % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  auto start = std::chrono::steady_clock::now();
  int round_trips = 0;
  // The flood shares the port's socket and crowds real frames out of its
  // buffer: 8 tries of 0.5 s ride that out, even on a loaded machine.
  RcOptions patient;
  patient.timeout = 17;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    write_and_read_back(*a, *b, patient);
    if (HasFailure()) break;
    ++round_trips;
  }
  stop = true;
  flood.join();
  ::close(injector);
  long growth = peak_rss_kib() - rss_before;
  std::printf("ARP flood: %llu requests from made-up senders in 5 s; %d verified 256 KiB WRITE+READ round trips "
              "beside it; peak RSS grew %ld KiB\n",
              static_cast<unsigned long long>(sent), round_trips, growth);
  EXPECT_GT(sent, 10'000u);
  EXPECT_GT(round_trips, 0);
  if (!kSanitizedBuild) {            // ASan's quarantine keeps freed memory resident
    EXPECT_LT(growth, 16 * 1024);  // unbounded learning grew 34 MiB in 1.3 s here
  }
}

}  // namespace
}  // namespace uroce::testing
