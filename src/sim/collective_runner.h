// Runs a scenario's collective (CollectiveSpec) on the fabric: the schedule
// from collective/schedule.h, stepped by sim/collective_progress.h in the
// spec's slices over its channels (RC connections per pair of members that
// exchange data; on whole GPU servers each channel has a ring or tree of
// its own, collective/rank_layout.h), each transfer's slice an RDMA WRITE, each step after the
// members' compute, iterations timed from their start to the last
// member's last completion.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "collective/schedule.h"
#include "sim/collective_progress.h"
#include "sim/fabric.h"
#include "sim/scenario.h"

namespace uroce::sim {

// Work requests of the collective carry this bit in their wr_id, then the
// step (bits 38..62), the slice (32..37), the transfer's index in its step
// (16..31) and the member (0..15).
inline constexpr std::uint64_t kCollectiveWork = 1ull << 63;

class CollectiveRunner final : public EventHandler {
 public:
  // Throws std::invalid_argument when the schedule cannot be made (see make_schedule).
  CollectiveRunner(const CollectiveSpec& spec, const TransportSpec& transport, Fabric& fabric, SimWorld& world);

  bool running() const { return iteration_times_.size() < spec_.iterations && !failed_; }
  bool failed() const { return failed_; }
  const std::vector<SimTime>& iteration_times() const { return iteration_times_; }
  SimTime finished_at() const { return finished_at_; }  // when the last finished iteration ended

  // A completion whose wr_id has kCollectiveWork set.
  void completed(const WorkCompletion& completion, SimTime now);
  void on_event(SimTime now, std::uint32_t tag) override;  // a member's compute is done: post its step

 private:
  struct Member {
    HostNode* host = nullptr;
    SimTime delay = 0;  // compute before each step
    bool waking = false;  // in to_wake_
  };
  void start_iteration(SimTime now);
  void post(const CollectiveProgress::TransferId& id, std::uint64_t offset, std::uint64_t bytes);
  void member_done(SimTime now);
  void wake_senders();

  CollectiveSpec spec_;
  std::vector<collective::Schedule> schedules_;  // one, or one per channel (NCCL's rings and trees on GPU servers)
  SimWorld& world_;
  std::vector<Member> members_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> qpn_;  // (member, peer, channel)
  std::unique_ptr<CollectiveProgress> progress_;  // this iteration's
  std::vector<std::uint32_t> to_wake_;            // members whose hosts were given WRITEs, in that order
  std::uint32_t members_finished_ = 0;
  SimTime now_ = 0;  // of the event being handled (progress callbacks have none)
  SimTime iteration_start_ = 0;
  std::vector<SimTime> iteration_times_;
  SimTime finished_at_ = 0;
  bool failed_ = false;
};

}  // namespace uroce::sim
