// The window loop, on one thread or one thread per partition.
#include "sim/partitioned_run.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "sim/transmitter.h"

namespace uroce::sim {

namespace {

// The threads meet twice per window, thousands of times a run, usually
// within microseconds of each other: a waiting thread spins a while before
// it sleeps (std::barrier sleeps at once, and waking costs tens of
// microseconds here). The last to arrive runs `last` before anyone leaves.
class WindowBarrier {
 public:
  explicit WindowBarrier(std::uint32_t parties) : parties_(parties) {}

  template <typename Last>
  void arrive_and_wait(Last&& last) {
    std::uint32_t phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      last();
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      phase_.notify_all();
      return;
    }
    for (int spin = 1; spin <= kSpins; ++spin) {
      if (phase_.load(std::memory_order_acquire) != phase) return;
      __builtin_ia32_pause();
      // More threads than cores (or a busy machine): let the one we wait for run.
      if (spin % kSpinsPerYield == 0) std::this_thread::yield();
    }
    while (phase_.load(std::memory_order_acquire) == phase) phase_.wait(phase, std::memory_order_acquire);
  }
  void arrive_and_wait() {
    arrive_and_wait([] {});
  }

 private:
  static constexpr int kSpins = 1 << 14;  // about 0.1 to 0.2 ms
  static constexpr int kSpinsPerYield = 256;
  const std::uint32_t parties_;
  std::atomic<std::uint32_t> arrived_{0};
  std::atomic<std::uint32_t> phase_{0};
};

}  // namespace

PartitionedRun::PartitionedRun(std::vector<SimWorld*> parts, SimWorld& global, SimTime window, SimTime time_limit)
    : parts_(std::move(parts)), ranks_(solo_), global_(global), window_(window), time_limit_(time_limit),
      errors_(parts_.size()) {
  for (std::uint32_t part = 0; part < parts_.size(); ++part) owned_.push_back(part);
}

PartitionedRun::PartitionedRun(std::vector<SimWorld*> parts, std::vector<std::uint32_t> owned, RankGroup& ranks,
                               RankFrames& frames, SimWorld& global, SimTime window, SimTime time_limit)
    : parts_(std::move(parts)), owned_(std::move(owned)), ranks_(ranks), frames_(&frames), global_(global),
      window_(window), time_limit_(time_limit), errors_(parts_.size()) {}

void PartitionedRun::run(const std::function<bool()>& keep_going, const std::function<void(SimTime)>& progress) {
  keep_going_ = &keep_going;
  progress_ = progress ? &progress : nullptr;
  done_ = false;
  plan_next_window();
  auto locals = static_cast<std::uint32_t>(owned_.size());
  if (locals <= 1) {  // a rank may run no partition: it still takes part in the planning
    while (!done_) {
      if (locals == 1) {
        std::uint32_t part = owned_[0];
        take_crossing_frames(part, 1 - parts_[part]->window_parity);
        run_partition(part);
      }
      plan_next_window();
    }
  } else {
    // One meeting per window: a partition lands the frames sent to it in
    // the window before (each world sends into the other half of its
    // outboxes meanwhile), runs its events, and waits for the plan.
    WindowBarrier planned(locals);
    auto work = [&](std::uint32_t part) {
      while (!done_) {
        take_crossing_frames(part, 1 - parts_[part]->window_parity);
        run_partition(part);
        planned.arrive_and_wait([this] { plan_next_window(); });
      }
    };
    std::vector<std::jthread> threads;
    for (std::uint32_t local = 1; local < locals; ++local) threads.emplace_back(work, owned_[local]);
    work(owned_[0]);
  }
  if (planning_error_) std::rethrow_exception(planning_error_);
  for (const std::exception_ptr& error : errors_) {
    if (error) std::rethrow_exception(error);
  }
}

void PartitionedRun::run_partition(std::uint32_t part) {
  if (errors_[part]) return;
  try {
    parts_[part]->events.run_until(window_end_ - 1);
  } catch (...) {
    errors_[part] = std::current_exception();
  }
}

void PartitionedRun::take_crossing_frames(std::uint32_t part, std::uint32_t parity) {
  for (SimWorld* from : parts_) {
    Outbox& box = from->outboxes[parity][part];
    for (const CrossingFrame& frame : box.frames) frame.link->land(frame.packet);
    box.frames.clear();
    box.earliest = kSimNever;
  }
  Outbox& inbox = parts_[part]->from_other_ranks;
  for (const CrossingFrame& frame : inbox.frames) frame.link->land(frame.packet);
  inbox.frames.clear();
  inbox.earliest = kSimNever;
}

bool PartitionedRun::failed() const {
  return std::any_of(errors_.begin(), errors_.end(), [](const std::exception_ptr& e) { return e != nullptr; });
}

void PartitionedRun::plan_next_window() {
  try {
    plan();
  } catch (...) {  // a global event threw: stop every thread, rethrow from run()
    planning_error_ = std::current_exception();
    done_ = true;
  }
}

void PartitionedRun::plan() {
  for (;;) {
    // A rank whose partition failed stops here; over ranks, the caller
    // ends the others (they wait in the next collective call).
    if (failed()) {
      done_ = true;
      return;
    }
    if (frames_ != nullptr) frames_->exchange(parts_[0]->window_parity);  // every world's parity flips at once
    if (!(*keep_going_)()) {
      done_ = true;
      return;
    }
    // The frames of the window just run count as the events they will be.
    SimTime first = kSimNever;
    for (std::uint32_t owned : owned_) {
      SimWorld& part = *parts_[owned];
      first = std::min({first, part.events.next_time(), part.from_other_ranks.earliest});
      for (const Outbox& box : part.outboxes[part.window_parity]) first = std::min(first, box.earliest);
    }
    ranks_.min(std::span(&first, 1));
    SimTime global = global_.events.next_time();
    if (global != kSimNever && global <= first && global <= time_limit_) {
      // Global events may take a link down with what is on its wire.
      for (std::uint32_t owned : owned_) take_crossing_frames(owned, parts_[owned]->window_parity);
      global_.counters = counters();
      global_.events.run_until(global);
      continue;
    }
    if (first == kSimNever || first > time_limit_) {
      done_ = true;
      return;
    }
    if (progress_ != nullptr) (*progress_)(first);
    window_end_ = std::min({(first / window_ + 1) * window_, global, time_limit_ + 1});
    for (SimWorld* part : parts_) part->window_parity ^= 1u;
    return;
  }
}

SimTime PartitionedRun::now() const {
  SimTime latest = global_.events.now();
  for (std::uint32_t owned : owned_) latest = std::max(latest, parts_[owned]->events.now());
  auto everywhere = static_cast<std::uint64_t>(latest);
  ranks_.max(std::span(&everywhere, 1));
  return static_cast<SimTime>(everywhere);
}

std::uint64_t PartitionedRun::events_run_here() const {
  std::uint64_t events = global_.events.events_run();
  for (std::uint32_t owned : owned_) events += parts_[owned]->events.events_run();
  return events;
}

std::uint64_t PartitionedRun::events_run() const {
  // Every rank ran the global events: count them once.
  std::uint64_t partitions = events_run_here() - global_.events.events_run();
  ranks_.sum(std::span(&partitions, 1));
  return partitions + global_.events.events_run();
}

FabricCounters PartitionedRun::counters_here() const {
  // Every world: a global event on this rank may count into a partition
  // another rank runs (a failed link empties its copy of a wire here).
  FabricCounters sum;
  for (const SimWorld* part : parts_) sum += part->counters;
  return sum;
}

FabricCounters PartitionedRun::counters() const {
  static_assert(sizeof(FabricCounters) == 10 * sizeof(std::uint64_t), "a counter added: sum it below too");
  FabricCounters here = counters_here();
  std::uint64_t values[] = {here.data_packets,   here.pause_frames,
                            here.resume_frames,  static_cast<std::uint64_t>(here.pause_time_total),
                            here.ecn_marked,     here.drops,
                            here.lossless_violations, here.link_losses,
                            here.failure_losses, here.trimmed};
  ranks_.sum(values);
  return FabricCounters{values[0], values[1], values[2], static_cast<SimTime>(values[3]), values[4],
                        values[5], values[6], values[7], values[8], values[9]};
}

}  // namespace uroce::sim
