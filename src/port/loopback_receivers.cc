// LoopbackReceivers (loopback_receivers.h): one sock_diag request per check,
// for the one socket bound to the receiver's address and port.
#include "port/loopback_receivers.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "uroce/monotonic_clock.h"

namespace uroce::port {

LoopbackReceivers::~LoopbackReceivers() {
  if (netlink_fd_ >= 0) ::close(netlink_fd_);
}

LoopbackReceivers::Key LoopbackReceivers::key_of(const std::uint8_t* address, bool ipv4, std::uint16_t port) {
  Key key{};
  std::memcpy(key.first.data(), address, ipv4 ? 4 : 16);
  key.second = port;
  return key;
}

void LoopbackReceivers::open_query_socket(const NetworkNamespace& netns) {
  if (netlink_fd_ >= 0 || unavailable_) return;
  netlink_fd_ = netns.open_socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  unavailable_ = netlink_fd_ < 0;
}

std::optional<LoopbackReceivers::Queue> LoopbackReceivers::queue_of(const std::uint8_t* address, bool ipv4,
                                                                      std::uint16_t port) {
  if (unavailable_) return std::nullopt;
  if (netlink_fd_ < 0) {
    netlink_fd_ = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (netlink_fd_ < 0) {
      unavailable_ = true;
      return std::nullopt;
    }
  }
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = ipv4 ? AF_INET : AF_INET6;
  message.request.sdiag_protocol = IPPROTO_UDP;
  message.request.idiag_ext = 1u << (INET_DIAG_SKMEMINFO - 1);
  message.request.idiag_states = ~0u;
  // The kernel looks the socket up as it would for a datagram arriving at
  // it: the request's destination is the socket's own address and port.
  std::memcpy(message.request.id.idiag_dst, address, ipv4 ? 4 : 16);
  message.request.id.idiag_dport = htons(port);
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (::send(netlink_fd_, &message, sizeof message, 0) != static_cast<ssize_t>(sizeof message)) {
    unavailable_ = true;
    return std::nullopt;
  }
  alignas(nlmsghdr) std::uint8_t reply[1024];
  // The kernel answers within send(): a reply that is not there never comes.
  ssize_t got = ::recv(netlink_fd_, reply, sizeof reply, MSG_DONTWAIT);
  if (got < static_cast<ssize_t>(sizeof(nlmsghdr))) {
    unavailable_ = true;
    return std::nullopt;
  }
  auto* header = reinterpret_cast<nlmsghdr*>(reply);
  if (!NLMSG_OK(header, static_cast<std::size_t>(got))) return std::nullopt;
  if (header->nlmsg_type == NLMSG_ERROR) {
    const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
    // No such socket: nobody to wait for. Anything else: the kernel does not offer it.
    if (error->error != -ENOENT) unavailable_ = true;
    return std::nullopt;
  }
  if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY) return std::nullopt;
  const auto* diag = static_cast<const inet_diag_msg*>(NLMSG_DATA(header));
  int length = static_cast<int>(header->nlmsg_len - NLMSG_LENGTH(sizeof *diag));
  for (auto* attribute = reinterpret_cast<const rtattr*>(diag + 1); RTA_OK(attribute, length);
       attribute = RTA_NEXT(attribute, length)) {
    if (attribute->rta_type != INET_DIAG_SKMEMINFO || RTA_PAYLOAD(attribute) < sizeof(std::uint32_t) * 2) continue;
    const auto* memory = static_cast<const std::uint32_t*>(RTA_DATA(attribute));
    return Queue{memory[SK_MEMINFO_RMEM_ALLOC], memory[SK_MEMINFO_RCVBUF]};
  }
  return std::nullopt;
}

LoopbackReceivers::Receiver& LoopbackReceivers::receiver_of(const std::uint8_t* address, bool ipv4,
                                                            std::uint16_t port) {
  Key key = key_of(address, ipv4, port);
  if (last_ == nullptr || key != last_key_) {
    last_ = &receivers_[key];
    last_key_ = key;
  }
  return *last_;
}

std::size_t LoopbackReceivers::room_for(const std::uint8_t* address, bool ipv4, std::uint16_t port) {
  if (unavailable_) return kLargestBudget;
  Receiver& receiver = receiver_of(address, ipv4, port);
  if (receiver.budget > 0) return receiver.budget;
  TimeNs now = monotonic_now();
  std::optional<Queue> queue = queue_of(address, ipv4, port);
  if (!queue) {
    receiver.budget = kLargestBudget;  // no such socket (or no answer): nobody to wait for
  } else if (queue->queued <= queue->capacity / 2) {
    std::size_t room = (queue->capacity / 2 - queue->queued) / 2;
    receiver.budget = std::clamp(room, kSmallestBudget, kLargestBudget);
    receiver.given_up = false;
  } else if (receiver.given_up || (receiver.full_since != kNever && now - receiver.full_since > kLongestWait)) {
    receiver.budget = kLargestBudget;  // it stopped draining: the kernel drops what it cannot take, as before
    receiver.given_up = true;
  } else {
    if (receiver.full_since == kNever) receiver.full_since = now;
    ++waits_;
    return 0;
  }
  receiver.full_since = kNever;
  return receiver.budget;
}

void LoopbackReceivers::sent(const std::uint8_t* address, bool ipv4, std::uint16_t port, std::size_t bytes) {
  if (unavailable_) return;
  Receiver& receiver = receiver_of(address, ipv4, port);
  receiver.budget -= std::min(receiver.budget, bytes);
}

}  // namespace uroce::port
