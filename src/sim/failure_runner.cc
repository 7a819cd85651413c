// FailureRunner: each failure's events carry its index and what happens.
#include "sim/failure_runner.h"

#include <stdexcept>
#include <string>

namespace uroce::sim {

namespace {

std::string name_of(NodeRef node) { return (node.is_host ? "h" : "s") + std::to_string(node.index); }

}  // namespace

FailureRunner::FailureRunner(const Scenario& scenario, Fabric& fabric, SimWorld& world)
    : fabric_(fabric), world_(world), failures_(scenario.failures), reconverge_(scenario.reconverge) {
  for (std::uint32_t i = 0; i < failures_.size(); ++i) {
    const Failure& failure = failures_[i];
    std::string where = "failures[" + std::to_string(i) + "]: ";
    if (!failure.b && (failure.a.is_host || failure.a.index >= fabric.switch_count())) {
      throw std::invalid_argument(where + "the fabric has no switch " + name_of(failure.a));
    }
    if (failure.b && !fabric.linked(failure.a, *failure.b)) {
      throw std::invalid_argument(where + name_of(failure.a) + " and " + name_of(*failure.b) + " are not linked");
    }
    world.events.schedule(failure.at, this, i * kKinds + kFail);
    if (failure.recover != kSimNever) world.events.schedule(failure.recover, this, i * kKinds + kRecover);
  }
}

void FailureRunner::on_event(SimTime now, std::uint32_t tag) {
  const Failure& failure = failures_[tag / kKinds];
  switch (tag % kKinds) {
    case kFail:
    case kRecover:
      if (failure.b) {
        fabric_.set_link_down(failure.a, *failure.b, tag % kKinds == kFail, now);
      } else {
        fabric_.set_switch_down(failure.a.index, tag % kKinds == kFail, now);
      }
      world_.events.schedule(now + reconverge_, this, (tag / kKinds) * kKinds + kReroute);
      break;
    default:
      fabric_.reroute();
      break;
  }
}

}  // namespace uroce::sim
