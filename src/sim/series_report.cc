// Writing the samples as CSV and as charts.
#include "sim/series_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/fairness.h"
#include "sim/svg_chart.h"

namespace uroce::sim {

namespace {

std::string timeseries_csv(const SimResult& result) {
  std::string out =
      "time_us,switch_buffer_bytes,deepest_queue_bytes,paused_queues,data_packets,pause_frames,ecn_marked,drops\n";
  for (const FabricSample& s : result.samples) {
    out += fmt::format("{:.3f},{},{},{},{},{},{},{}\n", microseconds(s.at), s.buffer_bytes, s.deepest_queue_bytes,
                       s.paused_queues, s.counters.data_packets, s.counters.pause_frames, s.counters.ecn_marked,
                       s.counters.drops);
  }
  return out;
}

std::string flow_rates_csv(const SimResult& result) {
  std::string out = "time_us";
  for (const FlowResult& flow : result.flows) out += fmt::format(",flow_{}_gbps", flow.id);
  out += "\n";
  for (std::size_t i = 1; i < result.samples.size(); ++i) {
    out += fmt::format("{:.3f}", microseconds(result.samples[i].at));
    for (std::size_t f = 0; f < result.flows.size(); ++f) out += fmt::format(",{:.3f}", sampled_gbps(result, i, f));
    out += "\n";
  }
  return out;
}

Chart queue_chart(const Scenario& scenario, const SimResult& result) {
  Chart chart{scenario.name + ": switch buffers", "time (us)", "KiB", {}, false, false};
  ChartSeries buffer{"all switch buffers", {}, {}};
  ChartSeries deepest{"deepest egress queue", {}, {}};
  for (const FabricSample& s : result.samples) {
    buffer.x.push_back(microseconds(s.at));
    buffer.y.push_back(static_cast<double>(s.buffer_bytes) / 1024);
    deepest.x.push_back(microseconds(s.at));
    deepest.y.push_back(static_cast<double>(s.deepest_queue_bytes) / 1024);
  }
  chart.series = {buffer, deepest};
  return chart;
}

// Rates over groups of samples, about kChartPoints points per flow: one
// sample interval holds only a few packets, too coarse a rate to read.
Chart flow_rate_chart(const Scenario& scenario, const SimResult& result) {
  constexpr std::size_t kChartPoints = 250;
  Chart chart{scenario.name + ": delivery rate per flow", "time (us)", "Gb/s", {}, false, false};
  std::size_t group = std::max<std::size_t>(1, result.samples.size() / kChartPoints);
  for (std::size_t f = 0; f < result.flows.size(); ++f) {
    const FlowResult& flow = result.flows[f];
    ChartSeries series{fmt::format("flow {} (h{}->h{})", flow.id, flow.spec.src, flow.spec.dst), {}, {}};
    for (std::size_t i = group; i < result.samples.size(); i += group) {
      std::uint64_t bytes = result.flow_delivered[i][f] - result.flow_delivered[i - group][f];
      double seconds = static_cast<double>(result.samples[i].at - result.samples[i - group].at) /
                       static_cast<double>(kPicosecondsPerSecond);
      series.x.push_back(microseconds(result.samples[i].at));
      series.y.push_back(static_cast<double>(bytes) * 8 / seconds / 1e9);
    }
    chart.series.push_back(std::move(series));
  }
  return chart;
}

// Sorted FCTs as a staircase; spread over two decades or more (as with
// web-search or Hadoop sizes) they go on a log axis.
Chart fct_cdf_chart(const Scenario& scenario, const std::vector<double>& fct_us) {
  Chart chart{scenario.name + ": flow completion times", "FCT (us)", "fraction of flows", {}, true, false};
  chart.log_x = fct_us.front() > 0 && fct_us.back() >= 100 * fct_us.front();
  if (chart.log_x) chart.x_label = "FCT (us, log scale)";
  double start = chart.log_x ? fct_us.front() : 0;
  ChartSeries cdf{"finished flows", {start}, {0}};
  for (std::size_t i = 0; i < fct_us.size(); ++i) {
    cdf.x.push_back(fct_us[i]);
    cdf.y.push_back(static_cast<double>(i + 1) / static_cast<double>(fct_us.size()));
  }
  chart.series = {cdf};
  return chart;
}

}  // namespace

std::vector<OutputFile> series_files(const Scenario& scenario, const SimResult& result) {
  std::vector<OutputFile> files;
  if (!result.samples.empty()) {
    files.push_back({"timeseries.csv", timeseries_csv(result)});
    files.push_back({"queues.svg", svg_line_chart(queue_chart(scenario, result))});
  }
  if (!result.flow_delivered.empty() && !result.flows.empty()) {
    files.push_back({"flow_rates.csv", flow_rates_csv(result)});
    files.push_back({"flow_rates.svg", svg_line_chart(flow_rate_chart(scenario, result))});
  }
  std::vector<double> fct_us;
  for (const FlowResult& flow : result.flows) {
    if (flow.finished()) fct_us.push_back(microseconds(flow.finish - flow.spec.start));
  }
  if (fct_us.size() >= 2) {
    std::sort(fct_us.begin(), fct_us.end());
    files.push_back({"fct_cdf.svg", svg_line_chart(fct_cdf_chart(scenario, fct_us))});
  }
  return files;
}

}  // namespace uroce::sim
