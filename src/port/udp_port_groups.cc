// UdpPort's multicast groups: a socket per group, bound to the group's
// address and UDP port (with SO_REUSEADDR, so that every device of the
// host that joins gets its own copy) and joined on the interface of the
// port's address; arrivals on it get the group as their destination.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "port/interface_info.h"
#include "port/udp_port.h"
#include "port/udp_port_io.h"

namespace uroce::port {

int UdpPort::multicast_interface() const {
  auto interface = interface_with_address(gid_);
  return interface ? interface->index : 0;
}

std::errc UdpPort::join_group(const Gid& group) {
  if (!gid_is_multicast(group) || gid_is_ipv4(group) != ipv4_) return std::errc::operation_not_supported;
  if (group_fds_.contains(group)) return std::errc{};
  int interface = ipv4_ ? 0 : multicast_interface();
  if (!ipv4_ && interface == 0) return std::errc::operation_not_supported;  // which link is unknown
  int fd = netns_.open_socket(ipv4_ ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::errc::no_buffer_space;
  int one = 1, zero = 0;
  bool ok = ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0;
  SocketAddress bound = make_address(ipv4_, ipv4_ ? group.data() + 12 : group.data(), options_.port);
  if (ipv4_) {
    ip_mreqn membership{};
    std::memcpy(&membership.imr_multiaddr, group.data() + 12, 4);
    std::memcpy(&membership.imr_address, gid_.data() + 12, 4);
    ok = ok && ::setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) == 0 &&
         ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero) == 0 &&
         ::bind(fd, reinterpret_cast<const sockaddr*>(&bound.storage), bound.length) == 0 &&
         ::setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &membership, sizeof membership) == 0;
  } else {
    ipv6_mreq membership{};
    std::memcpy(&membership.ipv6mr_multiaddr, group.data(), 16);
    membership.ipv6mr_interface = static_cast<unsigned>(interface);
    ok = ok && ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) == 0 &&
         ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one) == 0 &&
         ::setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &zero, sizeof zero) == 0 &&
         ::bind(fd, reinterpret_cast<const sockaddr*>(&bound.storage), bound.length) == 0 &&
         ::setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &membership, sizeof membership) == 0;
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = fd;
  ok = ok && ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0;
  if (!ok) {
    std::errc error = errno == EADDRNOTAVAIL || errno == ENODEV ? std::errc::address_not_available
                                                                : std::errc::no_buffer_space;
    ::close(fd);
    return error;
  }
  if (io_->group_buffers.empty()) {
    io_->group_buffers.resize(kGroupDatagramsPerCall * (kReceiveHeadroom + kReceiveBufferPayload));
  }
  group_fds_.emplace(group, fd);
  return std::errc{};
}

void UdpPort::leave_group(const Gid& group) {
  auto found = group_fds_.find(group);
  if (found == group_fds_.end()) return;
  ::close(found->second);  // closing drops the membership and the epoll entry
  group_fds_.erase(found);
}

// Up to kGroupDatagramsPerCall datagrams in all, into the group buffers,
// appended to what receive() found on the port's own socket.
void UdpPort::receive_from_groups() {
  Io& io = *io_;
  constexpr std::size_t kSlot = kReceiveHeadroom + kReceiveBufferPayload;
  std::size_t slot = 0;
  for (const auto& [group, fd] : group_fds_) {
    while (slot < kGroupDatagramsPerCall) {
      std::uint8_t* payload = io.group_buffers.data() + slot * kSlot + kReceiveHeadroom;
      sockaddr_storage source{};
      iovec iov{payload, kReceiveBufferPayload};
      alignas(cmsghdr) char control[64];
      msghdr header{};
      header.msg_name = &source;
      header.msg_namelen = sizeof source;
      header.msg_iov = &iov;
      header.msg_iovlen = 1;
      header.msg_control = control;
      header.msg_controllen = sizeof control;
      ssize_t length = ::recvmsg(fd, &header, MSG_DONTWAIT);
      if (length <= 0) break;
      if ((header.msg_flags & MSG_TRUNC) != 0) continue;
      int tos = 0;
      for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg != nullptr; cmsg = CMSG_NXTHDR(&header, cmsg)) {
        if (cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_TOS) tos = *CMSG_DATA(cmsg);
        if (cmsg->cmsg_level == IPPROTO_IPV6 && cmsg->cmsg_type == IPV6_TCLASS) {
          std::memcpy(&tos, CMSG_DATA(cmsg), sizeof tos);
        }
      }
      ReceivedDatagram& datagram = io.received.emplace_back();
      rebuild_headers(payload, static_cast<std::size_t>(length), &source, tos, group, datagram);
      ++slot;
    }
  }
}

}  // namespace uroce::port
