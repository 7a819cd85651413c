// ProgressHandoff (progress_handoff.h): the flags a device's progress thread
// and a polling application exchange, and the thread's wake eventfd.
#include "runtime/progress_handoff.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <ctime>

#include "uroce/monotonic_clock.h"

namespace uroce::runtime {

namespace {

void signal_eventfd(int fd) {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(fd, &one, sizeof one);
}

}  // namespace

ProgressHandoff::ProgressHandoff(ProgressMode mode, TimeNs handoff_ns, TimeNs spin_ns)
    : mode_(mode),
      handoff_ns_(handoff_ns),
      spin_ns_(mode == ProgressMode::adaptive ? spin_ns : 0),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

ProgressHandoff::~ProgressHandoff() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ProgressHandoff::note_application_polls(TimeNs now, bool found_nothing) {
  if (!adaptive()) return;
  if (application_sleeps_.load(std::memory_order_relaxed)) {
    if (!found_nothing || empty_polls_after_arming_.fetch_add(1, std::memory_order_relaxed) + 1 < kEmptyPollsToPoll) {
      return;
    }
    application_sleeps_.store(false, std::memory_order_relaxed);
  }
  application_polls_until_.store(now + handoff_ns_, std::memory_order_relaxed);
}

void ProgressHandoff::application_sleeps() {
  if (!adaptive()) return;
  empty_polls_after_arming_.store(0, std::memory_order_relaxed);
  application_sleeps_.store(true, std::memory_order_relaxed);
  application_polls_until_.store(0, std::memory_order_seq_cst);
  wake_resting();
}

void ProgressHandoff::wake() {
  if (wake_fd_ < 0 || !sleeping_.exchange(false, std::memory_order_seq_cst)) return;
  signal_eventfd(wake_fd_);
}

void ProgressHandoff::wake_resting() {
  if (wake_fd_ < 0 || !resting_.exchange(false, std::memory_order_seq_cst)) return;
  signal_eventfd(wake_fd_);
}

void ProgressHandoff::sleep_on(std::span<pollfd> fds, TimeNs wait) {
  timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
  ::ppoll(fds.data(), fds.size(), &timeout, nullptr);
  if (fds.back().revents & POLLIN) {
    std::uint64_t drained;
    [[maybe_unused]] ssize_t got = ::read(fds.back().fd, &drained, sizeof drained);
  }
}

// The application polls, so it moves the packets and fires the timers: the
// thread sleeps until it may have stopped (or says it sleeps), without
// watching the port, so arrivals wake nobody but the application.
void ProgressHandoff::rest_until(TimeNs until) {
  rests_.fetch_add(1, std::memory_order_relaxed);
  resting_.store(true, std::memory_order_seq_cst);
  TimeNs wait = std::min<TimeNs>(until - monotonic_now(), 100'000'000);
  if (wait > 0 && application_polls_until_.load(std::memory_order_seq_cst) != 0 && !stop_.load()) {
    std::array<pollfd, 1> wake{pollfd{wake_fd_, POLLIN, 0}};
    sleep_on(wake, wait);
  }
  resting_.store(false, std::memory_order_relaxed);
}

void ProgressHandoff::stop() {
  stop_ = true;
  sleeping_ = true;  // wake it from either sleep
  wake();
  wake_resting();
}

}  // namespace uroce::runtime
