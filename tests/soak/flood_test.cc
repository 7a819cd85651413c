// Floods at a live uroce device over loopback UDP, as fast as one sending
// thread can go, while a verified transfer runs beside them:
//   - datagrams to QPNs that do not exist;
//   - WRITEs with PSNs half the PSN space away, to a live go-back-N QP;
//   - WRITEs with PSNs just ahead of a gap, to a live selective-repeat QP,
//     which fill its reorder buffer.
// The flood comes from the peer's own address (another UDP port), so the
// source check lets it through to the transport. Each flood must be counted
// where it belongs, the transfer must complete with every byte right, and
// the process's peak RSS must stay within the bound docs/design/security.md documents.
// UROCE_FLOOD_SECONDS sets each flood's length (default 10).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/peak_rss.h"
#include "tests/support/sanitized_build.h"
#include "tests/support/test_network.h"
#include "uroce/device.h"
#include "wire/frame.h"
#include "wire/ipv4.h"
#include "wire/opcode.h"
#include "wire/udp.h"

namespace uroce::testing {
namespace {

enum class Flood { unknown_qpn, out_of_window, reorder_gaps };

// Each flood has its own pair of addresses: ctest may run them side by side.
std::array<std::uint8_t, 4> target_address(Flood flood) {
  return {127, 0, 5, static_cast<std::uint8_t>(10 * static_cast<int>(flood) + 1)};
}
std::array<std::uint8_t, 4> peer_address(Flood flood) {
  return {127, 0, 5, static_cast<std::uint8_t>(10 * static_cast<int>(flood) + 2)};
}
constexpr std::uint32_t kVictimPsn = 0x1000;
// Under the sanitizers the device runs several times slower than any sender:
// there the flood is paced (one batch of 64 per millisecond) so that it
// exercises every path without simply overflowing the socket, and the RSS
// bound is not checked (ASan's quarantine keeps freed memory resident).
constexpr bool kSanitized = kSanitizedBuild;

// The documented bound (docs/design/security.md): peak RSS grows by
// less than this over a flood.
constexpr long kRssBoundKib = 64 * 1024;

int flood_seconds() {
  const char* value = std::getenv("UROCE_FLOOD_SECONDS");
  return value ? std::atoi(value) : 10;
}

std::unique_ptr<Device> open_device(const std::array<std::uint8_t, 4>& address) {
  DeviceConfig config;
  config.address = std::to_string(address[0]) + "." + std::to_string(address[1]) + "." +
                   std::to_string(address[2]) + "." + std::to_string(address[3]);
  config.fixed_seed = true;
  auto device = Device::open(config);
  if (!device) throw std::runtime_error(device.error());
  return std::move(*device);
}

// The UDP payloads (BTH to ICRC) of a flood's datagrams, from the peer's
// address and the flooding socket's port, with ICRCs the target accepts.
std::vector<std::vector<std::uint8_t>> flood_payloads(Flood flood, std::uint32_t qpn, std::uint16_t source_port) {
  std::mt19937 rng(11);
  std::vector<std::vector<std::uint8_t>> payloads;
  std::vector<std::uint8_t> data(1024, 0xAB);
  for (int i = 0; i < 256; ++i) {
    wire::Ipv4Repr ip;
    ip.src = peer_address(flood);
    ip.dst = target_address(flood);
    wire::UdpRepr udp;
    udp.src_port = source_port;
    wire::TransportHeaders headers;
    headers.bth.opcode = wire::opcode::kRcRdmaWriteOnly;
    headers.reth = wire::RethRepr{0x10000, 0x1234, static_cast<std::uint32_t>(data.size())};
    switch (flood) {
      case Flood::unknown_qpn:
        headers.bth.dest_qp = 0x800000 | (rng() & 0x7FFFFF);
        headers.bth.psn = rng() & 0xFFFFFF;
        break;
      case Flood::out_of_window:
        headers.bth.dest_qp = qpn;
        headers.bth.psn = (kVictimPsn + 0x400000 + (rng() & 0x3FFFFF)) & 0xFFFFFF;
        break;
      case Flood::reorder_gaps:
        headers.bth.dest_qp = qpn;
        headers.bth.psn = kVictimPsn + 1 + static_cast<std::uint32_t>(rng() % 255);  // ahead of the gap at kVictimPsn
        break;
    }
    std::vector<std::uint8_t> datagram(2048);
    auto layout = wire::begin_roce_datagram(wire::RoceDatagramSpec{ip, udp, headers}, data.size(), datagram);
    if (!layout) throw std::runtime_error("flood: cannot build a datagram");
    std::memcpy(datagram.data() + layout->payload_offset, data.data(), data.size());
    wire::seal_roce_datagram(datagram, *layout);
    std::size_t start = layout->ip_header_length + wire::kUdpHeaderLength;
    payloads.emplace_back(datagram.begin() + static_cast<std::ptrdiff_t>(start),
                          datagram.begin() + static_cast<std::ptrdiff_t>(layout->length));
  }
  return payloads;
}

class Flooder {
 public:
  explicit Flooder(Flood flood) : target_(target_address(flood)) {
    const std::array<std::uint8_t, 4> peer = peer_address(flood);
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    std::memcpy(&local.sin_addr, peer.data(), 4);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      throw std::runtime_error("flood: cannot bind a socket on the peer's address");
    }
    socklen_t length = sizeof local;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &length);
    port_ = ntohs(local.sin_port);
  }
  ~Flooder() { ::close(fd_); }
  std::uint16_t port() const { return port_; }

  // Sends the payloads round and round until stop; returns how many.
  std::uint64_t run(const std::vector<std::vector<std::uint8_t>>& payloads, const std::atomic<bool>& stop) {
    sockaddr_in target{};
    target.sin_family = AF_INET;
    target.sin_port = htons(wire::kRoceV2Port);
    std::memcpy(&target.sin_addr, target_.data(), 4);
    constexpr std::size_t kBatch = 64;
    std::vector<mmsghdr> messages(kBatch);
    std::vector<iovec> vectors(kBatch);
    std::uint64_t sent = 0;
    std::size_t next = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (std::size_t i = 0; i < kBatch; ++i) {
        const auto& payload = payloads[next++ % payloads.size()];
        vectors[i] = {const_cast<std::uint8_t*>(payload.data()), payload.size()};
        messages[i] = {};
        messages[i].msg_hdr.msg_name = &target;
        messages[i].msg_hdr.msg_namelen = sizeof target;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
      }
      int n = ::sendmmsg(fd_, messages.data(), kBatch, 0);
      if (n > 0) sent += static_cast<std::uint64_t>(n);
      if (kSanitized) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return sent;
  }

 private:
  std::array<std::uint8_t, 4> target_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

class Floods : public ::testing::TestWithParam<Flood> {};

TEST_P(Floods, AreCountedMemoryStaysBoundedAndATransferBesideCompletes) {
  const Flood flood = GetParam();
  // The registered buffers outlive the devices (declared first, destroyed
  // last): a READ request resent by a loss probe may still be served after
  // the last completion, and it reads `sink`.
  std::vector<std::uint8_t> source(1 << 20), sink(1 << 20), back(1 << 20);
  std::unique_ptr<Device> target = open_device(target_address(flood));
  std::unique_ptr<Device> peer = open_device(peer_address(flood));
  // The checked transfer (peer -> target, go-back-N), and the flood's victim QP on the target.
  RcOptions transfer_options;
  // The flood shares the target's socket: its receive buffer overflows and
  // real packets are lost too, more so in a slow (sanitizer) build. A budget
  // of 8 tries of 0.5 s rides that out.
  transfer_options.timeout = 17;
  // And loss probes, as the library runs QPs (5 ms): a lost packet is found
  // by a probe without spending one of those tries. Without them, a loaded
  // 2-core machine saw a try fail 8 times in a row now and then.
  transfer_options.loss_probe_ns = 5'000'000;
  RcOptions victim_options;
  victim_options.recovery = flood == Flood::reorder_gaps ? LossRecovery::selective_repeat : LossRecovery::go_back_n;
  victim_options.sq_psn = victim_options.rq_psn = kVictimPsn;
  std::pair<Endpoint, Endpoint> transfer, victim;
  target->call_and_wake([&](Engine& t) {
    peer->call_and_wake([&](Engine& p) {
      transfer = connect_rc(p, t, transfer_options);
      victim = connect_rc(p, t, victim_options);
    });
  });
  std::mt19937_64 rng(5);
  for (auto& byte : source) byte = static_cast<std::uint8_t>(rng());
  MrKeys source_keys{}, back_keys{}, sink_keys{};
  peer->call_and_wake([&](Engine& p) {
    source_keys = *p.reg_mr(transfer.first.pd, source.data(), source.size(), kAccessLocalWrite);
    back_keys = *p.reg_mr(transfer.first.pd, back.data(), back.size(), kAccessLocalWrite);
  });
  target->call_and_wake([&](Engine& t) {
    sink_keys = *t.reg_mr(transfer.second.pd, sink.data(), sink.size(),
                          kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
  });

  Flooder flooder(flood);
  auto payloads = flood_payloads(flood, victim.second.qpn, flooder.port());
  long rss_before = peak_rss_kib();
  std::atomic<bool> stop{false};
  std::uint64_t flooded = 0;
  std::thread flooding([&] { flooded = flooder.run(payloads, stop); });
  struct StopFlood {  // also when an assertion returns early
    std::atomic<bool>& stop;
    std::thread& thread;
    ~StopFlood() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } stop_flood{stop, flooding};

  // Beside the flood: 1 MiB WRITE, then READ it back, checked, again and again.
  auto run_one = [&](WrOpcode opcode, std::vector<std::uint8_t>& local, const MrKeys& keys) {
    Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), static_cast<std::uint32_t>(local.size()), keys.lkey};
    SendWr wr;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(sink.data()), sink_keys.rkey};
    EXPECT_EQ(peer->post([&](Engine& p) { return p.post_send(transfer.first.qpn, wr); }), std::errc{});
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    WorkCompletion wc;
    while (std::chrono::steady_clock::now() < give_up) {
      int n = peer->poll([&](Engine& p) { return static_cast<int>(*p.poll_cq(transfer.first.cq, {&wc, 1})); });
      if (n == 1) return wc.status;
      std::this_thread::yield();
    }
    return WcStatus::general_err;
  };
  auto start = std::chrono::steady_clock::now();
  int transfers = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(flood_seconds())) {
    std::fill(back.begin(), back.end(), 0);
    ASSERT_EQ(run_one(WrOpcode::rdma_write, source, source_keys), WcStatus::success);
    ASSERT_EQ(run_one(WrOpcode::rdma_read, back, back_keys), WcStatus::success);
    ASSERT_TRUE(back == source) << "transfer " << transfers << " came back wrong";
    ++transfers;
  }
  stop = true;
  flooding.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long rss_growth = peak_rss_kib() - rss_before;
  EngineCounters counters = target->counters();
  const char* name = flood == Flood::unknown_qpn ? "unknown QPNs" : flood == Flood::out_of_window ? "out-of-window PSNs" : "reorder-buffer gaps";
  std::printf("flood of %s: %llu datagrams in %.1f s (%.0f/s); target counted %llu unknown-QP, %llu duplicate, "
              "%llu out-of-sequence, %llu held; %d verified 1 MiB WRITE+READ round trips beside it; "
              "peak RSS grew %ld KiB\n",
              name, static_cast<unsigned long long>(flooded), seconds, static_cast<double>(flooded) / seconds,
              static_cast<unsigned long long>(counters.unknown_qp_packets),
              static_cast<unsigned long long>(counters.duplicate_requests),
              static_cast<unsigned long long>(counters.out_of_sequence),
              static_cast<unsigned long long>(counters.held_out_of_order), transfers, rss_growth);
  std::fflush(stdout);
  EXPECT_GT(transfers, 0);
  if (!kSanitized) {
    EXPECT_LT(rss_growth, kRssBoundKib);
  }
  switch (flood) {
    case Flood::unknown_qpn: EXPECT_GT(counters.unknown_qp_packets, 1000u); break;
    case Flood::out_of_window:
      EXPECT_GT(counters.duplicate_requests + counters.out_of_sequence, 1000u);
      break;
    case Flood::reorder_gaps: EXPECT_GT(counters.held_out_of_order, 0u); break;
  }
  EXPECT_EQ(counters.wrong_source_packets, 0u);  // the flood passed the source check, as meant
}

INSTANTIATE_TEST_SUITE_P(Kinds, Floods,
                         ::testing::Values(Flood::unknown_qpn, Flood::out_of_window, Flood::reorder_gaps),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case Flood::unknown_qpn: return "UnknownQpns";
                             case Flood::out_of_window: return "OutOfWindowPsns";
                             case Flood::reorder_gaps: return "ReorderBufferGaps";
                           }
                           return "";
                         });

}  // namespace
}  // namespace uroce::testing
