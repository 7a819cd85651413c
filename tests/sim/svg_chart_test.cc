// SVG line charts: tick labels on linear and log axes, points a log axis
// cannot show left out, and text escaped.
#include <gtest/gtest.h>

#include <string>

#include "sim/svg_chart.h"

namespace uroce::sim {
namespace {

bool has_tick_label(const std::string& svg, const std::string& label) {
  return svg.find("text-anchor=\"middle\">" + label + "</text>") != std::string::npos;
}

std::string polyline_points(const std::string& svg) {
  std::size_t start = svg.find("points=\"");
  if (start == std::string::npos) return {};
  start += 8;
  return svg.substr(start, svg.find('"', start) - start);
}

TEST(SvgChart, LinearAxisHasRoundTicks) {
  Chart chart{"t", "x", "y", {{"s", {0, 35}, {0, 1}}}, false, false};
  std::string svg = svg_line_chart(chart);
  for (const char* label : {"0", "10", "20", "30", "40"}) EXPECT_TRUE(has_tick_label(svg, label)) << label;
}

TEST(SvgChart, LogAxisTicksEveryDecadeAndLeavesOutNonPositivePoints) {
  Chart chart{"t", "x", "y", {{"s", {0, 3, 40, 2500}, {0, 0.3, 0.6, 1}}}, true, true};
  std::string svg = svg_line_chart(chart);
  for (const char* label : {"1", "10", "100", "1000", "10000"}) EXPECT_TRUE(has_tick_label(svg, label)) << label;
  EXPECT_FALSE(has_tick_label(svg, "5000"));
  // Three points drawn as a staircase: 3, then a step and 40, then a step and 2500.
  std::string points = polyline_points(svg);
  int pairs = 0;
  for (char c : points) pairs += c == ',';
  EXPECT_EQ(pairs, 5) << points;
  // Equal ratios are equal distances: four decades over the 540 px plot, so
  // 1 at its left edge (80), 10 and 100 each a quarter further on.
  EXPECT_NE(svg.find("<text x=\"80.0\" y=\"436.0\" text-anchor=\"middle\">1</text>"), std::string::npos);
  EXPECT_NE(svg.find("<text x=\"215.0\" y=\"436.0\" text-anchor=\"middle\">10</text>"), std::string::npos);
  EXPECT_NE(svg.find("<text x=\"350.0\" y=\"436.0\" text-anchor=\"middle\">100</text>"), std::string::npos);
}

TEST(SvgChart, TitleIsEscaped) {
  Chart chart{"a<b & c", "x", "y", {}, false, false};
  std::string svg = svg_line_chart(chart);
  EXPECT_NE(svg.find("a&lt;b &amp; c"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
}

}  // namespace
}  // namespace uroce::sim
