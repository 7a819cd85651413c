// DCQCN reaction point arithmetic.
#include "transport/cc/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace uroce::transport {

Dcqcn::Dcqcn(const DcqcnParams& params)
    : params_(params), current_rate_(params.line_rate_bps), target_rate_(params.line_rate_bps),
      alpha_(params.initial_alpha) {}

void Dcqcn::on_cnp(TimeNs now) {
  // Alpha decays once per K without a CNP; applied lazily, so no timer runs
  // while the QP is not congested.
  if (last_cnp_ != kNever) {
    TimeNs periods = (now - last_cnp_) / params_.alpha_timer_ns;
    alpha_ *= std::pow(1 - params_.g, static_cast<double>(periods));
  }
  last_cnp_ = now;
  active_ = true;
  target_rate_ = current_rate_;
  current_rate_ = std::max(params_.min_rate_bps, current_rate_ * (1 - alpha_ / 2));
  alpha_ = (1 - params_.g) * alpha_ + params_.g;
  timer_events_ = byte_events_ = 0;
  bytes_since_event_ = 0;
  increase_deadline_ = now + params_.rate_timer_ns;
}

void Dcqcn::on_bytes_sent(std::uint64_t bytes) {
  if (!active_) return;
  bytes_since_event_ += bytes;
  while (active_ && bytes_since_event_ >= params_.byte_counter) {
    bytes_since_event_ -= params_.byte_counter;
    ++byte_events_;
    increase();
  }
}

void Dcqcn::on_timer(TimeNs now) {
  while (active_ && increase_deadline_ <= now) {
    ++timer_events_;
    increase_deadline_ += params_.rate_timer_ns;
    increase();
  }
}

TimeNs Dcqcn::next_deadline() const { return active_ ? increase_deadline_ : kNever; }

double Dcqcn::alpha(TimeNs now) const {
  if (last_cnp_ == kNever) return alpha_;
  TimeNs periods = (now - last_cnp_) / params_.alpha_timer_ns;
  return alpha_ * std::pow(1 - params_.g, static_cast<double>(periods));
}

void Dcqcn::increase() {
  std::uint32_t f = params_.fast_recovery_steps;
  std::uint32_t most = std::max(timer_events_, byte_events_);
  std::uint32_t least = std::min(timer_events_, byte_events_);
  if (least > f) {
    target_rate_ += (least - f) * params_.hyper_increase_bps;  // hyper increase
  } else if (most >= f) {
    target_rate_ += params_.additive_increase_bps;  // additive increase
  }  // else fast recovery: move halfway back to the target only
  target_rate_ = std::min(target_rate_, params_.line_rate_bps);
  current_rate_ = std::min((target_rate_ + current_rate_) / 2, params_.line_rate_bps);
  if (current_rate_ >= params_.line_rate_bps * 0.999 && target_rate_ >= params_.line_rate_bps) {
    // Fully recovered: stop limiting until the next CNP.
    current_rate_ = params_.line_rate_bps;
    active_ = false;
    increase_deadline_ = kNever;
  }
}

}  // namespace uroce::transport
