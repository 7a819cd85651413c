// Reading a scenario's [[failures]] (links and switches that fail and
// recover at given times) and its [routing] table (how long the routes take
// to converge).
#pragma once

#include <toml++/toml.h>

#include "sim/scenario.h"

namespace uroce::sim {

// Throws ScenarioError for an unknown key, a malformed link name or a
// recovery that does not come after its failure.
void failures_from(const toml::table& root, Scenario& scenario);

}  // namespace uroce::sim
