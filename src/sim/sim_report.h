// What a simulation run writes: summary.json (its keys in docs/simulator/README.md),
// flows.csv (one row per flow) and a short human summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/scenario.h"
#include "sim/simulation.h"

namespace uroce::sim {

nlohmann::ordered_json summary_json(const Scenario& scenario, const SimResult& result);
std::string flows_csv(const SimResult& result);
std::string human_summary(const Scenario& scenario, const SimResult& result);

}  // namespace uroce::sim
