// The processes one simulation runs on (MPI ranks, or just this process):
// what the partitioned run needs of them, and nothing of how they talk.
// Every rank builds the nodes of the partitions it owns and runs them; its
// counters and samples are those of its own nodes, and add up with the
// other ranks' to the one-process figures. Every call is collective: each
// rank makes the same calls in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace uroce::sim {

using Bytes = std::vector<std::byte>;

class RankGroup {
 public:
  virtual ~RankGroup() = default;

  virtual std::uint32_t rank() const = 0;
  virtual std::uint32_t size() const = 0;

  // Sends to_each[r] to rank r; returns what each rank sent this one, by rank.
  virtual std::vector<Bytes> exchange(const std::vector<Bytes>& to_each) = 0;
  // Every rank's mine, by rank, on every rank.
  virtual std::vector<Bytes> gather_all(const Bytes& mine) = 0;
  // Element by element over the ranks, in place, on every rank.
  virtual void sum(std::span<std::uint64_t> values) = 0;
  virtual void min(std::span<std::int64_t> values) = 0;
  virtual void max(std::span<std::uint64_t> values) = 0;
};

// One process: every call returns what it was given.
class SoloRank final : public RankGroup {
 public:
  std::uint32_t rank() const override { return 0; }
  std::uint32_t size() const override { return 1; }
  std::vector<Bytes> exchange(const std::vector<Bytes>& to_each) override { return to_each; }
  std::vector<Bytes> gather_all(const Bytes& mine) override { return {mine}; }
  void sum(std::span<std::uint64_t>) override {}
  void min(std::span<std::int64_t>) override {}
  void max(std::span<std::uint64_t>) override {}
};

// Which rank runs a partition: contiguous ranges, so the partitions of one
// rank (its threads) are neighbours in the fabric as they are numbered.
inline std::uint32_t rank_of_part(std::uint32_t part, std::uint32_t parts, std::uint32_t ranks) {
  return static_cast<std::uint32_t>(std::uint64_t{part} * ranks / parts);
}

// The ranks whose `text` differs from rank 0's (collective); empty when all agree.
inline std::vector<std::uint32_t> ranks_that_differ(RankGroup& ranks, const std::string& text) {
  Bytes mine(text.size());
  if (!text.empty()) std::memcpy(mine.data(), text.data(), text.size());
  std::vector<Bytes> each = ranks.gather_all(mine);
  std::vector<std::uint32_t> differ;
  for (std::uint32_t r = 1; r < each.size(); ++r) {
    if (each[r] != each[0]) differ.push_back(r);
  }
  return differ;
}

}  // namespace uroce::sim
