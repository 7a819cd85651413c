// CompletionSignal: how a device tells the application that completions
// wait. An eventfd (the completion channel) turns readable while a CQ
// notification waits to be taken and goes quiet when the last is taken; a
// listener (the libibverbs library, which keeps its own channels and event
// queues) sees the engine after every verbs call and progress round. One of
// the device's jobs (runtime/device_parts.h lists them); it runs under the
// device's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "uroce/engine.h"

namespace uroce::runtime {

class CompletionSignal {
 public:
  CompletionSignal();  // fd() < 0 when no eventfd could be made
  ~CompletionSignal();
  CompletionSignal(const CompletionSignal&) = delete;
  CompletionSignal& operator=(const CompletionSignal&) = delete;

  int fd() const { return fd_; }
  void set_listener(std::function<void(Engine&)> listener) { listener_ = std::move(listener); }
  // After a verbs call or a round: the listener sees the engine, and the fd
  // turns readable if a CQ notification waits.
  void signal(Engine& engine);
  // The CQ whose notification fired, oldest first; the fd goes quiet with
  // the last.
  std::optional<std::uint32_t> take_event(Engine& engine);

 private:
  int fd_ = -1;
  bool signalled_ = false;  // the fd holds a count not yet read
  std::function<void(Engine&)> listener_;
};

}  // namespace uroce::runtime
