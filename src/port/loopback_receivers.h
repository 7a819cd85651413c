// LoopbackReceivers: how full the receive queue of a UDP socket on this
// host is, asked of the kernel (sock_diag), so that a sender on loopback
// waits instead of overrunning it. On a fabric a NIC's receive queue never
// overflows (PFC pauses the sender); on loopback the kernel drops what a
// full socket cannot take, and UC and UD, which never resend, lose messages.
// The UDP port asks before sending to a loopback address, and may then send
// half of the room left below half the receiver's queue before it asks
// again (the queue counts each datagram's kernel overhead too): the closer
// to full, the more often it asks, and an idle receiver with a large
// buffer is asked once per MiB. While the queue is more than half full it
// holds its sends (back-pressure: the device retries shortly), for at most
// kLongestWait. A receiver still full then is not waited for again until
// its queue has drained below half (as a NIC's PFC watchdog stops honouring
// a pause that never ends): one that stopped draining must not stall, again
// and again, everything its sender sends. Where the kernel does not answer,
// nothing is held.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>

#include "port/network_namespace.h"
#include "uroce/vocabulary.h"

namespace uroce::port {

class LoopbackReceivers {
 public:
  LoopbackReceivers() = default;
  ~LoopbackReceivers();
  LoopbackReceivers(const LoopbackReceivers&) = delete;
  LoopbackReceivers& operator=(const LoopbackReceivers&) = delete;

  // How many bytes may go to this loopback address and UDP port now before
  // it is asked again (at least one datagram's worth when not 0); 0: wait.
  std::size_t room_for(const std::uint8_t* address, bool ipv4, std::uint16_t port);
  // What was sent there.
  void sent(const std::uint8_t* address, bool ipv4, std::uint16_t port, std::size_t bytes);
  std::uint64_t waits() const { return waits_; }
  // Opens the kernel query socket (sock_diag) in netns, where the port's
  // sockets are: queries see only their own namespace's sockets. Without
  // it, the first query opens one where the calling thread is.
  void open_query_socket(const NetworkNamespace& netns);

  // The receive queue of the socket bound to address:port, and its size
  // (SO_RCVBUF as the kernel keeps it), in bytes; none where there is no
  // such socket or the kernel does not say.
  struct Queue {
    std::uint32_t queued = 0;
    std::uint32_t capacity = 0;
  };
  std::optional<Queue> queue_of(const std::uint8_t* address, bool ipv4, std::uint16_t port);

  static constexpr std::size_t kLargestBudget = 1 << 20;
  static constexpr std::size_t kSmallestBudget = 16 << 10;
  // Long enough for a receiver that is only descheduled on a busy host (10 ms
  // was not, on two cores under the test suite).
  static constexpr TimeNs kLongestWait = 1'000'000'000;

 private:
  struct Receiver {
    std::size_t budget = 0;  // bytes that may go before the next check (0: check first)
    TimeNs full_since = kNever;
    bool given_up = false;   // full for longer than kLongestWait: sent to regardless until it drains
  };
  using Key = std::pair<std::array<std::uint8_t, 16>, std::uint16_t>;
  static Key key_of(const std::uint8_t* address, bool ipv4, std::uint16_t port);
  // The receiver's state; the last one found is remembered (a QP's sends
  // mostly go to one peer), so a send costs no map search.
  Receiver& receiver_of(const std::uint8_t* address, bool ipv4, std::uint16_t port);

  int netlink_fd_ = -1;
  bool unavailable_ = false;  // the kernel refused: hold nothing
  std::map<Key, Receiver> receivers_;
  Key last_key_{};
  Receiver* last_ = nullptr;
  std::uint64_t waits_ = 0;
};

}  // namespace uroce::port
