// DCQCN reaction point as the paper's pseudocode gives it (Zhu et al.,
// SIGCOMM 2015, "Congestion Control for Large-Scale RDMA Deployments"): the
// per-QP sending rate a sender
// keeps, cut on each CNP and recovered by a timer and a byte counter through
// fast recovery, additive and hyper increase. Deterministic: it only sees the
// times and byte counts it is given.
#pragma once

#include <cstdint>

#include "uroce/engine.h"

namespace uroce::transport {

class PaperDcqcn {
 public:
  PaperDcqcn(const PaperDcqcnParams& params, double line_rate_bps);

  // A CNP arrived for this QP.
  void on_cnp(TimeNs now);
  // bytes left the QP (drives the byte counter).
  void on_bytes_sent(std::uint64_t bytes);
  // Runs the rate-increase timer events that are due.
  void on_timer(TimeNs now);
  // When on_timer next has something to do; kNever while at line rate.
  TimeNs next_deadline() const;

  double rate_bps() const { return current_rate_; }
  double target_rate_bps() const { return target_rate_; }
  // Alpha as of now, with the decay for each K without a CNP applied.
  double alpha(TimeNs now) const;
  bool limiting() const { return active_; }

 private:
  void increase();

  PaperDcqcnParams params_;
  double line_rate_;
  bool active_ = false;  // a CNP was seen and the rate has not fully recovered
  double current_rate_;  // R_C
  double target_rate_;   // R_T
  double alpha_;
  std::uint32_t timer_events_ = 0;  // i_T since the last cut
  std::uint32_t byte_events_ = 0;   // i_B since the last cut
  std::uint64_t bytes_since_event_ = 0;
  TimeNs last_cnp_ = kNever;
  TimeNs increase_deadline_ = kNever;
};

}  // namespace uroce::transport
