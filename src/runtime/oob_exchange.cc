// OobChannel: blocking TCP with poll() timeouts; QpConnectionInfo as one line
// of colon-separated hex fields.
#include "runtime/oob_exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>

namespace uroce::runtime {
namespace {

struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
};

std::optional<Address> parse_address(const std::string& text, std::uint16_t port) {
  Address address;
  auto* in = reinterpret_cast<sockaddr_in*>(&address.storage);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  if (::inet_pton(AF_INET, text.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    address.length = sizeof(sockaddr_in);
    return address;
  }
  if (::inet_pton(AF_INET6, text.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    address.length = sizeof(sockaddr_in6);
    address.family = AF_INET6;
    return address;
  }
  return std::nullopt;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

std::string QpConnectionInfo::to_line() const {
  char gid_hex[33];
  for (int i = 0; i < 16; ++i) std::snprintf(gid_hex + 2 * i, 3, "%02x", gid[i]);
  char line[160];
  std::snprintf(line, sizeof line, "%06x:%06x:%s:%08x:%016" PRIx64 ":%u", qpn, psn, gid_hex, rkey, address, mtu);
  return line;
}

namespace {

// One hexadecimal field of at most max_digits digits, the whole of text.
template <typename T>
std::optional<T> hex_field(std::string_view text, std::size_t max_digits) {
  T value{};
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

// Strict: exactly six fields, hex digits only where hex is due, no overflow,
// no trailing bytes but a line end, and an MTU the IBTA defines.
std::optional<QpConnectionInfo> QpConnectionInfo::from_line(const std::string& line) {
  std::string_view rest(line);
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.remove_suffix(1);
  std::string_view fields[6];
  for (std::size_t i = 0; i < 6; ++i) {
    std::size_t colon = rest.find(':');
    if ((i < 5) != (colon != std::string_view::npos)) return std::nullopt;
    fields[i] = rest.substr(0, colon);
    rest = i < 5 ? rest.substr(colon + 1) : std::string_view{};
  }
  auto qpn = hex_field<std::uint32_t>(fields[0], 6);
  auto psn = hex_field<std::uint32_t>(fields[1], 6);
  auto rkey = hex_field<std::uint32_t>(fields[3], 8);
  auto address = hex_field<std::uint64_t>(fields[4], 16);
  std::uint32_t mtu = 0;
  auto [mtu_end, mtu_error] = std::from_chars(fields[5].data(), fields[5].data() + fields[5].size(), mtu);
  bool mtu_ok = mtu_error == std::errc{} && mtu_end == fields[5].data() + fields[5].size() &&
                (mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096);
  if (!qpn || !psn || !rkey || !address || !mtu_ok || fields[2].size() != 32) return std::nullopt;
  QpConnectionInfo info;
  for (std::size_t i = 0; i < 16; ++i) {
    auto byte = hex_field<std::uint8_t>(fields[2].substr(2 * i, 2), 2);
    if (!byte) return std::nullopt;
    info.gid[i] = *byte;
  }
  info.qpn = *qpn;
  info.psn = *psn;
  info.rkey = *rkey;
  info.address = *address;
  info.mtu = mtu;
  return info;
}

Expected<OobChannel, std::string> OobChannel::accept(const std::string& text, std::uint16_t port,
                                                     std::chrono::milliseconds timeout) {
  auto address = parse_address(text, port);
  if (!address) return unexpected("not an IPv4 or IPv6 address: '" + text + "'");
  int listener = ::socket(address->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return unexpected(errno_text("socket"));
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address->storage), address->length) != 0 ||
      ::listen(listener, 1) != 0) {
    std::string error = errno_text("cannot listen on " + text + " port " + std::to_string(port));
    ::close(listener);
    return unexpected(error);
  }
  pollfd waiting{listener, POLLIN, 0};
  int ready = ::poll(&waiting, 1, static_cast<int>(timeout.count()));
  int fd = ready > 0 ? ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) : -1;
  ::close(listener);
  if (fd < 0) return unexpected("no peer connected to " + text + " port " + std::to_string(port) + " in time");
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return OobChannel(fd);
}

Expected<OobChannel, std::string> OobChannel::connect(const std::string& text, std::uint16_t port,
                                                      std::chrono::milliseconds timeout) {
  auto address = parse_address(text, port);
  if (!address) return unexpected("not an IPv4 or IPv6 address: '" + text + "'");
  auto give_up = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int fd = ::socket(address->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return unexpected(errno_text("socket"));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address->storage), address->length) == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return OobChannel(fd);
    }
    std::string error = errno_text("cannot connect to " + text + " port " + std::to_string(port));
    ::close(fd);
    if (std::chrono::steady_clock::now() >= give_up) return unexpected(error);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

OobChannel::OobChannel(OobChannel&& other) noexcept { *this = std::move(other); }

OobChannel& OobChannel::operator=(OobChannel&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    buffered_ = std::move(other.buffered_);
    other.fd_ = -1;
  }
  return *this;
}

OobChannel::~OobChannel() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<bool, std::string> OobChannel::send_line(const std::string& line) {
  std::string data = line + "\n";
  std::size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return unexpected(errno_text("the peer's control connection"));
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

Expected<std::string, std::string> OobChannel::receive_line(std::chrono::milliseconds timeout) {
  auto give_up = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    if (buffered_.size() > 4096) return unexpected(std::string("the peer sent a line too long for the exchange"));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    pollfd waiting{fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&waiting, 1, static_cast<int>(left.count())) <= 0) {
      return unexpected(std::string("the peer said nothing in time"));
    }
    char chunk[512];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n == 0) return unexpected(std::string("the peer closed the control connection"));
    if (n < 0) {
      if (errno == EINTR) continue;
      return unexpected(errno_text("the peer's control connection"));
    }
    buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

Expected<std::optional<std::string>, std::string> OobChannel::try_receive_line() {
  if (buffered_.find('\n') == std::string::npos) {
    char chunk[512];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n == 0) return unexpected(std::string("the peer closed the control connection"));
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return std::optional<std::string>();
      return unexpected(errno_text("the peer's control connection"));
    }
    buffered_.append(chunk, static_cast<std::size_t>(n));
    if (buffered_.find('\n') == std::string::npos) {
      if (buffered_.size() > 4096) return unexpected(std::string("the peer sent a line too long for the exchange"));
      return std::optional<std::string>();
    }
  }
  auto line = receive_line(std::chrono::milliseconds(0));
  if (!line) return unexpected(line.error());
  return std::optional<std::string>(*line);
}

Expected<QpConnectionInfo, std::string> OobChannel::exchange(const QpConnectionInfo& local,
                                                             std::chrono::milliseconds timeout) {
  if (auto sent = send_line(local.to_line()); !sent) return unexpected(sent.error());
  auto line = receive_line(timeout);
  if (!line) return unexpected(line.error());
  auto remote = QpConnectionInfo::from_line(*line);
  if (!remote) return unexpected("the peer's connection info is malformed: '" + *line + "'");
  return *remote;
}

}  // namespace uroce::runtime
