// The r* socket calls librdmacm exports (rdma/rsocket.h) over stream
// rsockets (stream_socket.h). A socket's number is an fd of its own (an
// eventfd that is never signalled), so it never collides with the
// program's real fds, which rpoll and rselect (rpoll.cc) pass through.
// Datagram rsockets are not served: rsocket(SOCK_DGRAM) fails with ENOSYS.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "rsockets/socket_table.h"
#include "rsockets/stream_socket.h"

namespace uroce::rsockets {

std::mutex& table_lock() {
  static auto* lock = new std::mutex;
  return *lock;
}

std::map<int, std::shared_ptr<StreamSocket>>& table() {
  static auto* sockets = new std::map<int, std::shared_ptr<StreamSocket>>;  // outlives exit handlers
  return *sockets;
}

std::shared_ptr<StreamSocket> find_socket(int fd) {
  std::lock_guard lock(table_lock());
  auto it = table().find(fd);
  return it == table().end() ? nullptr : it->second;
}

namespace {

int insert(std::shared_ptr<StreamSocket> socket) {
  int fd = ::eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return -1;
  std::lock_guard lock(table_lock());
  table()[fd] = std::move(socket);
  return fd;
}

void copy_address(const sockaddr* from, sockaddr* to, socklen_t* length) {
  if (to == nullptr || length == nullptr) return;
  socklen_t size = from->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  std::memcpy(to, from, std::min(size, *length));
  *length = size;
}

template <typename Call>
auto with_socket(int fd, Call call) -> decltype(call(std::declval<StreamSocket&>())) {
  std::shared_ptr<StreamSocket> socket = find_socket(fd);
  if (socket == nullptr) {
    errno = EBADF;
    return -1;
  }
  std::lock_guard lock(socket->lock);
  return call(*socket);
}

int set_option(StreamSocket& socket, int level, int name, const void* value, socklen_t length) {
  if (value == nullptr || length < static_cast<socklen_t>(sizeof(int))) return fail(EINVAL);
  int number = 0;
  std::memcpy(&number, value, sizeof number);
  auto as_u16 = [](int v) { return static_cast<std::uint16_t>(std::clamp(v, 0, int{kMaxQueue})); };
  SocketOptions& o = socket.options_;
  bool unconnected = !socket.connected();
  if (level == SOL_SOCKET) {
    switch (name) {
      case SO_REUSEADDR: o.reuse_address = number != 0; return 0;
      case SO_KEEPALIVE: o.keepalive = number != 0; return 0;  // kept, reported; no probes are sent
      case SO_SNDBUF: if (unconnected && number > 0) o.send_buffer = static_cast<std::uint32_t>(number) << 1; return 0;
      case SO_RCVBUF: if (unconnected && number > 0) o.receive_buffer = static_cast<std::uint32_t>(number) << 1; return 0;
      case SO_LINGER: case SO_OOBINLINE: return 0;
      default: return fail(ENOTSUP);
    }
  }
  if (level == IPPROTO_TCP) {
    if (name == TCP_NODELAY) { o.no_delay = number != 0; return 0; }  // every send goes at once anyway
    if (name == TCP_KEEPIDLE) { o.keepalive_idle = number; return 0; }
    if (name == TCP_MAXSEG) return 0;
    return fail(ENOTSUP);
  }
  if (level == SOL_RDMA) {
    if (!unconnected) return fail(EINVAL);
    switch (name) {
      case RDMA_SQSIZE: o.send_queue = as_u16(number); return 0;
      case RDMA_RQSIZE: o.receive_queue = as_u16(number); return 0;
      case RDMA_INLINE: o.inline_size = as_u16(number); return 0;
      case RDMA_IOMAPSIZE: o.iomap_size = iomap_size_value(iomap_size_scale(as_u16(number))); return 0;
      case RDMA_ROUTE: return 0;  // routes are resolved by uroce's rdma_cm
      default: return fail(ENOTSUP);
    }
  }
  if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) return 0;
  return fail(ENOTSUP);
}

int get_option(StreamSocket& socket, int level, int name, void* value, socklen_t* length) {
  if (value == nullptr || length == nullptr || *length < static_cast<socklen_t>(sizeof(int))) return fail(EINVAL);
  const SocketOptions& o = socket.options_;
  int number = 0;
  if (level == SOL_SOCKET && name == SO_ERROR) number = socket.pending_error();
  else if (level == SOL_SOCKET && name == SO_REUSEADDR) number = o.reuse_address;
  else if (level == SOL_SOCKET && name == SO_KEEPALIVE) number = o.keepalive;
  else if (level == SOL_SOCKET && name == SO_SNDBUF) number = static_cast<int>(o.send_buffer);
  else if (level == SOL_SOCKET && name == SO_RCVBUF) number = static_cast<int>(o.receive_buffer);
  else if (level == IPPROTO_TCP && name == TCP_NODELAY) number = o.no_delay;
  else if (level == IPPROTO_TCP && name == TCP_KEEPIDLE) number = o.keepalive_idle;
  else if (level == SOL_RDMA && name == RDMA_SQSIZE) number = o.send_queue;
  else if (level == SOL_RDMA && name == RDMA_RQSIZE) number = o.receive_queue;
  else if (level == SOL_RDMA && name == RDMA_INLINE) number = o.inline_size;
  else if (level == SOL_RDMA && name == RDMA_IOMAPSIZE) number = o.iomap_size;
  else return fail(ENOTSUP);
  std::memcpy(value, &number, sizeof number);
  *length = sizeof number;
  return 0;
}

ssize_t gather_send(StreamSocket& socket, const iovec* parts, int count, int flags) {
  if (parts == nullptr && count != 0) return fail(EINVAL);
  ssize_t total = 0;
  for (int i = 0; i < count; ++i) {
    if (parts[i].iov_len == 0) continue;
    ssize_t sent = socket.send(static_cast<const std::uint8_t*>(parts[i].iov_base), parts[i].iov_len, flags);
    if (sent < 0) return total != 0 ? total : sent;
    total += sent;
    if (static_cast<std::size_t>(sent) < parts[i].iov_len) break;
  }
  return total;
}

ssize_t scatter_receive(StreamSocket& socket, const iovec* parts, int count, int flags) {
  if (parts == nullptr && count != 0) return fail(EINVAL);
  ssize_t total = 0;
  for (int i = 0; i < count; ++i) {
    if (parts[i].iov_len == 0) continue;
    ssize_t got = socket.receive(static_cast<std::uint8_t*>(parts[i].iov_base), parts[i].iov_len,
                                 total != 0 ? flags | MSG_DONTWAIT : flags);
    if (got < 0) return total != 0 ? total : got;
    total += got;
    if (static_cast<std::size_t>(got) < parts[i].iov_len) break;
  }
  return total;
}

}  // namespace
}  // namespace uroce::rsockets

using uroce::rsockets::fail;
using uroce::rsockets::StreamSocket;
using uroce::rsockets::with_socket;

extern "C" {

int rsocket(int domain, int type, int /*protocol*/) {
  if (domain != AF_INET && domain != AF_INET6) return fail(EAFNOSUPPORT);
  int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (kind == SOCK_DGRAM) return fail(ENOSYS);  // datagram rsockets are not served
  if (kind != SOCK_STREAM) return fail(EPROTONOSUPPORT);
  uroce::rsockets::SocketOptions options;
  options.nonblocking = (type & SOCK_NONBLOCK) != 0;
  auto socket = std::make_shared<StreamSocket>(options);
  if (socket->open(domain) != 0) return -1;
  return uroce::rsockets::insert(std::move(socket));
}

int rbind(int socket, const sockaddr* address, socklen_t length) {
  if (address == nullptr || length < static_cast<socklen_t>(sizeof(sockaddr_in))) return fail(EINVAL);
  return with_socket(socket, [&](StreamSocket& s) { return s.bind(address); });
}

int rlisten(int socket, int /*backlog*/) {
  return with_socket(socket, [&](StreamSocket& s) { return s.listen(); });
}

int raccept(int socket, sockaddr* address, socklen_t* length) {
  std::unique_ptr<StreamSocket> accepted;
  int result = with_socket(socket, [&](StreamSocket& s) {
    accepted = s.accept();
    return accepted != nullptr ? 0 : -1;
  });
  if (result != 0) return -1;
  uroce::rsockets::copy_address(rdma_get_peer_addr(accepted->id()), address, length);
  return uroce::rsockets::insert(std::shared_ptr<StreamSocket>(std::move(accepted)));
}

int rconnect(int socket, const sockaddr* address, socklen_t length) {
  if (address == nullptr || length < static_cast<socklen_t>(sizeof(sockaddr_in))) return fail(EINVAL);
  return with_socket(socket, [&](StreamSocket& s) { return s.connect(address); });
}

int rshutdown(int socket, int how) {
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return fail(EINVAL);
  return with_socket(socket, [&](StreamSocket& s) { return s.shutdown(how); });
}

int rclose(int socket) {
  std::shared_ptr<StreamSocket> closing;
  {
    std::lock_guard lock(uroce::rsockets::table_lock());
    auto it = uroce::rsockets::table().find(socket);
    if (it == uroce::rsockets::table().end()) return fail(EBADF);
    closing = std::move(it->second);
    uroce::rsockets::table().erase(it);
  }
  {
    std::lock_guard lock(closing->lock);
    if (closing->connected()) closing->shutdown(SHUT_RDWR);
  }
  ::close(socket);
  return 0;
}

ssize_t rrecv(int socket, void* buffer, size_t length, int flags) {
  if (buffer == nullptr && length != 0) return fail(EFAULT);
  return with_socket(socket, [&](StreamSocket& s) { return s.receive(static_cast<std::uint8_t*>(buffer), length, flags); });
}

ssize_t rrecvfrom(int socket, void* buffer, size_t length, int flags, sockaddr* source, socklen_t* source_length) {
  ssize_t got = rrecv(socket, buffer, length, flags);
  if (got >= 0 && source != nullptr) rgetpeername(socket, source, source_length);
  return got;
}

ssize_t rrecvmsg(int socket, msghdr* message, int flags) {
  if (message == nullptr) return fail(EINVAL);
  return with_socket(socket, [&](StreamSocket& s) {
    return uroce::rsockets::scatter_receive(s, message->msg_iov, static_cast<int>(message->msg_iovlen), flags);
  });
}

ssize_t rread(int socket, void* buffer, size_t count) { return rrecv(socket, buffer, count, 0); }

ssize_t rreadv(int socket, const iovec* parts, int count) {
  return with_socket(socket, [&](StreamSocket& s) { return uroce::rsockets::scatter_receive(s, parts, count, 0); });
}

ssize_t rsend(int socket, const void* buffer, size_t length, int flags) {
  if (buffer == nullptr && length != 0) return fail(EFAULT);
  return with_socket(socket,
                     [&](StreamSocket& s) { return s.send(static_cast<const std::uint8_t*>(buffer), length, flags); });
}

ssize_t rsendto(int socket, const void* buffer, size_t length, int flags, const sockaddr* destination,
                socklen_t destination_length) {
  if (destination != nullptr || destination_length != 0) return fail(EISCONN);
  return rsend(socket, buffer, length, flags);
}

ssize_t rsendmsg(int socket, const msghdr* message, int flags) {
  if (message == nullptr) return fail(EINVAL);
  return with_socket(socket, [&](StreamSocket& s) {
    return uroce::rsockets::gather_send(s, message->msg_iov, static_cast<int>(message->msg_iovlen), flags);
  });
}

ssize_t rwrite(int socket, const void* buffer, size_t count) { return rsend(socket, buffer, count, 0); }

ssize_t rwritev(int socket, const iovec* parts, int count) {
  return with_socket(socket, [&](StreamSocket& s) { return uroce::rsockets::gather_send(s, parts, count, 0); });
}

int rgetpeername(int socket, sockaddr* address, socklen_t* length) {
  if (address == nullptr || length == nullptr) return fail(EFAULT);
  return with_socket(socket, [&](StreamSocket& s) {
    if (!s.connected()) return fail(ENOTCONN);
    uroce::rsockets::copy_address(rdma_get_peer_addr(s.id()), address, length);
    return 0;
  });
}

int rgetsockname(int socket, sockaddr* address, socklen_t* length) {
  if (address == nullptr || length == nullptr) return fail(EFAULT);
  return with_socket(socket, [&](StreamSocket& s) {
    uroce::rsockets::copy_address(rdma_get_local_addr(s.id()), address, length);
    return 0;
  });
}

int rsetsockopt(int socket, int level, int name, const void* value, socklen_t length) {
  return with_socket(socket, [&](StreamSocket& s) { return uroce::rsockets::set_option(s, level, name, value, length); });
}

int rgetsockopt(int socket, int level, int name, void* value, socklen_t* length) {
  return with_socket(socket, [&](StreamSocket& s) { return uroce::rsockets::get_option(s, level, name, value, length); });
}

int rfcntl(int socket, int command, ...) {
  va_list arguments;
  va_start(arguments, command);
  long argument = command == F_SETFL ? va_arg(arguments, long) : 0;
  va_end(arguments);
  return with_socket(socket, [&](StreamSocket& s) {
    if (command == F_GETFL) return O_RDWR | (s.options_.nonblocking ? O_NONBLOCK : 0);
    if (command == F_SETFL) return s.set_nonblocking((argument & O_NONBLOCK) != 0);
    return fail(ENOTSUP);
  });
}

off_t riomap(int socket, void* buffer, size_t length, int protection, int /*flags*/, off_t offset) {
  std::shared_ptr<StreamSocket> s = uroce::rsockets::find_socket(socket);
  if (s == nullptr) return uroce::rsockets::fail_off(EBADF);
  std::lock_guard lock(s->lock);
  return s->map(buffer, length, protection, offset);
}

int riounmap(int socket, void* buffer, size_t length) {
  return with_socket(socket, [&](StreamSocket& s) { return s.unmap(buffer, length); });
}

size_t riowrite(int socket, const void* buffer, size_t count, off_t offset, int flags) {
  ssize_t written = with_socket(socket, [&](StreamSocket& s) {
    return s.write_mapped(static_cast<const std::uint8_t*>(buffer), count, offset, flags);
  });
  return static_cast<size_t>(written);  // (size_t) -1 on an error, as rdma-core returns it
}

}  // extern "C"
