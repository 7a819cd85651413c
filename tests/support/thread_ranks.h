// Ranks as threads of one process: a RankGroup per thread whose collective
// calls meet at a barrier, so the simulator's distributed run is tested
// (sanitizers included) without mpirun. Each thread must use its own member
// and make the same calls in the same order, as MPI ranks do.
#pragma once

#include <barrier>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/rank_group.h"

namespace uroce::testing_support {

class ThreadRanks {
 public:
  explicit ThreadRanks(std::uint32_t size);
  ~ThreadRanks();
  sim::RankGroup& member(std::uint32_t rank);

 private:
  class Member;
  // Posts this rank's buffers, waits for every rank's; read them, then leave().
  const std::vector<std::vector<sim::Bytes>>& meet(std::uint32_t rank, std::vector<sim::Bytes> post);
  void leave() { meeting_.arrive_and_wait(); }

  std::barrier<> meeting_;
  std::vector<std::vector<sim::Bytes>> posted_;  // by rank
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace uroce::testing_support
