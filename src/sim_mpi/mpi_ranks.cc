// RankGroup's collectives as MPI calls on COMM_WORLD.
#include "sim_mpi/mpi_ranks.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace uroce::sim_mpi {

namespace {

int count_of(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) throw std::runtime_error("MPI: more than 2 GiB for one rank at once");
  return static_cast<int>(bytes);
}

// Displacements of counts laid end to end; the total.
std::size_t lay_out(const std::vector<int>& counts, std::vector<int>& displacements) {
  std::size_t total = 0;
  displacements.resize(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displacements[r] = count_of(total);
    total += static_cast<std::size_t>(counts[r]);
  }
  count_of(total);
  return total;
}

}  // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_SIZE") != nullptr;
}

MpiRanks::MpiRanks() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw std::runtime_error("MPI: this MPI library cannot take calls from more than one thread");
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rank_ = static_cast<std::uint32_t>(rank);
  size_ = static_cast<std::uint32_t>(size);
}

MpiRanks::~MpiRanks() { MPI_Finalize(); }

std::vector<sim::Bytes> MpiRanks::exchange(const std::vector<sim::Bytes>& to_each) {
  std::vector<int> send_counts(size_), receive_counts(size_), send_at, receive_at;
  for (std::uint32_t r = 0; r < size_; ++r) send_counts[r] = count_of(to_each[r].size());
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::size_t send_total = lay_out(send_counts, send_at);
  std::size_t receive_total = lay_out(receive_counts, receive_at);
  sim::Bytes sending(send_total), received(receive_total);
  for (std::uint32_t r = 0; r < size_; ++r) {
    if (!to_each[r].empty()) std::memcpy(sending.data() + send_at[r], to_each[r].data(), to_each[r].size());
  }
  MPI_Alltoallv(sending.data(), send_counts.data(), send_at.data(), MPI_BYTE, received.data(),
                receive_counts.data(), receive_at.data(), MPI_BYTE, MPI_COMM_WORLD);
  std::vector<sim::Bytes> from_each(size_);
  for (std::uint32_t r = 0; r < size_; ++r) {
    auto begin = received.begin() + receive_at[r];
    from_each[r].assign(begin, begin + receive_counts[r]);
  }
  return from_each;
}

std::vector<sim::Bytes> MpiRanks::gather_all(const sim::Bytes& mine) {
  std::vector<int> counts(size_), at;
  int my_count = count_of(mine.size());
  MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  sim::Bytes all(lay_out(counts, at));
  MPI_Allgatherv(mine.data(), my_count, MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, MPI_COMM_WORLD);
  std::vector<sim::Bytes> each(size_);
  for (std::uint32_t r = 0; r < size_; ++r) each[r].assign(all.begin() + at[r], all.begin() + at[r] + counts[r]);
  return each;
}

void MpiRanks::sum(std::span<std::uint64_t> values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
}

void MpiRanks::min(std::span<std::int64_t> values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
}

void MpiRanks::max(std::span<std::uint64_t> values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
}

void MpiRanks::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace uroce::sim_mpi
