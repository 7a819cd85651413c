// The flows of a scenario file: explicit [[flows]], and [[workloads]] that
// expand into flows (incast, permutation, all-to-all) or set up the ring
// all-reduce. Random choices come from the scenario's seed.
#pragma once

#include <toml++/toml.h>

#include <cstdint>

#include "sim/scenario.h"

namespace uroce::sim {

// Both throw ScenarioError. The topology must be read first.
void flows_from(const toml::array& flows, Scenario& scenario);
void workloads_from(const toml::array& workloads, Scenario& scenario, std::uint64_t& random);

}  // namespace uroce::sim
