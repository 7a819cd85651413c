// DCQCN reaction point arithmetic, the paper's variant.
#include "transport/cc/dcqcn_paper.h"

#include <algorithm>
#include <cmath>

namespace uroce::transport {

PaperDcqcn::PaperDcqcn(const PaperDcqcnParams& params, double line_rate_bps)
    : params_(params), line_rate_(line_rate_bps), current_rate_(line_rate_bps), target_rate_(line_rate_bps),
      alpha_(params.initial_alpha) {}

void PaperDcqcn::on_cnp(TimeNs now) {
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

void PaperDcqcn::on_bytes_sent(std::uint64_t bytes) {
  if (!active_) return;
  bytes_since_event_ += bytes;
  while (active_ && bytes_since_event_ >= params_.byte_counter) {
    bytes_since_event_ -= params_.byte_counter;
    ++byte_events_;
    increase();
  }
}

void PaperDcqcn::on_timer(TimeNs now) {
  while (active_ && increase_deadline_ <= now) {
    ++timer_events_;
    increase_deadline_ += params_.rate_timer_ns;
    increase();
  }
}

TimeNs PaperDcqcn::next_deadline() const { return active_ ? increase_deadline_ : kNever; }

double PaperDcqcn::alpha(TimeNs now) const {
  if (last_cnp_ == kNever) return alpha_;
  TimeNs periods = (now - last_cnp_) / params_.alpha_timer_ns;
  return alpha_ * std::pow(1 - params_.g, static_cast<double>(periods));
}

void PaperDcqcn::increase() {
  std::uint32_t f = params_.fast_recovery_steps;
  std::uint32_t most = std::max(timer_events_, byte_events_);
  std::uint32_t least = std::min(timer_events_, byte_events_);
  if (least > f) {
    target_rate_ += (least - f) * params_.hyper_increase_bps;  // hyper increase
  } else if (most >= f) {
    target_rate_ += params_.additive_increase_bps;  // additive increase
  }  // else fast recovery: move halfway back to the target only
  target_rate_ = std::min(target_rate_, line_rate_);
  current_rate_ = std::min((target_rate_ + current_rate_) / 2, line_rate_);
  if (current_rate_ >= line_rate_ * 0.999 && target_rate_ >= line_rate_) {
    // Fully recovered: stop limiting until the next CNP.
    current_rate_ = line_rate_;
    active_ = false;
    increase_deadline_ = kNever;
  }
}

}  // namespace uroce::transport
