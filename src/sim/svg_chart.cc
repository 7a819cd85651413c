// Drawing a Chart as SVG text.
#include "sim/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace uroce::sim {

namespace {

constexpr double kWidth = 800;
constexpr double kHeight = 480;
constexpr double kLeft = 80;
constexpr double kRight = 180;  // room for the legend
constexpr double kTop = 40;
constexpr double kBottom = 60;
constexpr std::size_t kLegendEntries = 16;
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// A tick step of 1, 2 or 5 times a power of ten giving about five ticks.
double tick_step(double span) {
  if (span <= 0) return 1;
  double raw = span / 5;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (raw <= factor * power) return factor * power;
  }
  return 10 * power;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      default: out += c;
    }
  }
  return out;
}

struct Range {
  double low = 0;
  double high = 1;
};

bool drawn(const Chart& chart, double x) { return !chart.log_x || x > 0; }

Range range_of(const Chart& chart, bool y) {
  Range r{INFINITY, -INFINITY};
  for (const ChartSeries& series : chart.series) {
    for (std::size_t k = 0; k < series.x.size() && k < series.y.size(); ++k) {
      if (!drawn(chart, series.x[k])) continue;
      double v = y ? series.y[k] : series.x[k];
      r.low = std::min(r.low, v);
      r.high = std::max(r.high, v);
    }
  }
  if (!std::isfinite(r.low)) return chart.log_x && !y ? Range{1, 10} : Range{};
  if (chart.log_x && !y) {  // whole decades around the values
    return Range{std::pow(10.0, std::floor(std::log10(r.low))),
                 std::pow(10.0, std::max(std::ceil(std::log10(r.high)), std::floor(std::log10(r.low)) + 1))};
  }
  if (y) r.low = std::min(r.low, 0.0);  // values from zero up
  if (r.high <= r.low) r.high = r.low + 1;
  double step = tick_step(r.high - r.low);
  return Range{std::floor(r.low / step) * step, std::ceil(r.high / step) * step};
}

// Where the x axis has its ticks: every decade on a log axis, round steps
// otherwise.
std::vector<double> x_ticks(const Chart& chart, Range xr) {
  std::vector<double> ticks;
  if (chart.log_x) {
    for (double x = xr.low; x <= xr.high * 1.001; x *= 10) ticks.push_back(x);
    return ticks;
  }
  double step = tick_step(xr.high - xr.low);
  for (double x = xr.low; x <= xr.high + step / 2; x += step) ticks.push_back(x);
  return ticks;
}

}  // namespace

std::string svg_line_chart(const Chart& chart) {
  Range xr = range_of(chart, false);
  Range yr = range_of(chart, true);
  double plot_w = kWidth - kLeft - kRight;
  double plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) {
    if (chart.log_x) return kLeft + std::log10(x / xr.low) / std::log10(xr.high / xr.low) * plot_w;
    return kLeft + (x - xr.low) / (xr.high - xr.low) * plot_w;
  };
  auto py = [&](double y) { return kTop + plot_h - (y - yr.low) / (yr.high - yr.low) * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"24\" font-size=\"15\">{}</text>\n",
      kWidth, kHeight, kLeft, escape(chart.title));
  for (double x : x_ticks(chart, xr)) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
        px(x), kTop, kTop + plot_h, kTop + plot_h + 16, x);
  }
  double y_step = tick_step(yr.high - yr.low);
  for (double y = yr.low; y <= yr.high + y_step / 2; y += y_step) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, py(y), kLeft + plot_w, kLeft - 6, py(y) + 4, y);
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft,
                     kTop, plot_w, plot_h);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", kLeft + plot_w / 2,
                     kHeight - 16, escape(chart.x_label));
  svg += fmt::format("<text transform=\"translate(18,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     kTop + plot_h / 2, escape(chart.y_label));

  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& series = chart.series[i];
    const char* colour = kColours[i % std::size(kColours)];
    std::string points;
    bool first = true;
    double previous_y = 0;
    for (std::size_t k = 0; k < series.x.size() && k < series.y.size(); ++k) {
      if (!drawn(chart, series.x[k])) continue;
      if (chart.steps && !first) points += fmt::format("{:.1f},{:.1f} ", px(series.x[k]), py(previous_y));
      points += fmt::format("{:.1f},{:.1f} ", px(series.x[k]), py(series.y[k]));
      first = false;
      previous_y = series.y[k];
    }
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", colour, points);
    if (i < kLegendEntries) {
      double ly = kTop + 10 + static_cast<double>(i) * 18;
      svg += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
          "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
          kLeft + plot_w + 12, ly, kLeft + plot_w + 32, colour, kLeft + plot_w + 38, ly + 4, escape(series.name));
    } else if (i == kLegendEntries) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">and {} more</text>\n", kLeft + plot_w + 12,
                         kTop + 10 + static_cast<double>(i) * 18 + 4, chart.series.size() - kLegendEntries);
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace uroce::sim
