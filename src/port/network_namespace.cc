// NetworkNamespace: /proc/thread-self/ns/net, kept open, and sockets made
// inside it by a helper thread when the caller is elsewhere.
#include "port/network_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <utility>

namespace uroce::port {
namespace {

// /proc/self names the process's first thread, whose namespace a thread that
// entered another does not share (kernels before 3.17 lack thread-self).
const char* const kOwnNamespace[] = {"/proc/thread-self/ns/net", "/proc/self/ns/net"};

}  // namespace

std::uint64_t this_thread_network_namespace() {
  struct stat netns {};
  for (const char* path : kOwnNamespace) {
    if (::stat(path, &netns) == 0) return netns.st_ino;
  }
  return 0;
}

NetworkNamespace NetworkNamespace::of_this_thread() {
  NetworkNamespace here;
  for (const char* path : kOwnNamespace) {
    here.fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
    if (here.fd_ >= 0) break;
  }
  struct stat netns {};
  if (here.fd_ >= 0 && ::fstat(here.fd_, &netns) == 0) here.id_ = netns.st_ino;
  return here;
}

NetworkNamespace::NetworkNamespace(NetworkNamespace&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), id_(std::exchange(other.id_, 0)) {}

NetworkNamespace& NetworkNamespace::operator=(NetworkNamespace&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

NetworkNamespace::~NetworkNamespace() {
  if (fd_ >= 0) ::close(fd_);
}

int NetworkNamespace::open_socket(int domain, int type, int protocol) const {
  if (fd_ < 0 || this_thread_network_namespace() == id_) return ::socket(domain, type, protocol);
  int made = -1, error = 0;
  std::thread([&] {
    if (::setns(fd_, CLONE_NEWNET) != 0) {
      error = errno;
      return;
    }
    made = ::socket(domain, type, protocol);
    error = errno;
  }).join();
  if (made < 0) errno = error;
  return made;
}

}  // namespace uroce::port
