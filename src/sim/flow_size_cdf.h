// Flow-size distributions as piecewise-linear CDFs: the two used throughout
// the DCQCN/HPCC literature are built in, others load from a CSV file of
// "bytes,cumulative_fraction" lines. Sizes are drawn by inverting the CDF.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "uroce/expected.h"

namespace uroce::sim {

struct CdfPoint {
  double bytes;
  double fraction;  // of flows no larger than bytes, 0..1
};

class FlowSizeCdf {
 public:
  // "web_search" (DCTCP's web-search workload) or "hadoop" (Facebook's
  // Hadoop cluster), as the HPCC artifact publishes them.
  static std::optional<FlowSizeCdf> builtin(const std::string& name);
  // Lines "bytes,fraction" (a # starts a comment), fractions rising to 1.
  static Expected<FlowSizeCdf, std::string> parse_csv(const std::string& text);

  // A size for u uniform in [0, 1): linear between the CDF's points, at least 1 byte.
  std::uint64_t sample(double u) const;
  double mean_bytes() const;
  const std::vector<CdfPoint>& points() const { return points_; }

 private:
  explicit FlowSizeCdf(std::vector<CdfPoint> points) : points_(std::move(points)) {}
  static Expected<FlowSizeCdf, std::string> checked(std::vector<CdfPoint> points);
  std::vector<CdfPoint> points_;
};

}  // namespace uroce::sim
