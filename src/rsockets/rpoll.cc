// rpoll and rselect over rsockets and ordinary fds together. An rsocket's
// readiness is computed from its completions (StreamSocket::ready_events);
// to sleep, each rsocket arms its completion queue (a listener: its event
// channel) and the process polls those fds beside the ordinary ones, then
// looks again.
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/select.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "rsockets/socket_table.h"

namespace uroce::rsockets {
namespace {

std::int64_t now_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1'000'000;
}

// Fills revents; the number of entries with any.
int check(pollfd* fds, nfds_t count, const std::vector<std::shared_ptr<StreamSocket>>& sockets) {
  std::vector<pollfd> ordinary;
  std::vector<nfds_t> where;
  int ready = 0;
  for (nfds_t i = 0; i < count; ++i) {
    fds[i].revents = 0;
    if (sockets[i] != nullptr) {
      std::lock_guard lock(sockets[i]->lock);
      fds[i].revents = sockets[i]->ready_events(fds[i].events);
      if (fds[i].revents != 0) ++ready;
    } else if (fds[i].fd >= 0) {
      ordinary.push_back(pollfd{fds[i].fd, fds[i].events, 0});
      where.push_back(i);
    }
  }
  if (!ordinary.empty() && ::poll(ordinary.data(), ordinary.size(), 0) > 0) {
    for (std::size_t k = 0; k < ordinary.size(); ++k) {
      fds[where[k]].revents = ordinary[k].revents;
      if (ordinary[k].revents != 0) ++ready;
    }
  }
  return ready;
}

}  // namespace
}  // namespace uroce::rsockets

using uroce::rsockets::StreamSocket;

extern "C" {

int rpoll(pollfd* fds, nfds_t count, int timeout) {
  if (fds == nullptr && count != 0) {
    errno = EFAULT;
    return -1;
  }
  std::vector<std::shared_ptr<StreamSocket>> sockets(count);
  for (nfds_t i = 0; i < count; ++i) sockets[i] = uroce::rsockets::find_socket(fds[i].fd);
  std::int64_t deadline = timeout < 0 ? -1 : uroce::rsockets::now_ms() + timeout;
  while (true) {
    int ready = uroce::rsockets::check(fds, count, sockets);
    if (ready != 0 || timeout == 0) return ready;
    // Arm, look once more (what came before the arming), then sleep.
    std::vector<pollfd> waits;
    for (nfds_t i = 0; i < count; ++i) {
      if (sockets[i] != nullptr) {
        std::lock_guard lock(sockets[i]->lock);
        sockets[i]->arm();
        if (sockets[i]->wake_fd() >= 0) waits.push_back(pollfd{sockets[i]->wake_fd(), POLLIN, 0});
      } else if (fds[i].fd >= 0) {
        waits.push_back(pollfd{fds[i].fd, fds[i].events, 0});
      }
    }
    ready = uroce::rsockets::check(fds, count, sockets);
    if (ready != 0) return ready;
    int left = -1;
    if (deadline >= 0) {
      left = static_cast<int>(std::max<std::int64_t>(0, deadline - uroce::rsockets::now_ms()));
      if (left == 0) return 0;
    }
    if (::poll(waits.data(), waits.size(), left) < 0 && errno != EINTR) return -1;
    for (nfds_t i = 0; i < count; ++i) {
      if (sockets[i] == nullptr) continue;
      std::lock_guard lock(sockets[i]->lock);
      sockets[i]->take_wakeup();
    }
  }
}

int rselect(int count, fd_set* readable, fd_set* writable, fd_set* failed, timeval* timeout) {
  if (count < 0 || count > FD_SETSIZE) {
    errno = EINVAL;
    return -1;
  }
  std::vector<pollfd> fds;
  for (int fd = 0; fd < count; ++fd) {
    short events = 0;
    if (readable != nullptr && FD_ISSET(fd, readable)) events |= POLLIN;
    if (writable != nullptr && FD_ISSET(fd, writable)) events |= POLLOUT;
    if (failed != nullptr && FD_ISSET(fd, failed)) events |= POLLPRI;
    if (events != 0) fds.push_back(pollfd{fd, events, 0});
  }
  int milliseconds = timeout == nullptr ? -1 : static_cast<int>(timeout->tv_sec * 1000 + timeout->tv_usec / 1000);
  int result = rpoll(fds.data(), fds.size(), milliseconds);
  if (result < 0) return result;
  if (readable != nullptr) FD_ZERO(readable);
  if (writable != nullptr) FD_ZERO(writable);
  if (failed != nullptr) FD_ZERO(failed);
  int set = 0;
  for (const pollfd& fd : fds) {
    if (readable != nullptr && (fd.revents & (POLLIN | POLLHUP | POLLERR))) { FD_SET(fd.fd, readable); ++set; }
    if (writable != nullptr && (fd.revents & (POLLOUT | POLLERR))) { FD_SET(fd.fd, writable); ++set; }
    if (failed != nullptr && (fd.revents & POLLPRI)) { FD_SET(fd.fd, failed); ++set; }
  }
  return set;
}

}  // extern "C"
