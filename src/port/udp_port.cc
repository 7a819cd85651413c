// UdpPort: sockets, sendmsg with the datagram's TOS, recvmmsg with the
// arrival's TOS and destination, and the rebuilt IP/UDP headers.
#include "port/udp_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/udp.h"

namespace uroce::port {
namespace {

constexpr std::size_t kHeadroom = wire::kIpv6HeaderLength + wire::kUdpHeaderLength;
constexpr std::size_t kMaxPayload = kMaxDatagramLength;

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

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

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// A non-blocking UDP socket bound to ip:port with DF (IPv4) and TOS reporting.
Expected<int, std::string> bound_socket(bool ipv4, const std::uint8_t* ip, std::uint16_t port, int receive_buffer) {
  int fd = ::socket(ipv4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
  SocketAddress address = make_address(ipv4, ip, port);
  if (!ok) {
    std::string error = errno_text("setsockopt");
    ::close(fd);
    return unexpected(error);
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    std::string error = errno_text("bind");
    ::close(fd);
    return unexpected(error);
  }
  return fd;
}

}  // namespace

Expected<UdpPort, std::string> UdpPort::open(const std::string& address, const UdpPortOptions& options) {
  UdpPort port;
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
  auto fd = bound_socket(port.ipv4_, ip, options.port, options.receive_buffer_bytes);
  if (!fd) return unexpected("cannot bind " + address + " port " + std::to_string(options.port) + ": " + fd.error());
  port.receive_fd_ = *fd;
  return port;
}

UdpPort::UdpPort(UdpPort&& other) noexcept { *this = std::move(other); }

UdpPort& UdpPort::operator=(UdpPort&& other) noexcept {
  if (this != &other) {
    close_all();
    gid_ = other.gid_;
    ipv4_ = other.ipv4_;
    options_ = other.options_;
    receive_fd_ = other.receive_fd_;
    send_fds_ = std::move(other.send_fds_);
    send_errors_ = other.send_errors_;
    other.receive_fd_ = -1;
    other.send_fds_.clear();
  }
  return *this;
}

UdpPort::~UdpPort() { close_all(); }

void UdpPort::close_all() {
  if (receive_fd_ >= 0) ::close(receive_fd_);
  for (auto& entry : send_fds_) ::close(entry.second);
  receive_fd_ = -1;
  send_fds_.clear();
}

int UdpPort::socket_for_source_port(std::uint16_t port) {
  auto it = send_fds_.find(port);
  if (it != send_fds_.end()) return it->second;
  const std::uint8_t* ip = ipv4_ ? gid_.data() + 12 : gid_.data();
  auto fd = bound_socket(ipv4_, ip, port, 0);
  if (!fd) return -1;
  send_fds_.emplace(port, *fd);
  return *fd;
}

bool UdpPort::send(ByteSpan datagram) {
  std::size_t ip_length = ipv4_ ? wire::kIpv4HeaderLength : wire::kIpv6HeaderLength;
  if (datagram.size() < ip_length + wire::kUdpHeaderLength) {
    ++send_errors_;
    return true;
  }
  // The engine writes a plain 20-byte IPv4 header (no options) or a 40-byte IPv6 one.
  const std::uint8_t* ip = datagram.data();
  int tos = ipv4_ ? ip[1] : ((load_be16(ip) >> 4) & 0xFF);
  const std::uint8_t* destination = ipv4_ ? ip + 16 : ip + 24;
  const std::uint8_t* udp = ip + ip_length;
  std::uint16_t source_port = load_be16(udp);
  std::uint16_t destination_port = load_be16(udp + 2);
  int fd = socket_for_source_port(source_port);
  if (fd < 0) {
    ++send_errors_;
    return true;
  }
  SocketAddress to = make_address(ipv4_, destination, destination_port);
  ByteSpan payload = datagram.subspan(ip_length + wire::kUdpHeaderLength);
  iovec iov{const_cast<std::uint8_t*>(payload.data()), payload.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_name = &to.storage;
  message.msg_namelen = to.length;
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&message);
  cmsg->cmsg_level = ipv4_ ? IPPROTO_IP : IPPROTO_IPV6;
  cmsg->cmsg_type = ipv4_ ? IP_TOS : IPV6_TCLASS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &tos, sizeof tos);
  if (::sendmsg(fd, &message, 0) >= 0) return true;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return false;
  ++send_errors_;  // unreachable peer and the like: the transport's timers recover
  return true;
}

std::size_t UdpPort::receive(std::span<ReceivedDatagram> out) {
  constexpr std::size_t kBatch = 32;
  std::size_t count = std::min(out.size(), kBatch);
  if (count == 0) return 0;
  mmsghdr messages[kBatch] = {};
  iovec iovs[kBatch];
  sockaddr_storage sources[kBatch];
  alignas(cmsghdr) char controls[kBatch][64];
  for (std::size_t i = 0; i < count; ++i) {
    out[i].buffer.resize(kHeadroom + kMaxPayload);
    iovs[i] = iovec{out[i].buffer.data() + kHeadroom, kMaxPayload};
    msghdr& header = messages[i].msg_hdr;
    header.msg_name = &sources[i];
    header.msg_namelen = sizeof sources[i];
    header.msg_iov = &iovs[i];
    header.msg_iovlen = 1;
    header.msg_control = controls[i];
    header.msg_controllen = sizeof controls[i];
  }
  int received = ::recvmmsg(receive_fd_, messages, static_cast<unsigned>(count), MSG_DONTWAIT, nullptr);
  if (received <= 0) return 0;
  for (int i = 0; i < received; ++i) {
    ReceivedDatagram& datagram = out[i];
    const msghdr& header = messages[i].msg_hdr;
    auto payload_length = static_cast<std::size_t>(messages[i].msg_len);
    int tos = 0;
    for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg != nullptr;
         cmsg = CMSG_NXTHDR(const_cast<msghdr*>(&header), cmsg)) {
      if ((cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_TOS)) tos = *CMSG_DATA(cmsg);
      if (cmsg->cmsg_level == IPPROTO_IPV6 && cmsg->cmsg_type == IPV6_TCLASS) {
        std::memcpy(&tos, CMSG_DATA(cmsg), sizeof tos);
      }
    }
    std::uint8_t* udp = datagram.buffer.data() + kHeadroom - wire::kUdpHeaderLength;
    wire::UdpRepr udp_header;
    udp_header.dst_port = options_.port;
    udp_header.payload_length = static_cast<std::uint16_t>(payload_length);
    if (ipv4_) {
      const auto* source = reinterpret_cast<const sockaddr_in*>(&sources[i]);
      udp_header.src_port = ntohs(source->sin_port);
      wire::Ipv4Repr ip;
      ip.dscp = static_cast<std::uint8_t>(tos >> 2);
      ip.ecn = static_cast<wire::Ecn>(tos & 3);
      ip.identification = 0;  // not reported by the socket: the policy's assumption
      ip.dont_fragment = true;
      std::memcpy(ip.src.data(), &source->sin_addr, 4);
      std::copy_n(gid_.begin() + 12, 4, ip.dst.begin());
      ip.payload_length = static_cast<std::uint16_t>(payload_length + wire::kUdpHeaderLength);
      datagram.start = kHeadroom - wire::kUdpHeaderLength - wire::kIpv4HeaderLength;
      ip.emit(MutableByteSpan(datagram.buffer).subspan(datagram.start, wire::kIpv4HeaderLength));
      datagram.icrc_checkable = options_.icrc == UdpIcrcPolicy::verify_assuming_id0;
    } else {
      const auto* source = reinterpret_cast<const sockaddr_in6*>(&sources[i]);
      udp_header.src_port = ntohs(source->sin6_port);
      wire::Ipv6Repr ip;
      ip.dscp = static_cast<std::uint8_t>(tos >> 2);
      ip.ecn = static_cast<wire::Ecn>(tos & 3);
      std::memcpy(ip.src.data(), &source->sin6_addr, 16);
      ip.dst = gid_;
      ip.payload_length = static_cast<std::uint16_t>(payload_length + wire::kUdpHeaderLength);
      datagram.start = 0;
      ip.emit(MutableByteSpan(datagram.buffer).first(wire::kIpv6HeaderLength));
      datagram.icrc_checkable = true;
    }
    udp_header.emit(MutableByteSpan(udp, wire::kUdpHeaderLength));
    datagram.length = kHeadroom + payload_length - datagram.start;
  }
  return static_cast<std::size_t>(received);
}

}  // namespace uroce::port
