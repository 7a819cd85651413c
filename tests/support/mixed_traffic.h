// Test helper: random verified RC traffic over connected QP pairs. Each pair
// carries WRITEs, READs, SENDs (with and without immediate) and both atomics
// of random sizes; every completion must come in posting order and succeed,
// READ data and atomic results must match, every SEND must land whole, and at
// the end the WRITE targets and atomic counters must equal a sequential
// model. The engines may sit in a TestNetwork or behind real ports: the
// caller moves the packets and calls pump() in between.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {

struct SizeMix {
  // A message is at most 256 B with probability small, else at most 8 KiB
  // with probability medium, else at most 64 KiB with probability large,
  // else at most huge_bytes; uniform within its bucket.
  double small = 0.6, medium = 0.3, large = 0.095;
  std::uint32_t huge_bytes = 2u << 20;
};

class MixedTraffic {
 public:
  // Connects pairs QP pairs between a and b (directions alternate) with
  // these options, registering each pair's memory.
  MixedTraffic(std::uint64_t seed, Engine& a, Engine& b, std::size_t pairs, RcOptions options, SizeMix sizes = {});
  ~MixedTraffic();

  // Takes completions, then posts until `total` WRs have been posted over
  // all pairs with at most max_outstanding per pair. Records failures with
  // gtest. True when everything posted has completed and been checked.
  bool pump(std::uint64_t total, std::size_t max_outstanding = 24);
  // Checks the WRITE targets and atomic counters against the model.
  void check_memory() const;
  std::uint64_t posted() const { return posted_; }
  std::uint64_t completed() const { return completed_; }

 private:
  struct Pair;
  void post_random(Pair& pair);
  void collect(Pair& pair);
  void on_receive(Pair& pair, const WorkCompletion& wc);
  std::size_t take_local(Pair& pair, std::size_t length);
  std::uint32_t random_size();

  std::mt19937_64 rng_;
  SizeMix sizes_;
  std::vector<std::unique_ptr<Pair>> pairs_;
  std::uint64_t posted_ = 0, completed_ = 0;
};

}  // namespace uroce::testing
