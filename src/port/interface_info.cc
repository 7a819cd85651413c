// Interface lookups through getifaddrs and the SIOCGIF* ioctls.
#include "port/interface_info.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "wire/bth.h"
#include "wire/ext_headers.h"
#include "wire/icrc.h"
#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/udp.h"

namespace uroce::port {
namespace {

struct IfaddrsFree {
  void operator()(ifaddrs* list) const { ::freeifaddrs(list); }
};
using IfaddrsList = std::unique_ptr<ifaddrs, IfaddrsFree>;

IfaddrsList local_addresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return nullptr;
  return IfaddrsList(list);
}

std::optional<Gid> gid_of(const sockaddr* address) {
  if (address == nullptr) return std::nullopt;
  if (address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    std::array<std::uint8_t, 4> ip;
    std::memcpy(ip.data(), &in->sin_addr, 4);
    return gid_from_ipv4(ip);
  }
  if (address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    Gid gid;
    std::memcpy(gid.data(), &in6->sin6_addr, 16);
    return gid;
  }
  return std::nullopt;
}

}  // namespace

Expected<InterfaceInfo, std::string> find_interface(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ) return unexpected("not an interface name: '" + name + "'");
  InterfaceInfo info;
  info.name = name;
  info.index = static_cast<int>(::if_nametoindex(name.c_str()));
  if (info.index == 0) return unexpected("no interface named '" + name + "' in this network namespace");
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unexpected(std::string("socket: ") + std::strerror(errno));
  ifreq request{};
  std::memcpy(request.ifr_name, name.c_str(), name.size());
  if (::ioctl(fd, SIOCGIFMTU, &request) == 0) info.mtu = request.ifr_mtu;
  if (::ioctl(fd, SIOCGIFHWADDR, &request) == 0) {
    std::memcpy(info.mac.data(), request.ifr_hwaddr.sa_data, 6);
  }
  ::close(fd);
  return info;
}

std::optional<InterfaceInfo> interface_with_address(const Gid& gid) {
  IfaddrsList list = local_addresses();
  for (ifaddrs* entry = list.get(); entry != nullptr; entry = entry->ifa_next) {
    if (gid_of(entry->ifa_addr) != gid) continue;
    auto info = find_interface(entry->ifa_name);
    if (info) return *info;
  }
  return std::nullopt;
}

std::optional<Gid> first_ipv4_address(const std::string& interface) {
  IfaddrsList list = local_addresses();
  for (ifaddrs* entry = list.get(); entry != nullptr; entry = entry->ifa_next) {
    if (interface != entry->ifa_name || entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    return gid_of(entry->ifa_addr);
  }
  return std::nullopt;
}

int link_mtu_for_address(const Gid& gid) {
  if (auto interface = interface_with_address(gid)) return interface->mtu;
  bool loopback = gid_is_ipv4(gid) ? gid[12] == 127 : gid == Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return loopback ? 65536 : 1500;
}

PathMtu largest_path_mtu(std::size_t link_mtu, bool ipv4) {
  std::size_t ip = ipv4 ? wire::kIpv4HeaderLength : wire::kIpv6HeaderLength;
  constexpr std::size_t kLargestExtensionHeaders = wire::AtomicEthRepr::kLength;  // RETH + ImmDt is 20
  constexpr std::size_t kLargestPad = 3;
  std::size_t overhead =
      ip + wire::kUdpHeaderLength + wire::kBthLength + kLargestExtensionHeaders + kLargestPad + wire::kIcrcLength;
  for (PathMtu mtu : {PathMtu::mtu4096, PathMtu::mtu2048, PathMtu::mtu1024, PathMtu::mtu512}) {
    if (mtu_bytes(mtu) + overhead <= link_mtu) return mtu;
  }
  return PathMtu::mtu256;
}

std::size_t granted_receive_buffer(int fd) {
  int doubled = 0;
  socklen_t length = sizeof doubled;
  if (::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &doubled, &length) != 0 || doubled <= 0) return 0;
  return static_cast<std::size_t>(doubled) / 2;
}

}  // namespace uroce::port
