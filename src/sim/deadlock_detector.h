// PFC deadlock detection: now and then, build the wait-for graph of switch
// egress queues (a queue paused by its downstream switch waits on the queues
// there that hold packets it sent) and look for a cycle among queues that
// have been paused for the whole of the last interval with packets waiting.
// Such a cycle never drains by itself: every buffer in it waits on the next.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/fabric.h"
#include "sim/rank_group.h"

namespace uroce::sim {

// One link direction of a deadlocked cycle: from switch_index out of port
// towards next, at priority.
struct PausedHop {
  std::uint32_t switch_index = 0;
  std::uint16_t port = 0;
  NodeRef next;
  std::uint8_t priority = 0;
};

struct Deadlock {
  SimTime detected_at = 0;
  std::vector<PausedHop> cycle;  // in wait-for order; the last waits on the first
};

// The cycle of paused queues at `now`, if there is one: only queues paused
// since `paused_before` or earlier, with packets waiting, take part. Over
// ranks, collective: the graph is gathered from every rank's switches.
std::optional<std::vector<PausedHop>> find_paused_cycle(const Fabric& fabric, SimTime paused_before,
                                                        RankGroup& ranks);

class DeadlockDetector final : public EventHandler {
 public:
  // Checks every interval of simulated time, from the first check on.
  DeadlockDetector(SimWorld& world, const Fabric& fabric, SimTime interval, RankGroup& ranks)
      : world_(world), fabric_(fabric), interval_(interval), ranks_(ranks) {}

  void start(SimTime now) { world_.events.schedule(now + interval_, this, 0); }
  const std::optional<Deadlock>& found() const { return found_; }

  void on_event(SimTime now, std::uint32_t tag) override;

 private:
  SimWorld& world_;
  const Fabric& fabric_;
  SimTime interval_;
  RankGroup& ranks_;
  std::optional<Deadlock> found_;
};

}  // namespace uroce::sim
