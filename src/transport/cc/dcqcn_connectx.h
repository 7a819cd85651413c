// DCQCN reaction point as ConnectX NICs run it (ConnectxDcqcnParams in
// uroce/engine.h says how it differs from the paper). Time-driven like the
// hardware, but lazy: alpha's periodic update and the rate-decrease checks
// are computed when something happens instead of by a timer per period, so an
// idle or steady QP costs nothing. Deterministic.
#pragma once

#include <cstdint>

#include "uroce/engine.h"

namespace uroce::transport {

class ConnectxDcqcn {
 public:
  ConnectxDcqcn(const ConnectxDcqcnParams& params, double line_rate_bps);

  // A CNP arrived: flags alpha's period and the next rate-decrease check.
  void on_cnp(TimeNs now);
  // bytes left the QP (the byte counter, when rpg_byte_reset is set).
  void on_bytes_sent(std::uint64_t bytes);
  // Runs the due rate-decrease check and rate-increase periods, in time order.
  void on_timer(TimeNs now);
  // When on_timer next has something to do; kNever while nothing is pending.
  TimeNs next_deadline() const;

  double rate_bps() const { return current_rate_; }
  double target_rate_bps() const { return target_rate_; }
  // Alpha as the hardware would hold it at now.
  double alpha(TimeNs now) const;
  bool limiting() const { return active_ || decrease_at_ != kNever; }

 private:
  void advance_alpha(TimeNs now);
  void cut(TimeNs now);
  void increase_event(bool from_timer);

  ConnectxDcqcnParams params_;
  double line_rate_;
  double gain_;          // g, from dce_tcp_g
  double cut_scale_;     // 2^(10 - rpg_gd): a cut takes alpha x this off the rate
  double current_rate_;  // R_C
  double target_rate_;   // R_T
  bool seen_cnp_ = false;  // the QP's first CNP came (alpha's clock runs from then)
  bool active_ = false;    // cut and not yet back at line rate
  double alpha_ = 0;
  TimeNs alpha_period_start_ = 0;  // start of the alpha period running now
  bool cnp_in_alpha_period_ = false;
  TimeNs decrease_grid_ = 0;        // rate-decrease checks fall on this + k periods
  TimeNs decrease_at_ = kNever;     // a CNP waits for this check
  TimeNs increase_at_ = kNever;     // the next rate-increase period ends
  std::uint32_t stage_ = 0;         // increase events since the last cut
  bool timer_increase_since_cut_ = false;
  std::uint64_t bytes_since_event_ = 0;
};

}  // namespace uroce::transport
