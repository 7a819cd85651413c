// The network namespace a port was opened in, so that the sockets it opens
// later (a UDP source port's first send, a multicast join) land there too,
// whichever thread asks: a socket belongs to the namespace of the thread
// that creates it, and an application may open a device in a namespace
// from one thread (setns) and use it from another that is elsewhere.
#pragma once

#include <cstdint>

namespace uroce::port {

// The network namespace the calling thread is in (its inode number), which
// need not be the process's: a thread may have entered another (setns).
std::uint64_t this_thread_network_namespace();

class NetworkNamespace {
 public:
  NetworkNamespace() = default;  // none known: sockets open where the caller is
  // The calling thread's.
  static NetworkNamespace of_this_thread();
  NetworkNamespace(NetworkNamespace&& other) noexcept;
  NetworkNamespace& operator=(NetworkNamespace&& other) noexcept;
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;
  ~NetworkNamespace();

  std::uint64_t id() const { return id_; }
  // socket(2) in this namespace. From a thread elsewhere, a short-lived
  // thread enters it (setns, which needs CAP_SYS_ADMIN over it) and makes
  // the socket; the caller's own namespace never changes. -1 with errno on
  // failure.
  int open_socket(int domain, int type, int protocol) const;

 private:
  int fd_ = -1;
  std::uint64_t id_ = 0;
};

}  // namespace uroce::port
