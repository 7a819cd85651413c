// ProgressHandoff: who moves a device's packets, its progress thread or an
// application that polls (ProgressMode, docs/design/progress-engine.md).
// It owns the thread's wake eventfd and the flags the two sides exchange
// without the device's lock: whether the thread sleeps watching the port,
// rests leaving the port to the application, or must stop, and until when
// the application is taken to be polling. One of the device's jobs
// (runtime/device.cc runs the thread's loop with it).
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <span>

#include "uroce/device.h"

namespace uroce::runtime {

class ProgressHandoff {
 public:
  ProgressHandoff(ProgressMode mode, TimeNs handoff_ns, TimeNs spin_ns);  // wake_fd() < 0 when no eventfd could be made
  ~ProgressHandoff();
  ProgressHandoff(const ProgressHandoff&) = delete;
  ProgressHandoff& operator=(const ProgressHandoff&) = delete;

  int wake_fd() const { return wake_fd_; }
  bool adaptive() const { return mode_ == ProgressMode::adaptive; }
  TimeNs handoff_ns() const { return handoff_ns_; }
  // adaptive: how long the thread keeps polling after an arrival (0 otherwise).
  TimeNs spin_ns() const { return spin_ns_; }

  // The application's side.
  // A poll or post marks the application as polling, unless it armed a CQ
  // since: an application that sleeps on a channel polls after each event
  // until the CQ is empty, then sleeps again, and that is not busy-polling.
  // kEmptyPollsToPoll empty polls in a row after arming are.
  void note_application_polls(TimeNs now, bool found_nothing);
  // It armed a CQ to sleep on its channel: the thread takes the port now.
  void application_sleeps();
  // Whether bare ACKs may wait for a reply: not while the application sleeps
  // on a completion channel. It then takes its completions as events arrive,
  // and a program that polls the send CQ once per receive event (perftest's
  // -e) must find the send completion already there, as on hardware, whose
  // ACK leaves on receipt rather than behind the reply.
  bool may_hold_acks() const { return adaptive() && !application_sleeps_.load(std::memory_order_relaxed); }
  // Wakes the thread from a sleep watching the port (one eventfd write per sleep).
  void wake();

  // The thread's side.
  // Until when the application is taken to be polling (adaptive).
  TimeNs application_polls_until() const { return application_polls_until_.load(std::memory_order_relaxed); }
  // Announced before the thread's last look at the engine: a verbs call
  // after that look finds it set and wakes the sleep.
  void announce_sleep() { sleeping_.store(true, std::memory_order_seq_cst); }
  void awake() { sleeping_.store(false, std::memory_order_relaxed); }
  // Sleeps in ppoll on fds, the wake eventfd last, for at most wait
  // nanoseconds, and takes the wake's count if it fired.
  static void sleep_on(std::span<pollfd> fds, TimeNs wait);
  // adaptive: sleeps until `until` without watching the port, unless the
  // application says it sleeps or the device stops.
  void rest_until(TimeNs until);
  std::uint64_t rests() const { return rests_.load(std::memory_order_relaxed); }

  // The device closes: the thread leaves whichever sleep it is in.
  void stop();
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

 private:
  void wake_resting();

  ProgressMode mode_;
  TimeNs handoff_ns_;
  TimeNs spin_ns_;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};  // the thread sleeps watching the port
  std::atomic<bool> resting_{false};   // the thread sleeps leaving the port to the application
  std::atomic<std::uint64_t> rests_{0};
  // adaptive: until when the application is taken to be polling.
  std::atomic<TimeNs> application_polls_until_{0};
  std::atomic<bool> application_sleeps_{false};  // it armed a CQ and has not busy-polled since
  std::atomic<int> empty_polls_after_arming_{0};
  static constexpr int kEmptyPollsToPoll = 16;
};

}  // namespace uroce::runtime
