// UdpPort: opening the sockets (one to receive on address:4791, one per UDP
// source port to send from) and rebuilding an arrival's IP and UDP headers.
// The batched system calls are in udp_port_io.cc.
#include "port/udp_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/udp.h"
#include "port/interface_info.h"
#include "port/udp_port_io.h"

namespace uroce::port {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// A non-blocking UDP socket bound to ip:port with DF (IPv4) and TOS reporting.
// reuse: SO_REUSEADDR, for the sockets that only send (their source ports):
// devices that share an address may pick the same one.
Expected<int, std::string> bound_socket(const NetworkNamespace& netns, bool ipv4, const std::uint8_t* ip,
                                        std::uint16_t port, int receive_buffer, bool gro, bool reuse = false) {
  int fd = netns.open_socket(ipv4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return unexpected(errno_text("socket"));
  int one = 1;
  bool ok = true;
  if (ipv4) {
    int pmtu = IP_PMTUDISC_DO;  // DF set: the kernel then sends Identification 0
    ok &= ::setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu) == 0;
    ok &= ::setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) == 0;
  } else {
    ok &= ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) == 0;
    int pmtu = IPV6_PMTUDISC_DO;
    ok &= ::setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu) == 0;
    ok &= ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one) == 0;
  }
  if (receive_buffer > 0) {
    // A window of packets must fit in the socket buffer or the kernel drops
    // them; FORCE lifts net.core.rmem_max when we may (CAP_NET_ADMIN).
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &receive_buffer, sizeof receive_buffer) != 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
  }
  if (reuse) ok &= ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0;
  // GRO is an optimisation: a kernel without it hands over datagrams one by one.
  if (gro) ::setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
  SocketAddress address = make_address(ipv4, ip, port);
  if (!ok) {
    std::string error = errno_text("setsockopt");
    ::close(fd);
    return unexpected(error);
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    int bind_error = errno;
    std::string error = errno_text("bind");
    ::close(fd);
    errno = bind_error;
    return unexpected(error);
  }
  return fd;
}

}  // namespace

SocketAddress make_address(bool ipv4, const std::uint8_t* ip, std::uint16_t port) {
  SocketAddress address;
  if (ipv4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&address.storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, ip, 4);
    address.length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    std::memcpy(&in6->sin6_addr, ip, 16);
    address.length = sizeof(sockaddr_in6);
  }
  return address;
}

Expected<UdpPort, std::string> UdpPort::open(const std::string& address, const UdpPortOptions& options) {
  UdpPort port;
  port.netns_ = NetworkNamespace::of_this_thread();
  port.options_ = options;
  std::uint8_t ip[16];
  if (::inet_pton(AF_INET, address.c_str(), ip) == 1) {
    port.ipv4_ = true;
    port.gid_ = gid_from_ipv4({ip[0], ip[1], ip[2], ip[3]});
  } else if (::inet_pton(AF_INET6, address.c_str(), ip) == 1) {
    port.ipv4_ = false;
    std::memcpy(port.gid_.data(), ip, 16);
  } else {
    return unexpected("not an IPv4 or IPv6 address: '" + address + "'");
  }
  std::uint16_t receiving_port = options.receives_on_port ? options.port : 0;
  auto fd = bound_socket(port.netns_, port.ipv4_, ip, receiving_port, options.receive_buffer_bytes, options.gro);
  if (!fd) {
    int error = errno;  // the failed call's, for the caller (EADDRINUSE: another device may hold it)
    std::string text = "cannot bind " + address + " port " + std::to_string(options.port) + ": " + fd.error();
    errno = error;
    return unexpected(text);
  }
  port.receive_fd_ = *fd;
  port.io_->loopback_receivers.open_query_socket(port.netns_);
  port.receive_buffer_ = {granted_receive_buffer(*fd), static_cast<std::size_t>(options.receive_buffer_bytes)};
  port.epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = port.receive_fd_;
  if (port.epoll_fd_ < 0 || ::epoll_ctl(port.epoll_fd_, EPOLL_CTL_ADD, port.receive_fd_, &event) != 0) {
    return unexpected(errno_text("epoll"));
  }
  return port;
}

UdpPort::UdpPort() : io_(std::make_unique<Io>()) {}

UdpPort::UdpPort(UdpPort&& other) noexcept { *this = std::move(other); }

UdpPort& UdpPort::operator=(UdpPort&& other) noexcept {
  if (this != &other) {
    close_all();
    gid_ = other.gid_;
    netns_ = std::move(other.netns_);
    ipv4_ = other.ipv4_;
    options_ = other.options_;
    receive_fd_ = other.receive_fd_;
    receive_buffer_ = other.receive_buffer_;
    epoll_fd_ = other.epoll_fd_;
    group_fds_ = std::move(other.group_fds_);
    send_fds_ = std::move(other.send_fds_);
    send_errors_ = other.send_errors_;
    gso_sends_ = other.gso_sends_;
    gro_receives_ = other.gro_receives_;
    io_ = std::move(other.io_);
    other.receive_fd_ = -1;
    other.epoll_fd_ = -1;
    other.group_fds_.clear();
    other.send_fds_.clear();
  }
  return *this;
}

UdpPort::~UdpPort() { close_all(); }

void UdpPort::close_all() {
  if (receive_fd_ >= 0) ::close(receive_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  for (auto& entry : send_fds_) ::close(entry.second);
  for (auto& entry : group_fds_) ::close(entry.second);
  receive_fd_ = -1;
  epoll_fd_ = -1;
  send_fds_.clear();
  group_fds_.clear();
}

int UdpPort::socket_for_source_port(std::uint16_t port) {
  auto it = send_fds_.find(port);
  if (it != send_fds_.end()) return it->second;
  const std::uint8_t* ip = ipv4_ ? gid_.data() + 12 : gid_.data();
  auto fd = bound_socket(netns_, ipv4_, ip, port, 0, false, /*reuse=*/true);
  if (!fd) return -1;
  int tos = kSendSocketTos;
  if (::setsockopt(*fd, ipv4_ ? IPPROTO_IP : IPPROTO_IPV6, ipv4_ ? IP_TOS : IPV6_TCLASS, &tos, sizeof tos) != 0) {
    io_->tos_in_every_send = true;
  }
  // Multicast leaves by the interface that holds our address (loopback's for
  // 127.0.0.0/8), never by the default route.
  if (ipv4_) {
    in_addr own;
    std::memcpy(&own, ip, 4);
    ::setsockopt(*fd, IPPROTO_IP, IP_MULTICAST_IF, &own, sizeof own);
  } else if (int interface = multicast_interface(); interface > 0) {
    ::setsockopt(*fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &interface, sizeof interface);
  }
  send_fds_.emplace(port, *fd);
  return *fd;
}

PortCounters UdpPort::counters() const {
  PortCounters counters;
  counters.send_errors = send_errors_;
  counters.gso_sends = gso_sends_;
  counters.gro_receives = gro_receives_;
  counters.loopback_waits = io_->loopback_receivers.waits();
  return counters;
}

// DF is set, so a datagram must fit the MTU of the interface that holds the
// bound address (the kernel refuses more with EMSGSIZE).
std::size_t UdpPort::max_datagram_length() const {
  return std::min<std::size_t>(65535, static_cast<std::size_t>(link_mtu_for_address(gid_)));
}

bool UdpPort::may_segment(const std::uint8_t* destination) const {
  if (io_->gso_refused) return false;
  switch (options_.gso) {
    case UdpGsoPolicy::never: return false;
    case UdpGsoPolicy::always: return true;
    case UdpGsoPolicy::where_bytes_unchanged: return !ipv4_ || is_loopback(destination, /*ipv4=*/true);
  }
  return false;
}

void UdpPort::rebuild_headers(std::uint8_t* payload, std::size_t payload_length, const void* source, int tos,
                              const Gid& destination, ReceivedDatagram& out) const {
  wire::UdpRepr udp;
  udp.dst_port = options_.port;
  udp.payload_length = static_cast<std::uint16_t>(payload_length);
  std::uint8_t* udp_header = payload - wire::kUdpHeaderLength;
  std::uint8_t* ip_header;
  if (ipv4_) {
    const auto* from = static_cast<const sockaddr_in*>(source);
    udp.src_port = ntohs(from->sin_port);
    wire::Ipv4Repr ip;
    ip.dscp = static_cast<std::uint8_t>(tos >> 2);
    ip.ecn = static_cast<wire::Ecn>(tos & 3);
    ip.identification = 0;  // not reported by the socket: the policy's assumption
    ip.dont_fragment = true;
    std::memcpy(ip.src.data(), &from->sin_addr, 4);
    std::copy_n(destination.begin() + 12, 4, ip.dst.begin());
    ip.payload_length = static_cast<std::uint16_t>(payload_length + wire::kUdpHeaderLength);
    ip_header = udp_header - wire::kIpv4HeaderLength;
    ip.emit(MutableByteSpan(ip_header, wire::kIpv4HeaderLength));
    out.icrc_checkable = options_.icrc == UdpIcrcPolicy::verify_assuming_id0;
  } else {
    const auto* from = static_cast<const sockaddr_in6*>(source);
    udp.src_port = ntohs(from->sin6_port);
    wire::Ipv6Repr ip;
    ip.dscp = static_cast<std::uint8_t>(tos >> 2);
    ip.ecn = static_cast<wire::Ecn>(tos & 3);
    std::memcpy(ip.src.data(), &from->sin6_addr, 16);
    ip.dst = destination;
    ip.payload_length = static_cast<std::uint16_t>(payload_length + wire::kUdpHeaderLength);
    ip_header = udp_header - wire::kIpv6HeaderLength;
    ip.emit(MutableByteSpan(ip_header, wire::kIpv6HeaderLength));
    out.icrc_checkable = true;
  }
  udp.emit(MutableByteSpan(udp_header, wire::kUdpHeaderLength));
  out.bytes = ByteSpan(ip_header, static_cast<std::size_t>(payload + payload_length - ip_header));
}

}  // namespace uroce::port
