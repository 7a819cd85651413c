// Running a partitioned fabric window by window. Each partition puts the
// frames others sent it in the window before on its wires, then runs its
// events before the window's end, on a thread of its own; then, on one
// thread while the others wait, the next window is planned: events of the
// global world (samplers, the deadlock check, failures: they see and may
// change every partition) run when their time has come, before any
// partition event of that picosecond, and the caller's keep_going decides
// whether to stop. One partition runs the same loop on the caller's
// thread, so a run stops after the same events whatever the partitions.
//
// A window starts at the earliest pending event and ends at the next
// multiple of the window (the shortest link delay), at the next global
// event, or past the time limit, whichever comes first.
//
// Over several ranks (processes), each runs the partitions it owns, and the
// planning is collective: frames for other ranks' partitions go out at each
// window's end (RankFrames), the earliest event is the least over the
// ranks, and every rank runs the same global events in the same order.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

#include "sim/rank_frames.h"
#include "sim/rank_group.h"
#include "sim/world.h"

namespace uroce::sim {

class PartitionedRun {
 public:
  // global: its events plan the windows; its counters are the partitions'
  // sum whenever one of its events runs.
  PartitionedRun(std::vector<SimWorld*> parts, SimWorld& global, SimTime window, SimTime time_limit);
  // Over ranks: this rank runs the partitions `owned` names, and frames
  // reaches the others'. keep_going must then give every rank one answer.
  PartitionedRun(std::vector<SimWorld*> parts, std::vector<std::uint32_t> owned, RankGroup& ranks,
                 RankFrames& frames, SimWorld& global, SimTime window, SimTime time_limit);

  // Runs until keep_going says no after a window or a global event, or no
  // event is left at or before the time limit. keep_going runs on one
  // thread while the partitions wait: it may read every partition's state
  // and schedule events on any world at or after the end of the window just
  // run. Rethrows what a partition's event threw.
  void run(const std::function<bool()>& keep_going, const std::function<void(SimTime)>& progress = {});

  // The time of the latest event run anywhere, how many ran, and the
  // counters: over every rank (each must call them, in the same order).
  SimTime now() const;
  std::uint64_t events_run() const;
  FabricCounters counters() const;
  // How many events this rank ran (the global ones included).
  std::uint64_t events_run_here() const;

 private:
  void run_partition(std::uint32_t part);
  // Lands the frames the other partitions put in their outboxes[parity] for part.
  void take_crossing_frames(std::uint32_t part, std::uint32_t parity);
  // Plans the next window (on one thread, the others waiting); an exception
  // from a global event stops the run.
  void plan_next_window();
  void plan();
  bool failed() const;

  FabricCounters counters_here() const;

  std::vector<SimWorld*> parts_;
  std::vector<std::uint32_t> owned_;  // the partitions this rank runs
  SoloRank solo_;
  RankGroup& ranks_;
  RankFrames* frames_ = nullptr;  // over several ranks
  SimWorld& global_;
  SimTime window_;
  SimTime time_limit_;
  const std::function<bool()>* keep_going_ = nullptr;
  const std::function<void(SimTime)>* progress_ = nullptr;
  SimTime window_end_ = 0;
  bool done_ = false;
  std::vector<std::exception_ptr> errors_;  // per partition
  std::exception_ptr planning_error_;
};

}  // namespace uroce::sim
