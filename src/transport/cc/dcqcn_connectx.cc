// DCQCN reaction point arithmetic, the ConnectX variant.
#include "transport/cc/dcqcn_connectx.h"

#include <algorithm>
#include <cmath>

namespace uroce::transport {

namespace {

// Alpha after `periods` whole alpha periods, the first of which saw a CNP or not.
double alpha_after(double alpha, double gain, TimeNs periods, bool cnp_in_first) {
  if (periods <= 0) return alpha;
  alpha = (1 - gain) * alpha + (cnp_in_first ? gain : 0);
  if (periods > 1) alpha *= std::pow(1 - gain, static_cast<double>(periods - 1));
  return alpha;
}

}  // namespace

ConnectxDcqcn::ConnectxDcqcn(const ConnectxDcqcnParams& params, double line_rate_bps)
    : params_(params),
      line_rate_(line_rate_bps),
      gain_((1024.0 - std::min<std::uint32_t>(params.dce_tcp_g, 1024)) / 1024.0),
      cut_scale_(std::ldexp(1.0, 10 - static_cast<int>(params.rpg_gd))),
      current_rate_(line_rate_bps),
      target_rate_(line_rate_bps) {
  params_.dce_tcp_rtt_ns = std::max<TimeNs>(params_.dce_tcp_rtt_ns, 1);
  params_.rate_reduce_monitor_period_ns = std::max<TimeNs>(params_.rate_reduce_monitor_period_ns, 1);
  params_.rpg_time_reset_ns = std::max<TimeNs>(params_.rpg_time_reset_ns, 1);
}

void ConnectxDcqcn::on_cnp(TimeNs now) {
  if (!seen_cnp_) {
    // The first CNP starts alpha at its initial value and the two clocks; it
    // does not count towards alpha's first period.
    seen_cnp_ = true;
    alpha_ = params_.initial_alpha_value / 1024.0;
    alpha_period_start_ = now;
    decrease_grid_ = now + 1;  // checks run just after alpha's updates
    decrease_at_ = decrease_grid_ + params_.rate_reduce_monitor_period_ns;
    if (params_.rate_to_set_on_first_cnp_bps > 0) {
      current_rate_ = target_rate_ = std::min(params_.rate_to_set_on_first_cnp_bps, line_rate_);
    }
    active_ = true;
    return;
  }
  advance_alpha(now);
  cnp_in_alpha_period_ = true;
  active_ = true;
  if (decrease_at_ == kNever) {
    TimeNs period = params_.rate_reduce_monitor_period_ns;
    TimeNs checks_passed = std::max<TimeNs>((now - decrease_grid_) / period + 1, 1);
    decrease_at_ = decrease_grid_ + checks_passed * period;
  }
}

void ConnectxDcqcn::on_bytes_sent(std::uint64_t bytes) {
  if (params_.rpg_byte_reset == 0 || !active_) return;
  bytes_since_event_ += bytes;
  while (active_ && bytes_since_event_ >= params_.rpg_byte_reset) {
    bytes_since_event_ -= params_.rpg_byte_reset;
    increase_event(false);
  }
}

void ConnectxDcqcn::on_timer(TimeNs now) {
  while (true) {
    TimeNs next = std::min(decrease_at_, increase_at_);
    if (next > now) return;
    if (decrease_at_ <= increase_at_) {
      cut(decrease_at_);
    } else {
      increase_at_ += params_.rpg_time_reset_ns;
      increase_event(true);
    }
  }
}

TimeNs ConnectxDcqcn::next_deadline() const { return std::min(decrease_at_, increase_at_); }

double ConnectxDcqcn::alpha(TimeNs now) const {
  if (!seen_cnp_) return alpha_;
  return alpha_after(alpha_, gain_, (now - alpha_period_start_) / params_.dce_tcp_rtt_ns, cnp_in_alpha_period_);
}

void ConnectxDcqcn::advance_alpha(TimeNs now) {
  TimeNs periods = (now - alpha_period_start_) / params_.dce_tcp_rtt_ns;
  if (periods <= 0) return;
  alpha_ = alpha_after(alpha_, gain_, periods, cnp_in_alpha_period_);
  alpha_period_start_ += periods * params_.dce_tcp_rtt_ns;
  cnp_in_alpha_period_ = false;
}

// A rate-decrease check that a CNP flagged.
void ConnectxDcqcn::cut(TimeNs now) {
  advance_alpha(now);
  decrease_at_ = kNever;
  if (params_.clamp_tgt_rate || (params_.clamp_tgt_rate_after_time_inc && timer_increase_since_cut_)) {
    target_rate_ = current_rate_;
  }
  double factor = std::max(1 - alpha_ * cut_scale_, params_.rpg_min_dec_fac / 100.0);
  current_rate_ = std::max(params_.rpg_min_rate_bps, current_rate_ * factor);
  active_ = true;
  stage_ = 0;
  timer_increase_since_cut_ = false;
  bytes_since_event_ = 0;
  increase_at_ = now + params_.rpg_time_reset_ns;
}

// One rate-increase event: fast recovery for the first rpg_threshold, then
// one R_AI, then one R_HAI per event; R_C moves halfway to R_T each time.
void ConnectxDcqcn::increase_event(bool from_timer) {
  if (stage_ == params_.rpg_threshold) {
    target_rate_ += params_.rpg_ai_rate_bps;
  } else if (stage_ > params_.rpg_threshold) {
    target_rate_ += params_.rpg_hai_rate_bps;
  }
  ++stage_;
  if (from_timer) timer_increase_since_cut_ = true;
  target_rate_ = std::min(target_rate_, line_rate_);
  current_rate_ = std::min((target_rate_ + current_rate_) / 2, line_rate_);
  if (current_rate_ >= line_rate_ * 0.999 && target_rate_ >= line_rate_) {
    // Back at line rate: nothing to pace until the next CNP.
    current_rate_ = line_rate_;
    active_ = false;
    increase_at_ = kNever;
  }
}

}  // namespace uroce::transport
