// Randomized soak: thousands of random WRs of every type and size over several
// QP pairs, with loss, duplication, reordering and corruption on the wire.
// Every byte must arrive as sent, every completion must match its WR in
// order, atomics must match a sequential model, and nothing may fail. The
// seed is fixed, so that every run (CI's too) tests the same traffic, and
// printed; UROCE_SOAK_SEED and UROCE_SOAK_WRS override it, and
// UROCE_SOAK_SEED=random draws a fresh one (a randomized soak).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <string>

#include "common/bytes.h"
#include "tests/support/mixed_traffic.h"
#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::strtoull(value, nullptr, 0) : fallback;
}

struct SoakSetup {
  ChannelFaults faults;
  LossRecovery recovery = LossRecovery::go_back_n;
  CongestionConfig congestion;
  MultipathConfig multipath;
  std::uint64_t default_wrs = 4000;
  std::optional<std::uint64_t> seed;  // a seed that once failed; else kSoakSeed (or UROCE_SOAK_SEED)
};

constexpr std::uint64_t kSoakSeed = 20261127;

// UROCE_SOAK_SEED: a number, or "random" for a fresh one; unset: kSoakSeed.
std::uint64_t soak_seed() {
  const char* value = std::getenv("UROCE_SOAK_SEED");
  if (value == nullptr || *value == '\0') return kSoakSeed;
  if (std::string(value) == "random") return std::random_device{}();
  return std::strtoull(value, nullptr, 0);
}

void run_soak(const SoakSetup& setup) {
  std::uint64_t seed = setup.seed ? *setup.seed : soak_seed();
  std::uint64_t wrs = env_or("UROCE_SOAK_WRS", setup.default_wrs);
  SCOPED_TRACE("reproduce with UROCE_SOAK_SEED=" + std::to_string(seed) + " UROCE_SOAK_WRS=" + std::to_string(wrs));
  std::cout << "soak seed " << seed << " starts" << std::endl;
  TestNetwork network(seed, setup.faults);
  Engine& a = network.add_engine(setup.congestion);
  Engine& b = network.add_engine(setup.congestion);
  RcOptions options;
  options.recovery = setup.recovery;
  options.multipath = setup.multipath;
  options.sq_psn = options.rq_psn = 0xFFFF00;  // pairs start near the 2^24 wrap
  MixedTraffic traffic(seed, a, b, 4, options);
  ASSERT_TRUE(network.run_until([&] { return traffic.pump(wrs); }, TimeNs{3600} * 1'000'000'000))
      << "the soak did not finish";
  traffic.check_memory();
  const NetworkStats& stats = network.stats();
  std::cout << "soak seed " << seed << ": " << wrs << " WRs, " << stats.delivered << " datagrams delivered, "
            << stats.dropped << " dropped, " << stats.duplicated << " duplicated, " << stats.reordered
            << " reordered, " << stats.corrupted << " corrupted, " << stats.ecn_marked << " CE-marked\n";
  const EngineCounters& x = a.counters();
  const EngineCounters& y = b.counters();
  std::cout << "  retransmitted " << x.retransmitted_packets + y.retransmitted_packets << ", timeouts "
            << x.timeouts + y.timeouts << ", held out of order " << x.held_out_of_order + y.held_out_of_order
            << ", CNPs " << x.cnps_sent + y.cnps_sent << ", trimmed " << stats.trimmed << "\n";
  if (setup.multipath.entropy_values != 0) {
    std::cout << "  multipath: lost " << x.paths_lost + y.paths_lost << ", EVs retired "
              << x.paths_retired + y.paths_retired << ", probes " << x.paths_probes + y.paths_probes << ", restored "
              << x.paths_restored + y.paths_restored << ", congested " << x.paths_congested + y.paths_congested
              << ", placed on arrival " << x.placed_out_of_order + y.placed_out_of_order << "\n";
    // Direct placement carried the checked bytes: WRITE packets after gaps went straight to memory.
    if (setup.multipath.direct_placement) {
      EXPECT_GT(x.placed_out_of_order + y.placed_out_of_order, 0u);
    }
  }
}

ChannelFaults lossy() {
  ChannelFaults faults;
  faults.drop = 0.05;
  faults.duplicate = 0.02;
  faults.reorder = 0.05;
  faults.corrupt = 0.01;
  return faults;
}

TEST(RcSoak, CleanNetwork) { run_soak(SoakSetup{}); }

SoakSetup lossy_setup(LossRecovery recovery, std::uint64_t wrs) {
  SoakSetup setup;
  setup.faults = lossy();
  setup.recovery = recovery;
  setup.default_wrs = wrs;
  return setup;
}

TEST(RcSoak, LossDuplicationReorderingCorruption) { run_soak(lossy_setup(LossRecovery::go_back_n, 10000)); }

TEST(RcSoak, SelectiveRepeatUnderLossDuplicationReorderingCorruption) {
  run_soak(lossy_setup(LossRecovery::selective_repeat, 10000));
}

// DCQCN on both ends with a fifth of all packets CE-marked: QPs are paced
// (rates cut, timers raise them) on top of loss, and nothing may change.
TEST(RcSoak, DcqcnPacingUnderLossAndEcnMarks) {
  SoakSetup setup = lossy_setup(LossRecovery::go_back_n, 4000);
  setup.faults.ecn_mark = 0.2;
  setup.congestion.reaction_point = true;
  setup.congestion.dcqcn.line_rate_bps = 25e9;
  run_soak(setup);
}

// Two seeds at which the responder, paced low by DCQCN, answered each
// go-back-N rewind with another copy of every READ in the window until the
// requester ran out of retries: a READ asked again now replaces what is
// still queued of its earlier responses.
TEST(RcSoak, DcqcnPacedReadResponsesDoNotPileUpUnderRewinds) {
  for (std::uint64_t seed : {2210511476u, 4188611076u}) {
    SoakSetup setup = lossy_setup(LossRecovery::go_back_n, 4000);
    setup.faults.ecn_mark = 0.2;
    setup.congestion.reaction_point = true;
    setup.congestion.dcqcn.line_rate_bps = 25e9;
    setup.seed = seed;
    run_soak(setup);
  }
}

// Multipath: every WR type sprayed over 32 EVs whose paths differ in delay
// by up to 35 us, with loss, duplication, reordering, corruption and
// trimming on top. Random loss retires EVs and probes bring them back.
TEST(RcSoak, MultipathUnderLossReorderingTrimmingAndPathDelays) {
  SoakSetup setup = lossy_setup(LossRecovery::selective_repeat, 6000);
  setup.faults.drop = 0.02;
  setup.faults.trim = 0.02;
  setup.faults.path_delay_ns = [](std::span<const std::uint8_t> datagram) {
    return static_cast<TimeNs>(load_be16(&datagram[20]) % 8) * 5'000;  // by UDP source port
  };
  setup.multipath.entropy_values = 32;
  setup.multipath.probe_after_ns = 200'000;
  run_soak(setup);
}

}  // namespace
}  // namespace uroce::testing
