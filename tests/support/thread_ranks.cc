// The collectives of ThreadRanks: post, meet, read, meet again.
#include "tests/support/thread_ranks.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace uroce::testing_support {

namespace {

template <typename Value>
sim::Bytes to_bytes(std::span<const Value> values) {
  sim::Bytes bytes(values.size_bytes());
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace

class ThreadRanks::Member final : public sim::RankGroup {
 public:
  Member(ThreadRanks& all, std::uint32_t rank) : all_(all), rank_(rank) {}

  std::uint32_t rank() const override { return rank_; }
  std::uint32_t size() const override { return static_cast<std::uint32_t>(all_.members_.size()); }

  std::vector<sim::Bytes> exchange(const std::vector<sim::Bytes>& to_each) override {
    const auto& posted = all_.meet(rank_, to_each);
    std::vector<sim::Bytes> mine;
    for (const std::vector<sim::Bytes>& from : posted) mine.push_back(from[rank_]);
    all_.leave();
    return mine;
  }
  std::vector<sim::Bytes> gather_all(const sim::Bytes& mine) override {
    const auto& posted = all_.meet(rank_, {mine});
    std::vector<sim::Bytes> each;
    for (const std::vector<sim::Bytes>& from : posted) each.push_back(from[0]);
    all_.leave();
    return each;
  }
  void sum(std::span<std::uint64_t> values) override { combine(values, std::plus<>()); }
  void min(std::span<std::int64_t> values) override {
    combine(values, [](std::int64_t a, std::int64_t b) { return std::min(a, b); });
  }
  void max(std::span<std::uint64_t> values) override {
    combine(values, [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); });
  }

 private:
  template <typename Value, typename Op>
  void combine(std::span<Value> values, Op op) {
    const auto& posted = all_.meet(rank_, {to_bytes(std::span<const Value>(values))});
    std::vector<Value> result(values.size());
    for (std::size_t r = 0; r < posted.size(); ++r) {
      std::vector<Value> theirs(values.size());
      if (!theirs.empty()) std::memcpy(theirs.data(), posted[r][0].data(), theirs.size() * sizeof(Value));
      for (std::size_t i = 0; i < values.size(); ++i) result[i] = r == 0 ? theirs[i] : op(result[i], theirs[i]);
    }
    all_.leave();
    std::copy(result.begin(), result.end(), values.begin());
  }

  ThreadRanks& all_;
  std::uint32_t rank_;
};

ThreadRanks::ThreadRanks(std::uint32_t size) : meeting_(size), posted_(size) {
  for (std::uint32_t rank = 0; rank < size; ++rank) members_.push_back(std::make_unique<Member>(*this, rank));
}

ThreadRanks::~ThreadRanks() = default;

sim::RankGroup& ThreadRanks::member(std::uint32_t rank) { return *members_[rank]; }

const std::vector<std::vector<sim::Bytes>>& ThreadRanks::meet(std::uint32_t rank, std::vector<sim::Bytes> post) {
  posted_[rank] = std::move(post);
  meeting_.arrive_and_wait();
  return posted_;
}

}  // namespace uroce::testing_support
