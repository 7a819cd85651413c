// Link and switch failures and recoveries at their scenario times: the
// links go down (or up) at once, and every switch's routes are recomputed around it the
// scenario's reconvergence delay later. Between the two, packets that the
// stale routes send into a failed link are lost, as under ECMP while the
// routing protocol converges.
#pragma once

#include <vector>

#include "sim/fabric.h"
#include "sim/scenario.h"

namespace uroce::sim {

class FailureRunner final : public EventHandler {
 public:
  // Throws std::invalid_argument when a failure names nodes that are not
  // linked, or a switch the fabric does not have.
  FailureRunner(const Scenario& scenario, Fabric& fabric, SimWorld& world);

  void on_event(SimTime now, std::uint32_t tag) override;

 private:
  enum Kind : std::uint32_t { kFail, kRecover, kReroute, kKinds };

  Fabric& fabric_;
  SimWorld& world_;
  std::vector<Failure> failures_;
  SimTime reconverge_;
};

}  // namespace uroce::sim
