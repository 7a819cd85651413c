// The socket floor under a RoCE ping-pong: a busy-polling UDP ping-pong
// (non-blocking sockets, as `sockperf pp --nonblocked`) whose every ping and
// pong is a batch of D datagrams sent with one sendmmsg. With D = 1 it is
// sockperf's test; with D = 2 it moves what `uroce perf write_lat` moves per
// half round trip (a WRITE and the ACK of the peer's WRITE), so the two
// figures split uroce's cost into the kernel's and the engine's. With
// --answer-first each side answers on the first datagram of the peer's batch
// (as `uroce perf` answers on the WRITE, its ACK still on the way); every
// datagram then carries its round's number, and the rest of a batch is
// skipped when it arrives.
//
//   udp_pingpong --serve 127.0.3.12 --port 19900 --datagrams 2 [--answer-first] &
//   udp_pingpong --to 127.0.3.12 --from 127.0.3.13 --port 19900 --datagrams 2 --size 70 -n 20000 [--answer-first]
//
// The client prints the median, average and 99th percentile half round trip.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "half_round_trips.h"

namespace {

constexpr std::size_t kMostDatagrams = 8;

struct Options {
  std::string serve;  // the server's address, or empty for a client
  std::string to;
  std::string from = "127.0.0.1";
  int port = 19900;
  int datagrams = 1;
  int size = 16;
  int iterations = 20000;
  bool answer_first = false;
};

int bound_socket(const std::string& address, int port) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_port = htons(static_cast<std::uint16_t>(port));
  if (fd < 0 || ::inet_pton(AF_INET, address.c_str(), &local.sin_addr) != 1 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    std::fprintf(stderr, "udp_pingpong: cannot bind %s:%d: %s\n", address.c_str(), port, std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

// Spins until `count` datagrams of this round have arrived (with
// answer_first: one; datagrams of earlier rounds are skipped); returns the
// sender. A peer silent for 5 s ends the program.
sockaddr_in receive_batch(int fd, int count, std::uint32_t round, bool answer_first, std::vector<std::uint8_t>& buffer) {
  sockaddr_in from{};
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int wanted = answer_first ? 1 : count;
  for (int got = 0, spins = 0; got < wanted; ++spins) {
    socklen_t length = sizeof from;
    ssize_t size = ::recvfrom(fd, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from), &length);
    if (size >= 0) {
      std::uint32_t of_round = 0;
      if (size >= static_cast<ssize_t>(sizeof of_round)) std::memcpy(&of_round, buffer.data(), sizeof of_round);
      if (!answer_first || of_round == round) ++got;
    }
    if (spins % 4096 == 4095 && std::chrono::steady_clock::now() > give_up) {
      std::fprintf(stderr, "udp_pingpong: the peer fell silent\n");
      std::exit(1);
    }
  }
  return from;
}

void send_batch(int fd, const sockaddr_in& to, int count, std::uint32_t round, std::vector<std::uint8_t>& payload) {
  if (payload.size() >= sizeof round) std::memcpy(payload.data(), &round, sizeof round);
  std::array<iovec, kMostDatagrams> iovs{};
  std::array<mmsghdr, kMostDatagrams> messages{};
  for (int i = 0; i < count; ++i) {
    iovs[i] = iovec{payload.data(), payload.size()};
    messages[i].msg_hdr.msg_name = const_cast<sockaddr_in*>(&to);
    messages[i].msg_hdr.msg_namelen = sizeof to;
    messages[i].msg_hdr.msg_iov = &iovs[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  for (int sent = 0; sent < count;) {
    int now = ::sendmmsg(fd, messages.data() + sent, static_cast<unsigned>(count - sent), 0);
    if (now > 0) sent += now;
  }
}

int serve(const Options& options) {
  int fd = bound_socket(options.serve, options.port);
  std::vector<std::uint8_t> buffer(65536), payload(static_cast<std::size_t>(options.size), 0x42);
  for (int i = 0; i < options.iterations + 100; ++i) {
    auto round = static_cast<std::uint32_t>(i + 1);
    sockaddr_in peer = receive_batch(fd, options.datagrams, round, options.answer_first, buffer);
    send_batch(fd, peer, options.datagrams, round, payload);
  }
  return 0;
}

int ping(const Options& options) {
  int fd = bound_socket(options.from, options.port);
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<std::uint16_t>(options.port));
  if (::inet_pton(AF_INET, options.to.c_str(), &server.sin_addr) != 1) {
    std::fprintf(stderr, "udp_pingpong: '%s' is not an IPv4 address\n", options.to.c_str());
    return 2;
  }
  std::vector<std::uint8_t> buffer(65536), payload(static_cast<std::size_t>(options.size), 0x24);
  uroce::bench::HalfTrips half_trips = uroce::bench::time_half_trips_us(options.iterations, [&](std::uint32_t round) {
    send_batch(fd, server, options.datagrams, round, payload);
    receive_batch(fd, options.datagrams, round, options.answer_first, buffer);
  });
  std::printf("datagrams %d size %d iterations %d: half round trip median %.2f us average %.2f us 99%% %.2f us\n",
              options.datagrams, options.size, options.iterations, half_trips.median, half_trips.average,
              half_trips.p99);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Busy-polling UDP ping-pong with D datagrams per ping (the socket floor under a RoCE ping-pong)"};
  app.add_option("--serve", options.serve, "Serve on this IPv4 address");
  app.add_option("--to", options.to, "Ping the server at this IPv4 address");
  app.add_option("--from", options.from, "Ping from this IPv4 address");
  app.add_option("--port", options.port, "UDP port of both ends")->check(CLI::Range(1, 65535));
  app.add_option("--datagrams", options.datagrams, "Datagrams per ping and per pong")
      ->check(CLI::Range(1, static_cast<int>(kMostDatagrams)));
  app.add_option("--size", options.size, "UDP payload bytes")->check(CLI::Range(1, 65000));
  app.add_option("-n,--iterations", options.iterations, "Round trips measured")->check(CLI::Range(1, 100'000'000));
  app.add_flag("--answer-first", options.answer_first,
               "Answer on the first datagram of the peer's batch (both ends must say so)");
  CLI11_PARSE(app, argc, argv);
  if (options.answer_first && options.size < static_cast<int>(sizeof(std::uint32_t))) {
    std::fprintf(stderr, "udp_pingpong: --answer-first needs --size 4 or more (each datagram carries its round)\n");
    return 2;
  }
  if (options.serve.empty() == options.to.empty()) {
    std::fprintf(stderr, "udp_pingpong: give --serve ADDRESS or --to ADDRESS\n");
    return 2;
  }
  return options.serve.empty() ? ping(options) : serve(options);
}
