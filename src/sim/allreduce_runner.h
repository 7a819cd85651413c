// Runs a scenario's ring all-reduce (AllreduceSpec) on the fabric: one RC QP
// from every member to the next, each step a WRITE of one chunk, steps
// released by completions, iterations timed from start to the last member's
// last completion.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/fabric.h"
#include "sim/scenario.h"

namespace uroce::sim {

// Work requests of the all-reduce carry this bit in their wr_id.
inline constexpr std::uint64_t kAllreduceWork = 1ull << 63;

class AllreduceRunner final : public EventHandler {
 public:
  AllreduceRunner(const AllreduceSpec& spec, const TransportSpec& transport, Fabric& fabric, SimWorld& world);

  bool running() const { return iteration_times_.size() < spec_.iterations && !failed_; }
  bool failed() const { return failed_; }
  const std::vector<SimTime>& iteration_times() const { return iteration_times_; }

  // A completion whose wr_id has kAllreduceWork set.
  void completed(const WorkCompletion& completion, SimTime now);
  void on_event(SimTime now, std::uint32_t member) override;  // member's compute is done: post its step

 private:
  struct Member {
    HostNode* host = nullptr;
    std::uint32_t qpn = 0;       // towards the next member
    std::uint32_t posted = 0;    // steps of this iteration posted (or computing)
    std::uint32_t done = 0;      // steps of this iteration whose WRITE completed
    SimTime delay = 0;           // compute before each step
  };
  void start_iteration(SimTime now);
  void try_start(std::uint32_t member, SimTime now);
  std::uint32_t predecessor(std::uint32_t member) const {
    return member == 0 ? static_cast<std::uint32_t>(members_.size()) - 1 : member - 1;
  }

  AllreduceSpec spec_;
  SimWorld& world_;
  std::vector<Member> members_;
  std::uint64_t chunk_bytes_;
  std::uint32_t steps_;
  std::uint32_t members_finished_ = 0;
  SimTime iteration_start_ = 0;
  std::vector<SimTime> iteration_times_;
  bool failed_ = false;
};

}  // namespace uroce::sim
