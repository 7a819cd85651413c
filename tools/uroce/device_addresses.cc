// device_address_problem(): parses each address and asks the kernel, by
// binding a UDP socket to it, whether this host holds it.
#include "tools/uroce/device_addresses.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace uroce::tools {
namespace {

// Whether a UDP socket can bind ADDRESS (any port); errno's text if not.
std::optional<std::string> bind_problem(const sockaddr* address, socklen_t length) {
  int fd = ::socket(address->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string(std::strerror(errno));
  std::optional<std::string> problem;
  if (::bind(fd, address, length) != 0) {
    problem = errno == EADDRNOTAVAIL ? std::string("not an address of this host") : std::string(std::strerror(errno));
  }
  ::close(fd);
  return problem;
}

std::optional<std::string> one_address_problem(const std::string& text, bool raw_port) {
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  if (::inet_pton(AF_INET, text.c_str(), &v4.sin_addr) == 1) {
    return raw_port ? std::nullopt : bind_problem(reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
  }
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  if (::inet_pton(AF_INET6, text.c_str(), &v6.sin6_addr) == 1) {
    if (raw_port) return std::string("the raw Ethernet port (--interface) takes IPv4 addresses only");
    return bind_problem(reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
  }
  return std::string("not an IPv4 or IPv6 address");
}

}  // namespace

std::optional<std::string> device_address_problem(const std::string& list, bool raw_port) {
  std::istringstream entries(list);
  for (std::string address; std::getline(entries, address, ',');) {
    if (address.empty()) continue;
    if (auto problem = one_address_problem(address, raw_port)) return "'" + address + "': " + *problem;
  }
  return std::nullopt;
}

}  // namespace uroce::tools
