// Flow-size CDFs: the built-in tables' means, sampling that reproduces them,
// CSV parsing and its errors, and a CDF workload's arrival count at a load.
#include <gtest/gtest.h>

#include "sim/flow_size_cdf.h"
#include "sim/mix.h"
#include "sim/scenario_file.h"

namespace uroce::sim {
namespace {

double sample_mean(const FlowSizeCdf& cdf, int draws) {
  std::uint64_t state = 7;
  double total = 0;
  for (int i = 0; i < draws; ++i) total += static_cast<double>(cdf.sample(unit_interval(state)));
  return total / draws;
}

TEST(FlowSizeCdf, SamplesReproduceTheBuiltInMeans) {
  for (const char* name : {"web_search", "hadoop"}) {
    auto cdf = FlowSizeCdf::builtin(name);
    ASSERT_TRUE(cdf.has_value()) << name;
    EXPECT_NEAR(sample_mean(*cdf, 400'000) / cdf->mean_bytes(), 1.0, 0.03) << name;
  }
  // The means of the tables, linear between points, summed by hand.
  EXPECT_NEAR(FlowSizeCdf::builtin("web_search")->mean_bytes(), 1'711'250, 1);
  EXPECT_NEAR(FlowSizeCdf::builtin("hadoop")->mean_bytes(), 120'420.75, 1);
  EXPECT_FALSE(FlowSizeCdf::builtin("nonesuch").has_value());
}

TEST(FlowSizeCdf, SamplesInterpolateBetweenPoints) {
  auto cdf = FlowSizeCdf::parse_csv("# bytes,fraction\n0,0\n1000,0.5\n3000,1\n");
  ASSERT_TRUE(cdf.has_value()) << cdf.error();
  EXPECT_EQ(cdf->sample(0.25), 500u);
  EXPECT_EQ(cdf->sample(0.75), 2000u);
  EXPECT_EQ(cdf->sample(0.0), 1u);  // never an empty flow
  EXPECT_DOUBLE_EQ(cdf->mean_bytes(), 250 + 1000);
}

TEST(FlowSizeCdf, RejectsMalformedFiles) {
  EXPECT_FALSE(FlowSizeCdf::parse_csv("").has_value());
  EXPECT_FALSE(FlowSizeCdf::parse_csv("0,0\n100,0.5\n").has_value());      // does not reach 1
  EXPECT_FALSE(FlowSizeCdf::parse_csv("0,0\n100,0.7\n50,1\n").has_value());  // bytes decrease
  EXPECT_FALSE(FlowSizeCdf::parse_csv("0,0\n100,x\n").has_value());
  EXPECT_FALSE(FlowSizeCdf::parse_csv("0,0\n100,1.5\n").has_value());
}

TEST(FlowSizeCdf, AWorkloadArrivesAtItsLoad) {
  auto scenario = parse_scenario(R"(
[topology]
kind = "star"
hosts = 16
link_gbps = 100
[[workloads]]
kind = "cdf"
cdf = "hadoop"
load = 0.4
duration_us = 5000
)",
                                 "cdf.toml");
  ASSERT_TRUE(scenario.has_value()) << scenario.error();
  // 16 hosts x 0.4 x 12.5 GB/s x 5 ms / mean size.
  double expected = 16 * 0.4 * 12.5e9 * 0.005 / FlowSizeCdf::builtin("hadoop")->mean_bytes();
  EXPECT_NEAR(static_cast<double>(scenario->flows.size()) / expected, 1.0, 0.1);
  for (const FlowSpec& flow : scenario->flows) {
    EXPECT_NE(flow.src, flow.dst);
    EXPECT_LT(flow.start, 5000 * kPicosecondsPerUs);
  }
  auto missing = parse_scenario("[topology]\nkind = \"star\"\n[[workloads]]\nkind = \"cdf\"\nload = 0.5\n", "x.toml");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("cdf"), std::string::npos);
}

}  // namespace
}  // namespace uroce::sim
