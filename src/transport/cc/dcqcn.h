// The DCQCN reaction point a QP runs: the ConnectX variant or the paper's,
// as DcqcnParams::variant chooses. Both take CNPs, bytes sent and time, and
// give the rate at which the QP may send.
#pragma once

#include <cstdint>
#include <variant>

#include "transport/cc/dcqcn_connectx.h"
#include "transport/cc/dcqcn_paper.h"
#include "uroce/engine.h"

namespace uroce::transport {

class Dcqcn {
 public:
  explicit Dcqcn(const DcqcnParams& params)
      : point_(params.variant == DcqcnVariant::paper
                   ? Point(std::in_place_type<PaperDcqcn>, params.paper, params.line_rate_bps)
                   : Point(std::in_place_type<ConnectxDcqcn>, params.connectx, params.line_rate_bps)) {}

  void on_cnp(TimeNs now) {
    std::visit([&](auto& point) { point.on_cnp(now); }, point_);
  }
  void on_bytes_sent(std::uint64_t bytes) {
    std::visit([&](auto& point) { point.on_bytes_sent(bytes); }, point_);
  }
  void on_timer(TimeNs now) {
    std::visit([&](auto& point) { point.on_timer(now); }, point_);
  }
  TimeNs next_deadline() const {
    return std::visit([](const auto& point) { return point.next_deadline(); }, point_);
  }
  double rate_bps() const {
    return std::visit([](const auto& point) { return point.rate_bps(); }, point_);
  }
  double target_rate_bps() const {
    return std::visit([](const auto& point) { return point.target_rate_bps(); }, point_);
  }
  double alpha(TimeNs now) const {
    return std::visit([&](const auto& point) { return point.alpha(now); }, point_);
  }
  bool limiting() const {
    return std::visit([](const auto& point) { return point.limiting(); }, point_);
  }

 private:
  using Point = std::variant<ConnectxDcqcn, PaperDcqcn>;
  Point point_;
};

}  // namespace uroce::transport
