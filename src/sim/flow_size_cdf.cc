// The built-in flow-size CDFs, CSV loading and sampling.
#include "sim/flow_size_cdf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace uroce::sim {

namespace {

// Web search (Alizadeh et al., DCTCP, SIGCOMM 2010), in the form the HPCC
// artifact (Li et al., SIGCOMM 2019) publishes: bytes, percent of flows.
const std::vector<CdfPoint> kWebSearch = {
    {0, 0},         {10'000, 0.15},    {20'000, 0.20},    {30'000, 0.30},     {50'000, 0.40},
    {80'000, 0.53}, {200'000, 0.60},   {1'000'000, 0.70}, {2'000'000, 0.80},  {5'000'000, 0.90},
    {10'000'000, 0.97}, {30'000'000, 1.0}};

// Facebook Hadoop (Roy et al., Inside the Social Network's (Datacenter)
// Network, SIGCOMM 2015), also as the HPCC artifact publishes it.
const std::vector<CdfPoint> kHadoop = {
    {0, 0},          {100, 0.01},      {200, 0.02},       {300, 0.05},       {350, 0.15},
    {400, 0.20},     {500, 0.30},      {600, 0.40},       {700, 0.50},       {1'000, 0.60},
    {2'000, 0.67},   {7'000, 0.70},    {30'000, 0.72},    {50'000, 0.82},    {80'000, 0.87},
    {120'000, 0.90}, {300'000, 0.95},  {1'000'000, 0.975}, {2'000'000, 0.99}, {10'000'000, 1.0}};

}  // namespace

std::optional<FlowSizeCdf> FlowSizeCdf::builtin(const std::string& name) {
  if (name == "web_search") return FlowSizeCdf(kWebSearch);
  if (name == "hadoop") return FlowSizeCdf(kHadoop);
  return std::nullopt;
}

Expected<FlowSizeCdf, std::string> FlowSizeCdf::checked(std::vector<CdfPoint> points) {
  if (points.size() < 2) return unexpected(std::string("a CDF needs at least two points"));
  for (std::size_t i = 0; i < points.size(); ++i) {
    const CdfPoint& p = points[i];
    if (!(p.bytes >= 0) || !(p.fraction >= 0) || p.fraction > 1) {
      return unexpected(fmt::format("point {}: bytes must be >= 0 and the fraction within [0, 1]", i + 1));
    }
    if (i > 0 && (p.bytes < points[i - 1].bytes || p.fraction < points[i - 1].fraction)) {
      return unexpected(fmt::format("point {}: bytes and fractions must not decrease", i + 1));
    }
  }
  if (points.back().fraction != 1) return unexpected(std::string("the last point's fraction must be 1"));
  return FlowSizeCdf(std::move(points));
}

Expected<FlowSizeCdf, std::string> FlowSizeCdf::parse_csv(const std::string& text) {
  std::vector<CdfPoint> points;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    CdfPoint point{};
    std::string rest;
    if (!(fields >> point.bytes >> point.fraction) || (fields >> rest)) {
      return unexpected(fmt::format("line {}: expected \"bytes,fraction\"", number));
    }
    points.push_back(point);
  }
  return checked(std::move(points));
}

std::uint64_t FlowSizeCdf::sample(double u) const {
  auto above = std::upper_bound(points_.begin(), points_.end(), u,
                                [](double value, const CdfPoint& p) { return value < p.fraction; });
  double bytes;
  if (above == points_.begin()) {
    bytes = points_.front().bytes;
  } else if (above == points_.end()) {
    bytes = points_.back().bytes;
  } else {
    const CdfPoint& low = *(above - 1);
    const CdfPoint& high = *above;
    double span = high.fraction - low.fraction;
    bytes = span > 0 ? low.bytes + (u - low.fraction) / span * (high.bytes - low.bytes) : high.bytes;
  }
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(bytes)));
}

double FlowSizeCdf::mean_bytes() const {
  double mean = 0;
  for (std::size_t i = 1; i < points_.size(); ++i) {
    mean += (points_[i].bytes + points_[i - 1].bytes) / 2 * (points_[i].fraction - points_[i - 1].fraction);
  }
  return std::max(mean, 1.0);
}

}  // namespace uroce::sim
