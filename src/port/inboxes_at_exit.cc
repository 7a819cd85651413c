// The open inboxes, and the exit handler that closes and removes them.
#include "port/inboxes_at_exit.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace uroce::port {
namespace {

struct OpenInbox {
  std::string path;
  std::atomic<std::uint32_t>* closed;
  pid_t owner;
};

// Never destroyed: the exit handler may run after static destructors.
std::mutex& inboxes_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::vector<OpenInbox>& open_inboxes() {
  static auto* inboxes = new std::vector<OpenInbox>;
  return *inboxes;
}

void close_open_inboxes() {
  std::lock_guard lock(inboxes_mutex());
  pid_t self = ::getpid();
  for (const OpenInbox& inbox : open_inboxes()) {
    if (inbox.owner != self) continue;
    inbox.closed->store(1, std::memory_order_release);  // senders see it at once, as after a close
    ::unlink(inbox.path.c_str());
    ::unlink((inbox.path + ".wake").c_str());
  }
  open_inboxes().clear();
}

}  // namespace

void remember_open_inbox(const std::string& path, std::atomic<std::uint32_t>* closed) {
  static const bool registered = std::atexit(close_open_inboxes) == 0;
  (void)registered;
  std::lock_guard lock(inboxes_mutex());
  open_inboxes().push_back(OpenInbox{path, closed, ::getpid()});
}

void forget_open_inbox(const std::string& path) {
  std::lock_guard lock(inboxes_mutex());
  std::vector<OpenInbox>& inboxes = open_inboxes();
  inboxes.erase(std::remove_if(inboxes.begin(), inboxes.end(), [&](const OpenInbox& inbox) { return inbox.path == path; }),
                inboxes.end());
}

}  // namespace uroce::port
