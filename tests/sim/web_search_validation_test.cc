// The web-search workload against HPCC's ns-3 (issue 35, part 4; the
// peer's inputs and results in validation/hpcc_websearch/, see its
// README): the same flows (DCTCP's web-search sizes at 30% and 50% load for
// 10 ms, five traffic seeds each) on the same k = 4 fat-tree with the same
// DCQCN settings. Each flow's slowdown is its completion time over its time
// alone on the idle fabric (the peer's last column; uroce's from runs of
// one flow per path length). Compared per size bucket (under 100 KB,
// 100 KB to 1 MB, above) by the median and the 95th percentile, each the
// mean over the five traffic seeds (uroce's figure for each flow file is its
// mean over kHashDraws ECMP hashes). Target (issue 35): within 20% of the
// peer's.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sim/scenario_file.h"
#include "sim/simulation.h"
#include "tests/support/sanitized_build.h"

namespace uroce::sim {
namespace {

const std::string kDir = std::string(UROCE_VALIDATION_DIR) + "/hpcc_websearch/";
constexpr std::array<std::uint32_t, 5> kSeeds = {1, 2, 3, 4, 5};
// uroce's runs of each flow file, each under its own ECMP salts and marking
// draws: the peer's one hash is not uroce's, so uroce's statistic for a
// flow file is its mean over hashes, not one draw (see the README there).
constexpr std::uint32_t kHashDraws = 4;
constexpr std::uint64_t kPeerStartNs = 2'000'000'000;  // the peer's flows start at 2 s
constexpr std::size_t kBuckets = 3;
const char* const kBucketNames[kBuckets] = {"< 100 KB", "100 KB - 1 MB", "> 1 MB"};

std::size_t bucket_of(std::uint64_t bytes) { return bytes < 100'000 ? 0 : bytes < 1'000'000 ? 1 : 2; }

struct Sized {
  std::uint64_t bytes = 0;
  double slowdown = 0;
};

// flows_*.txt: a count, then "src dst priority dport bytes start_s".
std::vector<FlowSpec> read_flows(const std::string& file) {
  std::ifstream in(kDir + file);
  EXPECT_TRUE(in) << file;
  std::size_t count = 0;
  in >> count;
  std::vector<FlowSpec> flows;
  std::uint32_t src, dst, priority, dport;
  std::uint64_t bytes;
  std::string start_s;
  while (in >> src >> dst >> priority >> dport >> bytes >> start_s) {
    auto start_ns = static_cast<std::uint64_t>(std::stold(start_s) * 1e9L + 0.5L);
    flows.emplace_back(src, dst, bytes, static_cast<SimTime>(start_ns - kPeerStartNs) * kPicosecondsPerNs);
  }
  EXPECT_EQ(flows.size(), count) << file;
  return flows;
}

// fct_*.txt: sip dip sport dport bytes start_ns fct_ns alone_ns (hex IPs).
std::vector<Sized> peer_slowdowns(const std::string& file) {
  std::ifstream in(kDir + file);
  EXPECT_TRUE(in) << file;
  std::vector<Sized> flows;
  std::string sip, dip;
  std::uint64_t sport, dport, bytes, start, fct, alone;
  while (in >> sip >> dip >> sport >> dport >> bytes >> start >> fct >> alone) {
    flows.push_back({bytes, static_cast<double>(fct) / static_cast<double>(alone)});
  }
  return flows;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[index];
}

// p50 and p95 per bucket.
using Stats = std::array<std::array<double, 2>, kBuckets>;
Stats stats_of(const std::vector<Sized>& flows) {
  std::array<std::vector<double>, kBuckets> by_bucket;
  for (const Sized& flow : flows) by_bucket[bucket_of(flow.bytes)].push_back(flow.slowdown);
  Stats stats{};
  for (std::size_t b = 0; b < kBuckets; ++b) stats[b] = {percentile(by_bucket[b], 0.5), percentile(by_bucket[b], 0.95)};
  return stats;
}

Scenario base() {
  auto loaded = load_scenario(kDir + "web_search_fat4.toml");
  if (!loaded) throw std::runtime_error(loaded.error());
  return *loaded;
}

double fct_us(const FlowResult& flow) {
  return static_cast<double>(flow.finish - flow.spec.start) / static_cast<double>(kPicosecondsPerUs);
}

// A flow alone on the idle fabric, by the switches on its path (1, 3 or 5
// in a k = 4 fat-tree: same edge, same pod, another pod): one packet's
// time, then a packet's wire time for each further packet (the last one
// partial), measured with 1 and 64 packets.
class AloneTimes {
 public:
  explicit AloneTimes(const Scenario& scenario) {
    const std::array<std::uint32_t, 3> far_host = {1, 2, 4};  // from host 0
    for (std::size_t path = 0; path < 3; ++path) {
      double one = run(scenario, far_host[path], kMtu);
      double many = run(scenario, far_host[path], 64 * kMtu);
      first_[path] = one;
      per_packet_[path] = (many - one) / 63;
    }
  }
  double alone_us(const FlowSpec& flow) const {
    std::size_t path = flow.src / 2 == flow.dst / 2 ? 0 : flow.src / 4 == flow.dst / 4 ? 1 : 2;
    double packets = static_cast<double>(flow.bytes) / kMtu;
    return first_[path] + std::max(packets - 1, 0.0) * per_packet_[path];
  }

 private:
  static constexpr std::uint64_t kMtu = 1024;
  static double run(const Scenario& scenario, std::uint32_t to, std::uint64_t bytes) {
    Scenario single = scenario;
    single.flows = {FlowSpec(0, to, bytes, 0)};
    SimResult result = run_simulation(single);
    EXPECT_TRUE(result.flows[0].finished());
    return fct_us(result.flows[0]);
  }
  std::array<double, 3> first_{}, per_packet_{};
};

struct Comparison {
  Stats peer{}, uroce{};
};

Comparison compare(std::uint32_t load) {
  Scenario scenario = base();
  AloneTimes alone(scenario);
  Comparison comparison;
  for (std::uint32_t seed : kSeeds) {
    std::string name = fmt::format("l{}_s{}", load, seed);
    Stats peer = stats_of(peer_slowdowns("fct_" + name + ".txt"));
    Scenario run = scenario;
    run.flows = read_flows("flows_" + name + ".txt");
    for (std::uint32_t draw = 0; draw < kHashDraws; ++draw) {
      run.seed = seed + 100 * draw;
      SimResult result = run_simulation(run);
      std::vector<Sized> flows;
      for (const FlowResult& flow : result.flows) {
        EXPECT_TRUE(flow.finished()) << name << " flow " << flow.id;
        if (flow.finished()) flows.push_back({flow.spec.bytes, fct_us(flow) / alone.alone_us(flow.spec)});
      }
      Stats mine = stats_of(flows);
      for (std::size_t b = 0; b < kBuckets; ++b) {
        for (std::size_t q = 0; q < 2; ++q) comparison.uroce[b][q] += mine[b][q] / kSeeds.size() / kHashDraws;
      }
    }
    for (std::size_t b = 0; b < kBuckets; ++b) {
      for (std::size_t q = 0; q < 2; ++q) comparison.peer[b][q] += peer[b][q] / kSeeds.size();
    }
  }
  std::string table = fmt::format("web search at {}% load, FCT slowdown, mean of {} traffic seeds\n", load,
                                  kSeeds.size());
  table += "| sizes | peer p50 | uroce p50 | peer p95 | uroce p95 |\n|---|---:|---:|---:|---:|\n";
  for (std::size_t b = 0; b < kBuckets; ++b) {
    table += fmt::format("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", kBucketNames[b], comparison.peer[b][0],
                         comparison.uroce[b][0], comparison.peer[b][1], comparison.uroce[b][1]);
  }
  std::cout << table;
  return comparison;
}

// Every statistic within `tolerance` of the peer's.
void expect_within(const Comparison& comparison, double tolerance) {
  for (std::size_t b = 0; b < kBuckets; ++b) {
    for (std::size_t q = 0; q < 2; ++q) {
      EXPECT_NEAR(comparison.uroce[b][q], comparison.peer[b][q], tolerance * comparison.peer[b][q])
          << kBucketNames[b] << (q == 0 ? " p50" : " p95");
    }
  }
}

// Measured 2026-12-03: every statistic within 14% of the peer's (the short
// flows' tail at 30%, 5.03 against 4.42, is the farthest). Until the links
// framed packets as the peer's do, that tail was 25% above it; see
// docs/simulator/validation.md.
//
// Statistics over five seeds, not memory checks: under the sanitizers the
// 30% runs took 690 s and the 50% runs passed the 900 s limit (2026-12-02,
// one hash per flow file, two tests at once on 2 cores). The release build
// runs them; the other simulator tests run the same code under the sanitizers.
TEST(WebSearchValidation, ThirtyPercentLoad) {
  if (uroce::testing::kSanitizedBuild) GTEST_SKIP() << "five seeds take over 10 minutes under the sanitizers";
  expect_within(compare(30), 0.2);
}
TEST(WebSearchValidation, FiftyPercentLoad) {
  if (uroce::testing::kSanitizedBuild) GTEST_SKIP() << "five seeds take over 15 minutes under the sanitizers";
  expect_within(compare(50), 0.2);
}

}  // namespace
}  // namespace uroce::sim
