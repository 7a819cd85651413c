// RawPort: opening the AF_PACKET socket on an interface (with a kernel
// filter for ARP and RoCEv2 to our address or a multicast group), reserving
// the UDP port where the kernel holds the address, ARP, and joining groups. The batched frame I/O is in raw_port_io.cc.
#include "port/raw_port.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "port/interface_info.h"
#include "port/link_local.h"
#include "port/raw_port_io.h"
#include "wire/ip_datagram.h"

namespace uroce::port {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Compiles a pcap filter expression for Ethernet frames into classic BPF and
// attaches it to the socket, so the kernel hands over only what matches.
// Returns the reason it could not.
std::optional<std::string> attach_filter(int fd, const std::string& expression) {
  pcap_t* dead = ::pcap_open_dead(DLT_EN10MB, 65535);
  if (dead == nullptr) return std::string("pcap_open_dead failed");
  bpf_program program{};
  if (::pcap_compile(dead, &program, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
    std::string error = std::string("filter '") + expression + "': " + ::pcap_geterr(dead);
    ::pcap_close(dead);
    return error;
  }
  sock_fprog fprog{static_cast<unsigned short>(program.bf_len), reinterpret_cast<sock_filter*>(program.bf_insns)};
  int attached = ::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog);
  std::string error = attached != 0 ? errno_text("SO_ATTACH_FILTER") : "";
  ::pcap_freecode(&program);
  ::pcap_close(dead);
  if (attached != 0) return error;
  return std::nullopt;
}

// Binds UDP port on ip with a filter that drops every arrival. Returns -1
// with errno EADDRNOTAVAIL when the kernel does not hold ip.
int reserve_udp_port(const Ipv4Address& ip, std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sock_filter drop_all{BPF_RET | BPF_K, 0, 0, 0};
  sock_fprog program{1, &drop_all};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  std::memcpy(&address.sin_addr, ip.data(), 4);
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) != 0 ||
      ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

// The same on the link-local address of interface: bound freely (the kernel
// may hold the address only once duplicate detection is over, or never), so
// that it never answers a RoCE datagram to our GID 0 with port unreachable.
int reserve_link_local_udp_port(const Gid& address, unsigned interface, std::uint16_t port) {
  int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sock_filter drop_all{BPF_RET | BPF_K, 0, 0, 0};
  sock_fprog program{1, &drop_all};
  int one = 1;
  sockaddr_in6 bound{};
  bound.sin6_family = AF_INET6;
  bound.sin6_port = htons(port);
  bound.sin6_scope_id = interface;
  std::memcpy(&bound.sin6_addr, address.data(), address.size());
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) != 0 ||
      ::setsockopt(fd, SOL_IPV6, IPV6_FREEBIND, &one, sizeof one) != 0 ||
      ::bind(fd, reinterpret_cast<const sockaddr*>(&bound), sizeof bound) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The interface's membership of an IPv4 group's MAC (group: a 224.0.0.0/4 address).
packet_mreq group_membership(int interface, const Ipv4Address& group) {
  packet_mreq membership{};
  membership.mr_ifindex = interface;
  membership.mr_type = PACKET_MR_MULTICAST;
  membership.mr_alen = ETH_ALEN;
  wire::MacAddress mac = *mac_of_ipv4_group(group);
  std::copy(mac.begin(), mac.end(), membership.mr_address);
  return membership;
}

std::string dotted(const Ipv4Address& ip) {
  return std::to_string(ip[0]) + "." + std::to_string(ip[1]) + "." + std::to_string(ip[2]) + "." +
         std::to_string(ip[3]);
}

}  // namespace

RawPort::RawPort() : io_(std::make_unique<Io>()) {}

RawPort::~RawPort() {
  if (fd_ >= 0) ::close(fd_);
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
  if (reserve_link_local_fd_ >= 0) ::close(reserve_link_local_fd_);
}

Expected<std::unique_ptr<RawPort>, std::string> RawPort::open(const std::string& interface,
                                                              const std::string& address,
                                                              const RawPortOptions& options) {
  auto info = find_interface(interface);
  if (!info) return unexpected(info.error());
  std::unique_ptr<RawPort> port(new RawPort());
  port->neighbors_ = NeighborTable(options.neighbors);
  port->mtu_ = info->mtu;
  port->interface_index_ = info->index;
  port->mac_ = info->mac;
  if (address.empty()) {
    std::optional<Gid> first = first_ipv4_address(interface);
    if (!first) return unexpected("interface " + interface + " has no IPv4 address: give one with the address");
    std::copy_n(first->begin() + 12, 4, port->ip_.begin());
  } else if (::inet_pton(AF_INET, address.c_str(), port->ip_.data()) != 1) {
    std::uint8_t ipv6[16];
    if (::inet_pton(AF_INET6, address.c_str(), ipv6) == 1) {
      return unexpected("the raw port speaks IPv4 only (no IPv6 neighbour discovery yet): use the UDP port for " +
                        address);
    }
    return unexpected("not an IPv4 address: '" + address + "'");
  }
  port->gid_ = gid_from_ipv4(port->ip_);
  port->link_local_ = link_local_of(port->mac_);

  port->reserve_fd_ = reserve_udp_port(port->ip_, options.udp_port);
  if (port->reserve_fd_ < 0) {
    if (errno != EADDRNOTAVAIL) {
      return unexpected("cannot reserve UDP port " + std::to_string(options.udp_port) + " on " + dotted(port->ip_) +
                        " (another RoCEv2 device there?): " + std::strerror(errno));
    }
    port->answer_arp_ = true;  // the kernel does not hold the address: nobody else answers for it
  }
  port->reserve_link_local_fd_ =
      reserve_link_local_udp_port(port->link_local_, static_cast<unsigned>(info->index), options.udp_port);

  // Protocol 0 until the filter is on, so nothing unfiltered queues up first.
  port->fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (port->fd_ < 0) {
    if (errno == EPERM) return unexpected(std::string("the raw port needs CAP_NET_RAW (run as root)"));
    return unexpected(errno_text("socket(AF_PACKET)"));
  }
  char link_local[INET6_ADDRSTRLEN];
  ::inet_ntop(AF_INET6, port->link_local_.data(), link_local, sizeof link_local);
  std::string udp_port = std::to_string(options.udp_port);
  std::string expression = "arp or ((ip dst " + dotted(port->ip_) + " or ip multicast) and udp dst port " + udp_port +
                           ") or (ip6 dst " + link_local + " and udp dst port " + udp_port + ")";
  if (auto failed = attach_filter(port->fd_, expression)) return unexpected(*failed);
  int one = 1;
  // Our own sends are not arrivals; and frames go straight to the driver.
  ::setsockopt(port->fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
  ::setsockopt(port->fd_, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
  int buffer = options.receive_buffer_bytes;
  if (::setsockopt(port->fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) != 0) {
    ::setsockopt(port->fd_, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  }
  port->receive_buffer_ = {granted_receive_buffer(port->fd_), static_cast<std::size_t>(buffer)};
  sockaddr_ll link{};
  link.sll_family = AF_PACKET;
  link.sll_protocol = htons(ETH_P_ALL);
  link.sll_ifindex = info->index;
  if (::bind(port->fd_, reinterpret_cast<const sockaddr*>(&link), sizeof link) != 0) {
    return unexpected(errno_text(("bind to " + interface).c_str()));
  }
  port->io_->prepare(static_cast<std::size_t>(info->mtu));
  return port;
}

std::errc RawPort::join_group(const Gid& group) {
  if (!gid_is_multicast(group) || !gid_is_ipv4(group)) return std::errc::operation_not_supported;
  Ipv4Address ip;
  std::copy_n(group.begin() + 12, 4, ip.begin());
  if (std::find(groups_.begin(), groups_.end(), ip) != groups_.end()) return std::errc{};
  packet_mreq membership = group_membership(interface_index_, ip);
  if (::setsockopt(fd_, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &membership, sizeof membership) != 0) {
    return std::errc::no_buffer_space;
  }
  groups_.push_back(ip);
  return std::errc{};
}

void RawPort::leave_group(const Gid& group) {
  Ipv4Address ip;
  std::copy_n(group.begin() + 12, 4, ip.begin());
  auto found = std::find(groups_.begin(), groups_.end(), ip);
  if (found == groups_.end()) return;
  packet_mreq membership = group_membership(interface_index_, ip);
  ::setsockopt(fd_, SOL_PACKET, PACKET_DROP_MEMBERSHIP, &membership, sizeof membership);
  groups_.erase(found);
}

std::size_t RawPort::write_ethernet_header(std::uint8_t* out, const wire::MacAddress& to,
                                           std::uint16_t ethertype) const {
  wire::EthernetRepr ethernet;
  ethernet.dst = to;
  ethernet.src = mac_;
  ethernet.ethertype = ethertype;
  ethernet.emit(MutableByteSpan(out, wire::kEthernetHeaderLength));
  return wire::kEthernetHeaderLength;
}

void RawPort::send_arp(wire::ArpOperation operation, const wire::MacAddress& to, Ipv4Address target_ip,
                       const wire::MacAddress& target_mac) {
  // 60 bytes: the shortest Ethernet frame without its FCS.
  std::array<std::uint8_t, 60> frame{};
  std::size_t at = write_ethernet_header(frame.data(), to, wire::kEthertypeArp);
  wire::ArpRepr arp;
  arp.operation = operation;
  arp.sender_mac = mac_;
  arp.sender_ip = ip_;
  arp.target_mac = target_mac;
  arp.target_ip = target_ip;
  arp.emit(MutableByteSpan(frame.data() + at, wire::kArpLength));
  if (::send(fd_, frame.data(), frame.size(), 0) < 0) {
    ++counters_.send_errors;
  } else if (operation == wire::ArpOperation::request) {
    ++counters_.arp_requests;
  }
}

// RFC 826: learn the sender when the packet is for us or the sender is
// already known; answer requests for our address when the kernel does not.
void RawPort::on_arp(ByteSpan packet) {
  auto arp = wire::ArpRepr::parse(packet);
  if (!arp) {
    ++counters_.foreign_frames;
    return;
  }
  bool for_us = arp->target_ip == ip_;
  if (arp->sender_ip != Ipv4Address{} && (for_us || neighbors_.knows(arp->sender_ip))) {
    send_released(neighbors_.learn(arp->sender_ip, arp->sender_mac));
  }
  if (for_us && answer_arp_ && arp->operation == wire::ArpOperation::request) {
    send_arp(wire::ArpOperation::reply, arp->sender_mac, arp->sender_ip, arp->sender_mac);
  }
}

void RawPort::send_released(std::vector<std::vector<std::uint8_t>> datagrams) {
  if (datagrams.empty()) return;
  // Held as bytes: described again by the wire layer.
  std::vector<DescribedDatagram> described;
  for (std::vector<std::uint8_t>& datagram : datagrams) {
    auto transmit = wire::describe_transmit(datagram);
    if (transmit) described.push_back(DescribedDatagram{datagram, *transmit});
  }
  std::span<const DescribedDatagram> rest(described);
  // Back-pressure here has nobody to offer the rest to later: what the
  // socket refuses counts as lost, and the transport's timers resend it.
  while (!rest.empty()) {
    std::size_t taken = send(rest);
    if (taken == 0) {
      counters_.send_errors += rest.size();
      break;
    }
    rest = rest.subspan(taken);
  }
}

}  // namespace uroce::port
