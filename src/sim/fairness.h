// How evenly flows shared the fabric: Jain's index over each flow's delivery
// rate in the window when every sampled flow was running (from the last
// start to the first finish).
#pragma once

#include <optional>
#include <vector>

#include "sim/simulation.h"

namespace uroce::sim {

// (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one takes all.
double jain_index(const std::vector<double>& rates);

struct Fairness {
  SimTime window_start = 0;
  SimTime window_end = 0;
  std::vector<double> flow_gbps;  // delivery rate of each flow in the window
  double jain = 0;
};

// Needs at least two sampled flows and two samples inside the window.
std::optional<Fairness> fairness(const SimResult& result);

// Flow f's delivery rate between samples i-1 and i, in Gb/s.
double sampled_gbps(const SimResult& result, std::size_t sample, std::size_t flow);

}  // namespace uroce::sim
