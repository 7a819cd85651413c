// The open inboxes, and the exit handler that closes and removes them.
#include "port/inboxes_at_exit.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

namespace uroce::port {
namespace {

struct OpenInbox {
  std::string path;
  std::atomic<std::uint32_t>* closed;
  pid_t owner;
};

// Never destroyed: the exit handler may run after static destructors. Both
// live in this library's static storage, not on the heap, and the list gives
// back its buffer whenever it empties: a program that dlopens libibverbs and
// dlcloses it again (the exit handler runs then) keeps no memory of ours that
// nothing points to.
static_assert(std::is_trivially_destructible_v<std::mutex>);
std::mutex& inboxes_mutex() {
  static std::mutex mutex;  // nothing of it runs at exit
  return mutex;
}
std::vector<OpenInbox>& open_inboxes() {
  alignas(std::vector<OpenInbox>) static unsigned char storage[sizeof(std::vector<OpenInbox>)];
  static auto* inboxes = new (storage) std::vector<OpenInbox>;
  return *inboxes;
}

void release_if_empty(std::vector<OpenInbox>& inboxes) {
  if (inboxes.empty()) std::vector<OpenInbox>().swap(inboxes);
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
  release_if_empty(open_inboxes());
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
  release_if_empty(inboxes);
}

}  // namespace uroce::port
