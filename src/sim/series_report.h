// The time-series outputs of a run: timeseries.csv (fabric state per sample),
// flow_rates.csv (each sampled flow's delivery rate), and SVG plots of queue
// depth, flow rates and the flow completion time CDF.
#pragma once

#include <string>
#include <vector>

#include "sim/scenario.h"
#include "sim/simulation.h"

namespace uroce::sim {

struct OutputFile {
  std::string name;  // within the output directory
  std::string content;
};

// Only the files the run has data for (no flow rates without sampled flows,
// no CDF with fewer than two finished flows).
std::vector<OutputFile> series_files(const Scenario& scenario, const SimResult& result);

}  // namespace uroce::sim
