// DCQCN against the reference RoCE simulator: HPCC's ns-3 (CC_MODE 1,
// "Mellanox's version of DCQCN") on its parking lot, in the three
// configurations of validation/hpcc_dcqcn/ (see the README there). The peer's
// results are ten runs of its unmodified binary (ns-3 RngRun 1..10; run 1 is
// the reference the issue quotes), made by bench/hpcc_validation.sh --save.
// uroce runs the same topology, settings and flows under ten seeds. Each
// flow's slowdown (its completion time over its time alone on the idle
// fabric, the peer's own last column) is compared rank by rank, as the mean
// over runs of the first, second... finisher: which sender finishes first is
// decided by random marks in both simulators. Slowdowns rather than raw
// times because uroce's frames are real RoCEv2 frames (1024 B of payload in
// 1106 B of wire time) where the peer's are 1000 B in 1048 B.
// Targets (issue 16): every rank within 10% of the peer, the last within 5%.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/scenario_file.h"
#include "sim/simulation.h"

namespace uroce::sim {
namespace {

const std::string kDir = std::string(UROCE_VALIDATION_DIR) + "/hpcc_dcqcn/";
constexpr std::uint64_t kSeeds = 10;
constexpr int kPeerRuns = 10;

struct PeerFlow {
  std::uint32_t host = 0;
  double fct_us = 0;
  double alone_us = 0;
};

// fct_*.txt: source IP, destination IP, source port, destination port,
// bytes, start (ns), FCT (ns), FCT alone (ns). Host n is 11.0.n.1.
std::vector<PeerFlow> peer_flows(const std::string& file) {
  std::ifstream in(kDir + file);
  std::vector<PeerFlow> flows;
  std::string sip, dip;
  std::uint64_t sport, dport, bytes, start, fct, alone;
  while (in >> sip >> dip >> sport >> dport >> bytes >> start >> fct >> alone) {
    auto ip = static_cast<std::uint32_t>(std::stoul(sip, nullptr, 16));
    flows.push_back({(ip >> 8) & 0xFFFFu, static_cast<double>(fct) / 1e3, static_cast<double>(alone) / 1e3});
  }
  return flows;
}

double fct_us(const FlowResult& flow) {
  return static_cast<double>(flow.finish - flow.spec.start) / static_cast<double>(kPicosecondsPerUs);
}

struct Comparison {
  std::vector<double> peer;   // slowdowns by rank, first finisher first
  std::vector<double> uroce;  // the mean over seeds of each rank's slowdown
};

// The peer's slowdowns by finishing rank, the mean over its runs.
std::vector<double> peer_slowdowns(const std::string& config, std::size_t flows) {
  std::vector<double> mean(flows, 0);
  for (int run = 1; run <= kPeerRuns; ++run) {
    std::vector<PeerFlow> peer = peer_flows(fmt::format("fct_{}_run{}.txt", config, run));
    EXPECT_EQ(peer.size(), flows) << config << " run " << run;
    if (peer.size() != flows) return mean;
    std::vector<double> slowdowns;
    for (const PeerFlow& flow : peer) slowdowns.push_back(flow.fct_us / flow.alone_us);
    std::sort(slowdowns.begin(), slowdowns.end());
    for (std::size_t rank = 0; rank < flows; ++rank) mean[rank] += slowdowns[rank] / kPeerRuns;
  }
  return mean;
}

Comparison compare(const std::string& config) {
  std::string scenario_file = "parking_lot_" + config + ".toml";
  auto loaded = load_scenario(kDir + scenario_file);
  if (!loaded) throw std::runtime_error(loaded.error());
  const Scenario& scenario = *loaded;

  // Each flow alone on the idle fabric, as the peer's last column.
  std::map<std::uint32_t, double> alone;  // by sending host
  for (const FlowSpec& flow : scenario.flows) {
    Scenario single = scenario;
    single.flows = {flow};
    SimResult result = run_simulation(single);
    EXPECT_TRUE(result.flows[0].finished());
    alone[flow.src] = fct_us(result.flows[0]);
  }

  Comparison comparison;
  comparison.peer = peer_slowdowns(config, scenario.flows.size());
  comparison.uroce.assign(scenario.flows.size(), 0);
  std::string by_host;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    Scenario run = scenario;
    run.seed = seed;
    SimResult result = run_simulation(run);
    std::vector<double> slowdowns;
    for (const FlowResult& flow : result.flows) {
      EXPECT_TRUE(flow.finished()) << scenario_file << " seed " << seed;
      slowdowns.push_back(fct_us(flow) / alone[flow.spec.src]);
      by_host += fmt::format(" h{}={:.0f}", flow.spec.src, fct_us(flow));
    }
    by_host += "\n";
    std::sort(slowdowns.begin(), slowdowns.end());
    for (std::size_t rank = 0; rank < slowdowns.size(); ++rank) comparison.uroce[rank] += slowdowns[rank] / kSeeds;
  }

  std::ostringstream table;
  table << scenario_file << " (uroce alone:";
  for (const auto& [host, us] : alone) table << fmt::format(" h{} {:.0f} us", host, us);
  table << fmt::format(")\n| finisher | peer slowdown, mean of {} runs | uroce slowdown, mean of {} seeds | "
                       "difference |\n",
                       kPeerRuns, kSeeds);
  for (std::size_t rank = 0; rank < comparison.peer.size(); ++rank) {
    table << fmt::format("| {} | {:.3f} | {:.3f} | {:+.1f}% |\n", rank + 1, comparison.peer[rank],
                         comparison.uroce[rank], 100 * (comparison.uroce[rank] / comparison.peer[rank] - 1));
  }
  std::cout << table.str() << "uroce FCT (us) by host, seeds 1-" << kSeeds << ":\n" << by_host << std::endl;
  return comparison;
}

void expect_agreement(const Comparison& comparison) {
  ASSERT_EQ(comparison.peer.size(), comparison.uroce.size());
  for (std::size_t rank = 0; rank < comparison.peer.size(); ++rank) {
    double ratio = comparison.uroce[rank] / comparison.peer[rank];
    bool last = rank + 1 == comparison.peer.size();
    EXPECT_NEAR(ratio, 1.0, last ? 0.05 : 0.10) << "finisher " << rank + 1;
  }
}

TEST(HpccDcqcnValidation, ConnectxDefaultsAsHpccRunsThem) {
  expect_agreement(compare("mlx"));
}

TEST(HpccDcqcnValidation, PaperTimers) { expect_agreement(compare("paper")); }

TEST(HpccDcqcnValidation, PaperTimersWithLowEcnThresholds) {
  expect_agreement(compare("paper_k5"));
}

}  // namespace
}  // namespace uroce::sim
