// Line charts as standalone SVG files: axes with round-numbered ticks, one
// coloured polyline per series and a legend. Enough for the simulator's
// plots without a plotting library. The x axis may be logarithmic.
#pragma once

#include <string>
#include <vector>

namespace uroce::sim {

struct ChartSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;  // as many as x
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
  bool steps = false;  // draw each series as a staircase (for CDFs)
  bool log_x = false;  // decades on the x axis; points at x <= 0 are left out
};

std::string svg_line_chart(const Chart& chart);

}  // namespace uroce::sim
