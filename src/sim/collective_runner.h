// Runs a scenario's collective (CollectiveSpec) on the fabric: the schedule
// from collective/schedule.h, stepped by sim/collective_progress.h in the
// spec's slices over its channels (RC connections per pair of members that
// exchange data; on whole GPU servers each channel has a ring or tree of
// its own, collective/rank_layout.h), each transfer's slice an RDMA WRITE
// with immediate (the receiver's step counts it when it lands), each step
// after the member's compute, iterations timed from their start to the
// last member's last completion.
//
// Members may sit in different partitions of the fabric (sim/partition.h):
// everything a member does runs in its host's partition, on the events of
// a handler of its own, and touches only that member's state. Only the
// iteration's end joins them: between windows (sim/partitioned_run.h) the
// runner sees that every member is done and starts the next iteration a
// barrier later (the fabric's shortest link delay, which is always past
// the window that saw the end; and the gap), on the global world. So the
// results are bit for bit the same on any number of threads. Over ranks
// (processes, sim/rank_group.h) each rank steps the members its partitions
// hold, and the iteration's end is summed over the ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collective/schedule.h"
#include "sim/collective_progress.h"
#include "sim/fabric.h"
#include "sim/rank_group.h"
#include "sim/scenario.h"

namespace uroce::sim {

// Work requests of the collective carry this bit in their wr_id, then the
// step (bits 38..62), the slice (32..37) and the transfer's index in its
// step (0..31); its receives carry the bit alone.
inline constexpr std::uint64_t kCollectiveWork = 1ull << 63;

class CollectiveRunner final : public EventHandler {
 public:
  // barrier: the time from the last member's end of an iteration to the
  // next one's start (at least the partitions' window). Throws
  // std::invalid_argument when the schedule cannot be made (see make_schedule).
  // Over ranks (collective), this rank steps the members on the hosts it
  // holds, and between_windows is collective too.
  CollectiveRunner(const CollectiveSpec& spec, const TransportSpec& transport, Fabric& fabric, RankGroup& ranks,
                   SimWorld& global, SimTime barrier);

  // Read between windows only (over ranks, after between_windows).
  bool running() const { return iteration_times_.size() < spec_.iterations && !failed(); }
  bool failed() const;
  const std::vector<SimTime>& iteration_times() const { return iteration_times_; }
  SimTime finished_at() const { return finished_at_; }  // when the last finished iteration ended

  // A completion on `host` whose wr_id has kCollectiveWork set, in that
  // host's partition.
  void completed(std::uint32_t host, const WorkCompletion& completion, SimTime now);
  // Between windows: if every member finished the iteration, record it and
  // plan the next.
  void between_windows();
  void on_event(SimTime now, std::uint32_t tag) override;  // on the global world: an iteration starts

 private:
  // A member's clock: its compute ends on its own partition's events.
  struct Member final : public EventHandler {
    CollectiveRunner* runner = nullptr;
    std::uint32_t index = 0;
    HostNode* host = nullptr;   // where this rank holds it
    SimWorld* world = nullptr;  // its host's partition's
    std::uint32_t rkey = 0;     // its host's region's
    SimTime delay = 0;          // compute before each step
    SimTime now = 0;            // of the event or completion being handled for it
    bool posted = false;        // WRITEs were posted since its host last woke
    bool failed = false;        // a WRITE of its completed in error
    bool here = true;           // this rank steps it
    std::uint32_t iterations_done = 0;
    SimTime done_at = 0;        // when it finished its latest iteration
    void on_event(SimTime now, std::uint32_t tag) override;  // a slice's compute is done
  };
  void start_iteration(SimTime now);
  void post(const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes);
  void sent(Member& member, const WorkCompletion& completion);
  void arrived(Member& member, const WorkCompletion& completion);
  void wake(Member& member);

  CollectiveSpec spec_;
  std::vector<collective::Schedule> schedules_;  // one, or one per channel (NCCL's rings and trees on GPU servers)
  SimWorld& global_;
  SimTime barrier_;
  std::vector<std::unique_ptr<Member>> members_;
  std::unordered_map<std::uint32_t, std::uint32_t> member_of_host_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> qpn_;  // (member, peer, channel)
  std::unique_ptr<CollectiveProgress> progress_;  // this iteration's
  SimTime iteration_start_ = 0;
  std::vector<SimTime> iteration_times_;
  SimTime finished_at_ = 0;
  RankGroup* ranks_;
  bool failed_anywhere_ = false;  // over ranks: a member failed, as the last between_windows summed
};

}  // namespace uroce::sim
