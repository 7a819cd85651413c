// The simulator's ranks over MPI (Open MPI as Debian packages it): `mpirun
// -np N uroce sim run` makes each process one rank of one run. Frames and
// reductions go through MPI's collectives on COMM_WORLD; MPI's default
// error handler ends every rank when one dies, so no rank waits forever.
#pragma once

#include <cstdint>
#include <memory>

#include "sim/rank_group.h"

namespace uroce::sim_mpi {

// Whether this process was started by mpirun (its environment says so).
bool launched_by_mpirun();

class MpiRanks final : public sim::RankGroup {
 public:
  // Starts MPI. Collective calls may come from any one thread at a time
  // (the partitioned run plans on whichever thread arrives last). Throws
  // std::runtime_error when MPI cannot give that.
  MpiRanks();
  ~MpiRanks() override;  // finalizes MPI
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;

  std::uint32_t rank() const override { return rank_; }
  std::uint32_t size() const override { return size_; }
  std::vector<sim::Bytes> exchange(const std::vector<sim::Bytes>& to_each) override;
  std::vector<sim::Bytes> gather_all(const sim::Bytes& mine) override;
  void sum(std::span<std::uint64_t> values) override;
  void min(std::span<std::int64_t> values) override;
  void max(std::span<std::uint64_t> values) override;

  // Ends the run on every rank with exit status `code` (after this rank
  // printed why): the others may be waiting in a collective call.
  [[noreturn]] void abort(int code);

 private:
  std::uint32_t rank_ = 0;
  std::uint32_t size_ = 1;
};

}  // namespace uroce::sim_mpi
