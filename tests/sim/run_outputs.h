// Everything a simulation run writes (summary.json, flows.csv, the time
// series, a replay's timeline) but what depends on how it ran: its wall
// time and rank count. Runs on threads or ranks compare equal to one.
#pragma once

#include <string>
#include <vector>

#include "sim/chakra_report.h"
#include "sim/series_report.h"
#include "sim/sim_report.h"
#include "sim/simulation.h"

namespace uroce::sim {

inline std::vector<std::string> run_outputs(const Scenario& scenario, SimResult result) {
  result.ranks = 1;
  nlohmann::ordered_json summary = summary_json(scenario, result);
  summary.erase("wall_s");
  std::vector<std::string> out{summary.dump(1), flows_csv(result)};
  for (const OutputFile& file : series_files(scenario, result)) out.push_back(file.name + "\n" + file.content);
  if (!scenario.chakra.empty()) out.push_back(chakra_timeline(scenario, result));
  return out;
}

}  // namespace uroce::sim
