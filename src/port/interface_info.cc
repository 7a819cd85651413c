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
  if (::ioctl(fd, SIOCGIFFLAGS, &request) == 0) info.is_loopback = (request.ifr_flags & IFF_LOOPBACK) != 0;
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

}  // namespace uroce::port
