// The DCQCN reaction points' arithmetic, both variants: the paper's
// pseudocode and ConnectX's time-driven algorithm (alpha every dce_tcp_rtt,
// at most one cut per rate_reduce_monitor_period, increases by the timer,
// target-rate clamping), stepped with a hand-held clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "transport/cc/dcqcn.h"

namespace uroce {
namespace {

using transport::ConnectxDcqcn;
using transport::PaperDcqcn;

constexpr double kLine = 40e9;

// ---- The paper's variant.

TEST(PaperDcqcn, FirstCnpHalvesTheRateAndRaisesAlpha) {
  PaperDcqcn cc(PaperDcqcnParams{}, kLine);
  EXPECT_FALSE(cc.limiting());
  EXPECT_EQ(cc.next_deadline(), kNever);
  cc.on_cnp(0);
  EXPECT_TRUE(cc.limiting());
  EXPECT_DOUBLE_EQ(cc.rate_bps(), 20e9);  // alpha starts at 1: R_C x (1 - 1/2)
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), 40e9);
  EXPECT_DOUBLE_EQ(cc.alpha(0), 1.0);  // (1-g) x 1 + g
  EXPECT_EQ(cc.next_deadline(), 55'000);
}

TEST(PaperDcqcn, AlphaDecaysOncePerQuietPeriod) {
  PaperDcqcn cc(PaperDcqcnParams{}, kLine);
  cc.on_cnp(0);
  double g = PaperDcqcnParams{}.g;
  EXPECT_DOUBLE_EQ(cc.alpha(54'999), 1.0);
  EXPECT_NEAR(cc.alpha(55'000), 1 - g, 1e-12);
  EXPECT_NEAR(cc.alpha(10 * 55'000 + 1), std::pow(1 - g, 10), 1e-12);
  cc.on_cnp(10 * 55'000 + 1);  // the cut uses the decayed alpha
  double alpha = std::pow(1 - g, 10);
  EXPECT_NEAR(cc.alpha(10 * 55'000 + 1), (1 - g) * alpha + g, 1e-12);
}

TEST(PaperDcqcn, RecoversThroughFastRecoveryAdditiveAndHyperIncrease) {
  PaperDcqcnParams p;
  PaperDcqcn cc(p, kLine);
  cc.on_cnp(0);  // R_C = 20G, R_T = 40G
  TimeNs t = 0;
  double previous = cc.rate_bps();
  // Fast recovery: each timer event moves R_C halfway to R_T, R_T unchanged.
  for (int i = 1; i < 5; ++i) {
    t += p.rate_timer_ns;
    cc.on_timer(t);
    EXPECT_DOUBLE_EQ(cc.target_rate_bps(), 40e9);
    EXPECT_DOUBLE_EQ(cc.rate_bps(), (40e9 + previous) / 2);
    previous = cc.rate_bps();
  }
  // A second cut with the rate below line rate, then additive increase steps.
  cc.on_cnp(t);
  double target = previous;  // R_T = R_C at the cut
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), target);
  for (int i = 1; i <= 5; ++i) {
    t += p.rate_timer_ns;
    cc.on_timer(t);
  }
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), target + p.additive_increase_bps);  // the 5th event is additive
  // Bytes past F byte-counter events as well: hyper increase.
  double before = cc.target_rate_bps();
  cc.on_bytes_sent(7 * p.byte_counter);  // i_B = 7 > F while i_T = 5: additive still (min(i_T,i_B) = 5)
  t += p.rate_timer_ns;
  cc.on_timer(t);  // i_T = 6, i_B = 7: hyper with i = 1
  EXPECT_GT(cc.target_rate_bps(), before + 7 * p.additive_increase_bps);
  // Eventually back at line rate, and idle.
  for (int i = 0; i < 2000 && cc.limiting(); ++i) {
    t += p.rate_timer_ns;
    cc.on_timer(t);
  }
  EXPECT_FALSE(cc.limiting());
  EXPECT_DOUBLE_EQ(cc.rate_bps(), kLine);
  EXPECT_EQ(cc.next_deadline(), kNever);
}

TEST(PaperDcqcn, RateNeverFallsBelowTheFloor) {
  PaperDcqcnParams p;
  PaperDcqcn cc(p, kLine);
  for (int i = 0; i < 100; ++i) cc.on_cnp(i * 1000);
  EXPECT_DOUBLE_EQ(cc.rate_bps(), p.min_rate_bps);
}


// ---- The ConnectX variant, with NVIDIA's defaults unless a test says otherwise.

// g and the cut's factor from the fixed-point defaults: dce_tcp_g 1019 keeps
// 1019/1024 of alpha; rpg_gd 11 takes alpha/2 off the rate.
constexpr double kGain = 5.0 / 1024;
constexpr double kInitialAlpha = 1023.0 / 1024;

TEST(ConnectxDcqcn, TheFirstCnpCutsAtTheNextMonitorPeriodNotAtOnce) {
  ConnectxDcqcnParams p;
  ConnectxDcqcn cc(p, kLine);
  EXPECT_FALSE(cc.limiting());
  EXPECT_EQ(cc.next_deadline(), kNever);
  cc.on_cnp(1'000);
  EXPECT_TRUE(cc.limiting());
  EXPECT_DOUBLE_EQ(cc.rate_bps(), kLine);  // a CNP only sets a flag
  EXPECT_DOUBLE_EQ(cc.alpha(1'000), kInitialAlpha);
  EXPECT_EQ(cc.next_deadline(), 1'000 + 1 + 4'000);  // checks run just after alpha's updates
  cc.on_timer(5'000);
  EXPECT_DOUBLE_EQ(cc.rate_bps(), kLine);
  cc.on_timer(5'001);
  // Four alpha periods passed without a CNP (the first CNP does not count).
  double alpha = kInitialAlpha * std::pow(1 - kGain, 4);
  EXPECT_NEAR(cc.alpha(5'001), alpha, 1e-12);
  EXPECT_NEAR(cc.rate_bps(), kLine * (1 - alpha / 2), 1.0);
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), kLine);  // no timer increase yet: the target is kept
  EXPECT_EQ(cc.next_deadline(), 5'001 + 300'000);  // the increase timer starts at the cut
}

TEST(ConnectxDcqcn, ManyCnpsInOneMonitorPeriodCutOnce) {
  ConnectxDcqcn cc(ConnectxDcqcnParams{}, kLine);
  cc.on_cnp(0);
  cc.on_timer(4'001);
  double after_first = cc.rate_bps();
  for (TimeNs t = 4'100; t < 8'000; t += 100) cc.on_cnp(t);  // 39 CNPs before the next check
  EXPECT_EQ(cc.next_deadline(), 8'001);
  cc.on_timer(8'001);
  EXPECT_LT(cc.rate_bps(), after_first);
  double after_second = cc.rate_bps();
  cc.on_timer(12'001);  // no CNP since: no cut
  EXPECT_DOUBLE_EQ(cc.rate_bps(), after_second);
}

TEST(ConnectxDcqcn, AlphaRisesInPeriodsWithACnpAndDecaysInPeriodsWithout) {
  ConnectxDcqcn cc(ConnectxDcqcnParams{}, kLine);
  cc.on_cnp(0);
  cc.on_cnp(500);    // in the first period
  cc.on_cnp(2'500);  // in the third
  double alpha = kInitialAlpha;
  alpha = (1 - kGain) * alpha + kGain;  // period [0, 1 us)
  alpha = (1 - kGain) * alpha;          // [1, 2)
  alpha = (1 - kGain) * alpha + kGain;  // [2, 3)
  alpha *= std::pow(1 - kGain, 7);      // [3, 10)
  EXPECT_NEAR(cc.alpha(10'000), alpha, 1e-12);
  EXPECT_NEAR(cc.alpha(10'999), alpha, 1e-12);  // the period running now has not ended
}

TEST(ConnectxDcqcn, TimerDrivesFastRecoveryThenOneAdditiveThenHyperIncreases) {
  ConnectxDcqcnParams p;
  ConnectxDcqcn cc(p, kLine);
  cc.on_cnp(0);
  cc.on_timer(4'001);
  double rate = cc.rate_bps();
  double target = kLine;
  TimeNs t = 4'001;
  // rpg_threshold = 1: one fast-recovery period, one additive, then hyper.
  const double steps[] = {0, p.rpg_ai_rate_bps, p.rpg_hai_rate_bps, p.rpg_hai_rate_bps};
  for (double step : steps) {
    t += p.rpg_time_reset_ns;
    EXPECT_EQ(cc.next_deadline(), t);
    cc.on_timer(t);
    target = std::min(kLine, target + step);
    rate = (rate + target) / 2;
    EXPECT_DOUBLE_EQ(cc.target_rate_bps(), target);
    EXPECT_NEAR(cc.rate_bps(), rate, 1.0);
  }
}

TEST(ConnectxDcqcn, ACutKeepsTheTargetUnlessTheTimerRaisedTheRateSinceTheLastCut) {
  ConnectxDcqcnParams p;
  p.rpg_time_reset_ns = 10'000;
  ConnectxDcqcn cc(p, 10e9);
  cc.on_cnp(0);
  cc.on_timer(4'001);  // cut 1: R_T stays at line rate
  cc.on_cnp(5'000);
  cc.on_timer(8'001);  // cut 2, before any increase: R_T still line rate
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), 10e9);
  cc.on_timer(18'001);  // a timer increase
  double raised = cc.rate_bps();
  cc.on_cnp(19'000);
  cc.on_timer(20'001);  // cut 3, after it: R_T = R_C (clamp_tgt_rate_after_time_inc)
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), raised);

  p.clamp_tgt_rate_after_time_inc = false;
  ConnectxDcqcn never(p, 10e9);
  never.on_cnp(0);
  never.on_timer(18'001);
  never.on_cnp(19'000);
  never.on_timer(20'001);
  EXPECT_DOUBLE_EQ(never.target_rate_bps(), 10e9);

  p.clamp_tgt_rate = true;
  ConnectxDcqcn always(p, 10e9);
  always.on_cnp(0);
  always.on_timer(4'001);  // even the first cut sets R_T = R_C
  EXPECT_DOUBLE_EQ(always.target_rate_bps(), 10e9);
  always.on_cnp(5'000);
  double before = always.rate_bps();
  always.on_timer(8'001);
  EXPECT_DOUBLE_EQ(always.target_rate_bps(), before);
}

TEST(ConnectxDcqcn, RateOnFirstCnpSetsBothRatesAtOnce) {
  ConnectxDcqcnParams p;
  p.rate_to_set_on_first_cnp_bps = 12e9;
  ConnectxDcqcn cc(p, kLine);
  cc.on_cnp(0);
  EXPECT_DOUBLE_EQ(cc.rate_bps(), 12e9);
  EXPECT_DOUBLE_EQ(cc.target_rate_bps(), 12e9);
}

TEST(ConnectxDcqcn, OneCutKeepsRpgMinDecFacAndTheRateKeepsItsFloor) {
  ConnectxDcqcnParams p;
  p.rpg_gd = 10;            // a cut takes alpha x 1: all of the rate at alpha 1
  p.rpg_min_dec_fac = 75;   // but one cut keeps 75%
  p.initial_alpha_value = 1023;
  ConnectxDcqcn cc(p, kLine);
  cc.on_cnp(0);
  cc.on_timer(4'001);
  EXPECT_DOUBLE_EQ(cc.rate_bps(), 0.75 * kLine);
  p.rpg_min_dec_fac = 0;
  p.rpg_min_rate_bps = 1e9;
  ConnectxDcqcn floor(p, kLine);
  for (TimeNs t = 0; t < 400'000; t += 4'000) {
    floor.on_cnp(t);
    floor.on_timer(t + 1);
  }
  EXPECT_DOUBLE_EQ(floor.rate_bps(), 1e9);
}

TEST(ConnectxDcqcn, TheByteCounterIsOffByDefaultAndAdvancesTheStageWhenSet) {
  ConnectxDcqcnParams p;
  ConnectxDcqcn timer_only(p, kLine);
  timer_only.on_cnp(0);
  timer_only.on_timer(4'001);
  double cut = timer_only.rate_bps();
  timer_only.on_bytes_sent(1'000'000'000);
  EXPECT_DOUBLE_EQ(timer_only.rate_bps(), cut);

  p.rpg_byte_reset = 32767;
  ConnectxDcqcn bytes(p, kLine);
  bytes.on_cnp(0);
  bytes.on_timer(4'001);
  bytes.on_bytes_sent(3 * 32767);  // fast recovery, additive, hyper
  EXPECT_DOUBLE_EQ(bytes.target_rate_bps(), kLine);  // capped at line rate
  EXPECT_GT(bytes.rate_bps(), cut);
}

TEST(ConnectxDcqcn, BackAtLineRateItIdlesAndKeepsItsAlphaForTheNextEpisode) {
  ConnectxDcqcnParams p;
  p.rpg_time_reset_ns = 1'000;
  p.rpg_hai_rate_bps = 10e9;
  ConnectxDcqcn cc(p, kLine);
  cc.on_cnp(0);
  TimeNs t = 4'001;
  for (int i = 0; i < 200 && cc.limiting(); ++i, t += 1'000) cc.on_timer(t);
  EXPECT_FALSE(cc.limiting());
  EXPECT_DOUBLE_EQ(cc.rate_bps(), kLine);
  EXPECT_EQ(cc.next_deadline(), kNever);
  // The next CNP is not a first CNP: alpha kept decaying, so the cut is small.
  TimeNs later = t + 500'000;
  EXPECT_LT(cc.alpha(later), 0.1);
  cc.on_cnp(later);
  EXPECT_DOUBLE_EQ(cc.rate_bps(), kLine);
  cc.on_timer(cc.next_deadline());
  EXPECT_GT(cc.rate_bps(), kLine * 0.95);
}

// The facade picks the variant from DcqcnParams.
TEST(Dcqcn, TheVariantChoosesTheAlgorithm) {
  DcqcnParams params;
  params.line_rate_bps = kLine;
  transport::Dcqcn connectx(params);
  connectx.on_cnp(0);
  EXPECT_DOUBLE_EQ(connectx.rate_bps(), kLine);  // cut later, at the monitor period
  params.variant = DcqcnVariant::paper;
  transport::Dcqcn paper(params);
  paper.on_cnp(0);
  EXPECT_DOUBLE_EQ(paper.rate_bps(), kLine / 2);  // cut at once
}

}  // namespace
}  // namespace uroce
