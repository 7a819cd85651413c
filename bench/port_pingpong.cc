// The floor under `uroce perf write_lat` over UDP: a busy-polling ping-pong
// through uroce's own UDP port (src/port/udp_port), with no engine behind
// it. Each ping and each pong is what a 2-byte WRITE ping-pong moves each
// way: a 36-byte RoCE packet (ECT(0)) and the 20-byte ACK behind it
// (Not-ECT), handed to UdpPort::send together, so they take exactly the
// port's path: its sockets and their options, one GSO send on loopback,
// ECN and GRO reported on receipt, the headers rebuilt in front of each
// arrival. bench/udp_pingpong is the same ping-pong over plain sockets.
//
//   port_pingpong --serve 127.0.3.12 --port 19900 &
//   port_pingpong --to 127.0.3.12 --from 127.0.3.13 --port 19900 -n 20000
//
// The client prints the median, average and 99th percentile half round trip.
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "half_round_trips.h"
#include "port/udp_port.h"
#include "wire/ip_datagram.h"
#include "wire/ipv4.h"
#include "wire/udp.h"

namespace {

using uroce::ByteSpan;
using uroce::MutableByteSpan;
using uroce::port::UdpPort;
namespace wire = uroce::wire;

constexpr std::size_t kWriteSize = 36;  // BTH, RETH, 2 bytes, pad, ICRC
constexpr std::size_t kAckSize = 20;    // BTH, AETH, ICRC
constexpr std::uint16_t kSourcePort = 0xC123;  // as a QP's; the peer's receive port is --port
constexpr std::size_t kHeaders = wire::kIpv4HeaderLength + wire::kUdpHeaderLength;

struct Options {
  std::string serve;  // the server's address, or empty for a client
  std::string to;
  std::string from = "127.0.0.1";
  int port = 19900;
  int iterations = 20000;
};

wire::Ipv4Address address_of(const std::string& text) {
  wire::Ipv4Address address{};
  if (::inet_pton(AF_INET, text.c_str(), address.data()) != 1) {
    std::fprintf(stderr, "port_pingpong: '%s' is not an IPv4 address\n", text.c_str());
    std::exit(2);
  }
  return address;
}

// One end: its port, and the WRITE and ACK it sends each round, built once
// with the headers the port reads (TOS, destination, UDP ports).
class End {
 public:
  End(const std::string& address, int port) : self_(address_of(address)), port_(static_cast<std::uint16_t>(port)) {
    uroce::port::UdpPortOptions options;
    options.port = port_;
    auto opened = UdpPort::open(address, options);
    if (!opened) {
      std::fprintf(stderr, "port_pingpong: %s\n", opened.error().c_str());
      std::exit(1);
    }
    udp_ = std::make_unique<UdpPort>(std::move(*opened));
  }

  void aim_at(const wire::Ipv4Address& peer) {
    write_ = datagram(peer, kWriteSize, wire::Ecn::ect0);
    ack_ = datagram(peer, kAckSize, wire::Ecn::not_ect);
    // Described once, as the engine describes what it builds.
    write_transmit_ = *wire::describe_transmit(write_);
    ack_transmit_ = *wire::describe_transmit(ack_);
  }

  void send(std::uint32_t round) {
    std::memcpy(&write_[kHeaders], &round, sizeof round);
    std::memcpy(&ack_[kHeaders], &round, sizeof round);
    uroce::DescribedDatagram both[] = {{write_, write_transmit_}, {ack_, ack_transmit_}};
    for (std::size_t sent = 0; sent < 2;) sent += udp_->send(std::span(both).subspan(sent));
  }

  // Spins until both datagrams of this round arrived; returns the sender's
  // address (the server answers whoever pinged). A peer silent for 5 s ends
  // the program.
  uroce::port::PortCounters counters() const { return udp_->counters(); }

  wire::Ipv4Address receive(std::uint32_t round) {
    wire::Ipv4Address from{};
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int got = 0, spins = 0; got < 2; ++spins) {
      for (const uroce::port::ReceivedDatagram& arrived : udp_->receive(0)) {
        std::uint32_t of_round = 0;
        if (arrived.bytes.size() < kHeaders + sizeof of_round) continue;
        std::memcpy(&of_round, &arrived.bytes[kHeaders], sizeof of_round);
        if (of_round != round) continue;
        std::copy_n(&arrived.bytes[12], 4, from.begin());  // the IPv4 source
        ++got;
      }
      if (spins % 4096 == 4095 && std::chrono::steady_clock::now() > give_up) {
        std::fprintf(stderr, "port_pingpong: the peer fell silent\n");
        std::exit(1);
      }
    }
    return from;
  }

 private:
  std::vector<std::uint8_t> datagram(const wire::Ipv4Address& to, std::size_t size, wire::Ecn ecn) const {
    std::vector<std::uint8_t> bytes(kHeaders + size, 0);
    wire::Ipv4Repr ip;
    ip.ecn = ecn;
    ip.src = self_;
    ip.dst = to;
    ip.payload_length = static_cast<std::uint16_t>(wire::kUdpHeaderLength + size);
    ip.emit(MutableByteSpan(bytes).first(wire::kIpv4HeaderLength));
    wire::UdpRepr udp;
    udp.src_port = kSourcePort;
    udp.dst_port = port_;
    udp.payload_length = static_cast<std::uint16_t>(size);
    udp.emit(MutableByteSpan(bytes).subspan(wire::kIpv4HeaderLength, wire::kUdpHeaderLength));
    return bytes;
  }

  wire::Ipv4Address self_;
  std::uint16_t port_;
  std::unique_ptr<UdpPort> udp_;
  std::vector<std::uint8_t> write_, ack_;
  uroce::Transmit write_transmit_, ack_transmit_;
};

int serve(const Options& options) {
  End end(options.serve, options.port);
  for (int i = 0; i < options.iterations + 100; ++i) {
    auto round = static_cast<std::uint32_t>(i + 1);
    wire::Ipv4Address peer = end.receive(round);
    if (i == 0) end.aim_at(peer);
    end.send(round);
  }
  return 0;
}

int ping(const Options& options) {
  End end(options.from, options.port);
  end.aim_at(address_of(options.to));
  uroce::bench::HalfTrips half_trips = uroce::bench::time_half_trips_us(options.iterations, [&](std::uint32_t round) {
    end.send(round);
    end.receive(round);
  });
  // The GSO sends and GRO receives say the pair took the port's batched path.
  uroce::port::PortCounters counters = end.counters();
  std::printf("through uroce's UDP port (GSO sends %llu, GRO receives %llu), iterations %d: "
              "half round trip median %.2f us average %.2f us 99%% %.2f us\n",
              static_cast<unsigned long long>(counters.gso_sends), static_cast<unsigned long long>(counters.gro_receives),
              options.iterations, half_trips.median, half_trips.average, half_trips.p99);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Busy-polling ping-pong of a WRITE and an ACK each way through uroce's UDP port, no engine"};
  app.add_option("--serve", options.serve, "Serve on this IPv4 address");
  app.add_option("--to", options.to, "Ping the server at this IPv4 address");
  app.add_option("--from", options.from, "Ping from this IPv4 address");
  app.add_option("--port", options.port, "UDP port both ends receive on")->check(CLI::Range(1, 65535));
  app.add_option("-n,--iterations", options.iterations, "Round trips measured")->check(CLI::Range(1, 100'000'000));
  CLI11_PARSE(app, argc, argv);
  if (options.serve.empty() == options.to.empty()) {
    std::fprintf(stderr, "port_pingpong: give --serve ADDRESS or --to ADDRESS\n");
    return 2;
  }
  if (options.port == kSourcePort) {
    std::fprintf(stderr, "port_pingpong: --port %d is the source port the datagrams leave from\n", kSourcePort);
    return 2;
  }
  return options.serve.empty() ? ping(options) : serve(options);
}
