// What a Device holds besides its lock and its engine (uroce/device.h keeps
// these out of view): the port, the transmit batch, the completion channel,
// the progress handoff and the progress thread.
#pragma once

#include <memory>
#include <thread>

#include "port/port.h"
#include "runtime/completion_signal.h"
#include "runtime/progress_handoff.h"
#include "runtime/transmit_batch.h"
#include "uroce/device.h"

namespace uroce {

struct Device::Parts {
  Parts(const DeviceConfig& config, std::unique_ptr<port::Port> opened)
      : port(std::move(opened)),
        batch(config.ack_hold_ns),
        handoff(config.progress_thread ? config.progress_mode : ProgressMode::thread, config.handoff_ns,
                config.spin_ns) {}

  std::unique_ptr<port::Port> port;
  // Reads local peers' shared regions for their extent packets (port::ExtentMappings).
  std::unique_ptr<ExtentSource> extents;
  // The engine's datagrams on their way to the port, and the ACK hold.
  runtime::TransmitBatch batch;
  // The completion channel's fd and the library's event listener.
  runtime::CompletionSignal completions;
  // Who moves the packets: the thread or a polling application.
  runtime::ProgressHandoff handoff;
  ProgressCounters progress_counters;  // under the lock, but for the thread's rests (handoff)
  TimeNs thread_wakes_at = kNever;     // under the lock: when a sleeping thread looks again
  TimeNs last_polled_round = 0;        // under the lock
  std::thread thread;
};

}  // namespace uroce
