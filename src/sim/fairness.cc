// Jain's index and the all-flows-running window.
#include "sim/fairness.h"

#include <algorithm>

namespace uroce::sim {

double jain_index(const std::vector<double>& rates) {
  double sum = 0;
  double squares = 0;
  for (double rate : rates) {
    sum += rate;
    squares += rate * rate;
  }
  if (rates.empty() || squares == 0) return 0;
  return sum * sum / (static_cast<double>(rates.size()) * squares);
}

double sampled_gbps(const SimResult& result, std::size_t sample, std::size_t flow) {
  if (sample == 0) return 0;
  std::uint64_t bytes = result.flow_delivered[sample][flow] - result.flow_delivered[sample - 1][flow];
  SimTime elapsed = result.samples[sample].at - result.samples[sample - 1].at;
  return static_cast<double>(bytes) * 8 / (static_cast<double>(elapsed) / static_cast<double>(kPicosecondsPerSecond)) /
         1e9;
}

std::optional<Fairness> fairness(const SimResult& result) {
  std::size_t flows = result.flows.size();
  if (flows < 2 || result.flow_delivered.empty() || result.flow_delivered.front().size() != flows) return std::nullopt;
  SimTime last_start = 0;
  SimTime first_finish = result.sim_time;
  for (const FlowResult& flow : result.flows) {
    last_start = std::max(last_start, flow.spec.start);
    if (flow.finished()) first_finish = std::min(first_finish, flow.finish);
  }
  // The first sample at or after the last start, the last at or before the first finish.
  std::size_t from = result.samples.size();
  std::size_t to = 0;
  for (std::size_t i = 0; i < result.samples.size(); ++i) {
    SimTime at = result.samples[i].at;
    if (at >= last_start && from == result.samples.size()) from = i;
    if (at <= first_finish) to = i;
  }
  if (from >= to) return std::nullopt;
  Fairness out;
  out.window_start = result.samples[from].at;
  out.window_end = result.samples[to].at;
  double seconds = static_cast<double>(out.window_end - out.window_start) / static_cast<double>(kPicosecondsPerSecond);
  for (std::size_t f = 0; f < flows; ++f) {
    std::uint64_t bytes = result.flow_delivered[to][f] - result.flow_delivered[from][f];
    out.flow_gbps.push_back(static_cast<double>(bytes) * 8 / seconds / 1e9);
  }
  out.jain = jain_index(out.flow_gbps);
  return out;
}

}  // namespace uroce::sim
