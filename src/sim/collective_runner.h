// Runs a scenario's collective (CollectiveSpec) on the fabric: the schedule
// from collective/schedule.h, one RC connection per pair of members that
// exchange data, each transfer an RDMA WRITE, steps released by
// completions, iterations timed from their start to the last member's last
// completion.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "collective/schedule.h"
#include "sim/fabric.h"
#include "sim/scenario.h"

namespace uroce::sim {

// Work requests of the collective carry this bit in their wr_id, with the
// step in bits 32..62 and the member in bits 0..31.
inline constexpr std::uint64_t kCollectiveWork = 1ull << 63;

class CollectiveRunner final : public EventHandler {
 public:
  // Throws std::invalid_argument when the schedule cannot be made (see make_schedule).
  CollectiveRunner(const CollectiveSpec& spec, const TransportSpec& transport, Fabric& fabric, SimWorld& world);

  bool running() const { return iteration_times_.size() < spec_.iterations && !failed_; }
  bool failed() const { return failed_; }
  const std::vector<SimTime>& iteration_times() const { return iteration_times_; }
  SimTime finished_at() const { return finished_at_; }  // when the last finished iteration ended
  const collective::Schedule& schedule() const { return schedule_; }

  // A completion whose wr_id has kCollectiveWork set.
  void completed(const WorkCompletion& completion, SimTime now);
  void on_event(SimTime now, std::uint32_t member) override;  // member's compute is done: post its step

 private:
  struct Member {
    HostNode* host = nullptr;
    std::map<std::uint32_t, std::uint32_t> qpn_to;  // by the member it sends to
    std::uint32_t posted = 0;                       // steps of this iteration posted (or computing)
    std::vector<std::uint32_t> sends_done;          // per step, this iteration
    std::vector<std::uint32_t> receives_done;       // per step, this iteration
    std::uint32_t steps_done = 0;
    SimTime delay = 0;  // compute before each step
  };
  void start_iteration(SimTime now);
  void try_start(std::uint32_t member, SimTime now);
  bool step_complete(std::uint32_t member, std::uint32_t step) const;
  void note_step_progress(std::uint32_t member, std::uint32_t step, SimTime now);

  CollectiveSpec spec_;
  collective::Schedule schedule_;
  SimWorld& world_;
  std::vector<Member> members_;
  std::uint32_t members_finished_ = 0;
  SimTime iteration_start_ = 0;
  std::vector<SimTime> iteration_times_;
  SimTime finished_at_ = 0;
  bool failed_ = false;
};

}  // namespace uroce::sim
