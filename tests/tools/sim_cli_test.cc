// `uroce sim run` as a user runs it: the shipped example writes summary.json
// with the documented fields and flows.csv; mistakes exit 1 (a bad scenario)
// or 2 (a bad command line) with a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::RunResult;

std::string read(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class SimCli : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = std::filesystem::temp_directory_path() /
           ("uroce_sim_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { std::filesystem::remove_all(out_); }
  std::filesystem::path out_;
};

TEST_F(SimCli, TheIncastExampleWritesItsSummary) {
  RunResult result =
      testing::run_uroce("sim run " + std::string(UROCE_EXAMPLES_DIR) + "/incast.toml --out " + out_.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("flows: 16 of 16 finished"), std::string::npos) << result.output;
  auto summary = nlohmann::json::parse(read(out_ / "summary.json"));
  for (const char* key : {"sim_time_us", "wall_s", "events", "seed", "flows", "totals"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  for (const char* key : {"data_packets", "pause_frames", "pause_us_total", "ecn_marked", "cnps", "drops",
                          "lossless_violations", "retransmitted_packets"}) {
    EXPECT_TRUE(summary["totals"].contains(key)) << key;
  }
  ASSERT_EQ(summary["flows"].size(), 16u);
  for (const char* key : {"id", "src", "dst", "bytes", "start_us", "fct_us"}) {
    EXPECT_TRUE(summary["flows"][0].contains(key)) << key;
  }
  EXPECT_EQ(summary["totals"]["data_packets"], 16 * 1024);
  EXPECT_EQ(summary["totals"]["lossless_violations"], 0);
  std::string csv = read(out_ / "flows.csv");
  EXPECT_EQ(csv.rfind("id,src,dst,bytes,start_us,fct_us\n", 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 17);
  // Time series and plots: the run lasts about 10 ms, sampled every 10 us.
  std::string series = read(out_ / "timeseries.csv");
  EXPECT_EQ(series.rfind("time_us,switch_buffer_bytes,", 0), 0u);
  EXPECT_GT(std::count(series.begin(), series.end(), '\n'), 500);
  EXPECT_EQ(read(out_ / "flow_rates.csv").rfind("time_us,flow_0_gbps,", 0), 0u);
  for (const char* plot : {"queues.svg", "flow_rates.svg", "fct_cdf.svg"}) {
    EXPECT_EQ(read(out_ / plot).rfind("<svg ", 0), 0u) << plot;
  }
}

TEST_F(SimCli, TheDeadlockExampleStopsAndCapturesALink) {
  auto result = testing::run_uroce("sim run " + std::string(UROCE_EXAMPLES_DIR) + "/pfc_deadlock.toml --out " +
                                   out_.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("PFC DEADLOCK"), std::string::npos) << result.output;
  auto summary = nlohmann::json::parse(read(out_ / "summary.json"));
  EXPECT_EQ(summary["deadlock"]["cycle"].size(), 4u);
  auto decoded = testing::run_uroce("decode " + (out_ / "capture_s0-s1.pcap").string());
  EXPECT_EQ(decoded.exit_code, 0) << decoded.output;
  EXPECT_NE(decoded.output.find("RDMA_WRITE_FIRST"), std::string::npos) << decoded.output;
  EXPECT_NE(decoded.output.find(" ok"), std::string::npos);
  EXPECT_EQ(decoded.output.find("BAD"), std::string::npos) << decoded.output;  // every ICRC verifies
}

TEST_F(SimCli, SeedOnTheCommandLineWins) {
  RunResult result = testing::run_uroce("sim run " + std::string(UROCE_EXAMPLES_DIR) + "/incast.toml --seed 99 --out " +
                                        out_.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(nlohmann::json::parse(read(out_ / "summary.json"))["seed"], 99);
}

TEST_F(SimCli, ABadScenarioIsExplained) {
  std::filesystem::create_directories(out_);
  std::ofstream(out_ / "bad.toml") << "[topology]\nkind = \"star\"\nhosts = 2\nlink_gbps = -1\n";
  RunResult result = testing::run_uroce("sim run " + (out_ / "bad.toml").string() + " --out " + out_.string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("topology.link_gbps"), std::string::npos) << result.output;
}

TEST_F(SimCli, ABadCommandLineIsAUsageError) {
  EXPECT_EQ(testing::run_uroce("sim run --out " + out_.string()).exit_code, 2);
  EXPECT_EQ(testing::run_uroce("sim run /nonexistent.toml --out " + out_.string()).exit_code, 2);
  EXPECT_EQ(testing::run_uroce("sim walk").exit_code, 2);
}

TEST_F(SimCli, TheDataParallelReplayWritesItsSummaryAndTimeline) {
  RunResult result = testing::run_uroce("sim run " + std::string(UROCE_EXAMPLES_DIR) +
                                        "/chakra_data_parallel.toml --out " + out_.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("chakra replay (8 ranks): 8 of 8 ranks finished"), std::string::npos) << result.output;
  auto chakra = nlohmann::json::parse(read(out_ / "summary.json"))["chakra"];
  for (const char* key : {"makespan_us", "ranks_finished", "nodes_run", "nodes_skipped", "collectives", "per_rank"}) {
    EXPECT_TRUE(chakra.contains(key)) << key;
  }
  ASSERT_EQ(chakra["collectives"].size(), 4u);  // one all-reduce per gradient bucket
  EXPECT_EQ(chakra["collectives"][0]["operation"], "all_reduce");
  EXPECT_GT(chakra["collectives"][0]["busbw_gb_per_s"].get<double>(), 5.0);
  ASSERT_EQ(chakra["per_rank"].size(), 8u);
  for (const auto& rank : chakra["per_rank"]) {
    double sum = rank["compute_us"].get<double>() + rank["communication_us"].get<double>() + rank["idle_us"].get<double>();
    EXPECT_NEAR(sum, chakra["makespan_us"].get<double>(), 1e-6);
  }
  // The timeline: a slice per node run (21 per rank), on each rank's tracks.
  auto timeline = nlohmann::json::parse(read(out_ / "timeline.json"));
  std::size_t slices = 0;
  for (const auto& event : timeline["traceEvents"]) {
    if (event["ph"] != "X") continue;
    ++slices;
    EXPECT_GE(event["dur"].get<double>(), 0.0);
    EXPECT_LE(event["ts"].get<double>() + event["dur"].get<double>(), chakra["makespan_us"].get<double>() + 1e-6);
  }
  EXPECT_EQ(slices, 8u * 21);
  // Every link direction's load (4 leaves x 2 hosts and 4 x 2 uplinks, both
  // ways: 32), in Gb/s per 10 us; a frame counts in the interval it starts
  // in, so an interval may show up to one 4 KiB frame (3.3 Gb/s) above the
  // 100 Gb/s line. The ring all-reduces fill the host links.
  std::set<std::string> links;
  double busiest = 0;
  for (const auto& event : timeline["traceEvents"]) {
    if (event["ph"] != "C" || event["name"].get<std::string>().rfind("link ", 0) != 0) continue;
    links.insert(event["name"].get<std::string>());
    busiest = std::max(busiest, event["args"]["Gb/s"].get<double>());
  }
  EXPECT_EQ(links.size(), 32u);
  EXPECT_EQ(links.count("link h0->s0 (Gb/s)"), 1u);
  EXPECT_GT(busiest, 90.0);
  EXPECT_LT(busiest, 103.4);
}

TEST_F(SimCli, TwoJobsAreListedInTheSummaryAndTheTimeline) {
  RunResult result = testing::run_uroce("sim run " + std::string(UROCE_EXAMPLES_DIR) + "/chakra_two_jobs.toml --out " +
                                        out_.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("chakra replay a (8 ranks)"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("chakra replay b (8 ranks)"), std::string::npos) << result.output;
  auto chakra = nlohmann::json::parse(read(out_ / "summary.json"))["chakra"];
  ASSERT_TRUE(chakra.is_array());
  ASSERT_EQ(chakra.size(), 2u);
  EXPECT_EQ(chakra[0]["job"], "a");
  EXPECT_EQ(chakra[1]["job"], "b");
  EXPECT_EQ(chakra[1]["per_rank"][0]["host"], 2);
  auto timeline = nlohmann::json::parse(read(out_ / "timeline.json"));
  std::set<std::string> processes;
  for (const auto& event : timeline["traceEvents"]) {
    if (event["name"] == "process_name") processes.insert(event["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(processes.count("a rank 0 (host 0)"), 1u);
  EXPECT_EQ(processes.count("b rank 7 (host 15)"), 1u);
  EXPECT_EQ(processes.count("fabric"), 1u);
}

TEST_F(SimCli, TheShippedExampleTracesAreWhatTheGeneratorWrites) {
  std::filesystem::create_directories(out_);
  for (const char* kind : {"data_parallel", "mixture_of_experts"}) {
    RunResult result = testing::run_uroce(std::string("chakra example ") + kind + " --ranks 8 --out " +
                                          (out_ / kind).string());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    for (int rank = 0; rank < 8; ++rank) {
      std::string name = ".";  // built by appends: GCC 12 warns falsely (-Wrestrict) on "." + to_string()
      name += std::to_string(rank);
      name += ".et";
      EXPECT_EQ(read(out_ / (std::string(kind) + name)),
                read(std::filesystem::path(UROCE_EXAMPLES_DIR) / "chakra" / kind / ("step" + name)))
          << kind << " rank " << rank << ": run scripts/make-example-traces.sh";
    }
  }
}

TEST_F(SimCli, ChakraShowPrintsATraceAndNamesABrokenOne) {
  std::filesystem::create_directories(out_);
  std::string trace = std::string(UROCE_EXAMPLES_DIR) + "/chakra/mixture_of_experts/step.0.et";
  RunResult shown = testing::run_uroce("chakra show " + trace);
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_NE(shown.output.find("34 nodes"), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("comm_coll \"layer0.dispatch\" all_to_all 4194304 bytes after 0"), std::string::npos)
      << shown.output;
  std::string bytes = read(trace);
  std::ofstream(out_ / "cut.et", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  RunResult broken = testing::run_uroce("chakra show " + (out_ / "cut.et").string());
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.output.find("cut.et: node "), std::string::npos) << broken.output;
  EXPECT_EQ(testing::run_uroce("chakra example pipeline --out " + (out_ / "x").string()).exit_code, 2);
}

}  // namespace
}  // namespace uroce
