// CompletionSignal: the completion channel's eventfd and the event listener.
#include "runtime/completion_signal.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace uroce::runtime {

CompletionSignal::CompletionSignal() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

CompletionSignal::~CompletionSignal() {
  if (fd_ >= 0) ::close(fd_);
}

void CompletionSignal::signal(Engine& engine) {
  if (listener_) listener_(engine);
  if (signalled_ || fd_ < 0 || !engine.cq_event_pending()) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(fd_, &one, sizeof one);
  signalled_ = true;
}

std::optional<std::uint32_t> CompletionSignal::take_event(Engine& engine) {
  std::optional<std::uint32_t> cq = engine.poll_cq_event();
  if (signalled_ && !engine.cq_event_pending()) {  // the last one taken: the fd goes quiet
    std::uint64_t count;
    [[maybe_unused]] ssize_t got = ::read(fd_, &count, sizeof count);
    signalled_ = false;
  }
  return cq;
}

}  // namespace uroce::runtime
