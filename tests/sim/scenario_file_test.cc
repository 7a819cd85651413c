// Scenario files: every documented table loads into the Scenario, workloads
// expand into flows, and mistakes (unknown keys, wrong types, impossible
// values, broken TOML) come back as errors naming the key and the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "chakra/trace.h"
#include "sim/scenario_file.h"
#include "sim/simulation.h"

namespace uroce::sim {
namespace {

constexpr const char* kFull = R"(
name = "all tables"
seed = 7
time_limit_us = 500

[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
link_gbps = 100
uplink_gbps = 400
delay_ns = 500

[switch]
buffer_kb = 8192
pfc = true
lossless_priorities = [3, 4]
xoff_kb = 128
xon_offset_kb = 16
headroom_kb = 64
dynamic_alpha = 0.5
ecn = true
ecn_kmin_kb = 5
ecn_kmax_kb = 200
ecn_pmax = 0.01
lossy_queue_kb = 512
forwarding = "spray"

[transport]
mtu = 1024
recovery = "selective_repeat"
timeout = 8
retry_cnt = 5
data_dscp = 24
window_packets = 128
tail_timeout_us = 120.5
tail_timeout_packets = 4
loss_probe_us = 50

[dcqcn]
enabled = true
variant = "paper"
g = 0.00390625
rai_mbps = 50
rate_timer_us = 40

[[flows]]
src = 0
dst = 7
bytes = 1000
start_us = 3.5

[[workloads]]
kind = "incast"
receiver = 1
senders = [2, 3, 4]
bytes = 2000

[[workloads]]
kind = "permutation"
bytes = 3000
start_us = 10
)";

TEST(ScenarioFile, EveryTableLoads) {
  auto scenario = parse_scenario(kFull, "full.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  EXPECT_EQ(scenario->name, "all tables");
  EXPECT_EQ(scenario->seed, 7u);
  EXPECT_EQ(scenario->time_limit, 500 * kPicosecondsPerUs);
  EXPECT_EQ(scenario->topology.hosts, 8u);
  EXPECT_EQ(scenario->topology.switches, 4u);
  EXPECT_EQ(scenario->switches.buffer_bytes, 8192u * 1024);
  EXPECT_EQ(scenario->switches.lossless_priorities, (1u << 3) | (1u << 4));
  EXPECT_EQ(scenario->switches.forwarding, Forwarding::spray);
  EXPECT_DOUBLE_EQ(scenario->switches.ecn_pmax, 0.01);
  EXPECT_EQ(scenario->transport.mtu, PathMtu::mtu1024);
  EXPECT_EQ(scenario->transport.recovery, LossRecovery::selective_repeat);
  EXPECT_EQ(scenario->transport.timeout, 8);
  EXPECT_EQ(scenario->transport.tail_timeout_ns, 120'500);
  EXPECT_EQ(scenario->transport.tail_timeout_packets, 4u);
  EXPECT_EQ(scenario->transport.loss_probe_ns, 50'000);
  EXPECT_EQ(scenario->engine.max_inflight_packets, 128u);
  EXPECT_TRUE(scenario->engine.congestion.reaction_point);
  EXPECT_EQ(scenario->engine.congestion.dcqcn.variant, DcqcnVariant::paper);
  EXPECT_DOUBLE_EQ(scenario->engine.congestion.dcqcn.paper.additive_increase_bps, 50e6);
  EXPECT_EQ(scenario->engine.congestion.dcqcn.paper.rate_timer_ns, 40'000);
  EXPECT_EQ(scenario->engine.congestion.min_time_between_cnps_ns, 50'000);  // the paper's NP

  ASSERT_EQ(scenario->flows.size(), 1u + 3u + 8u);
  EXPECT_EQ(scenario->flows[0].start, 3'500'000);
  EXPECT_EQ(scenario->flows[1].dst, 1u);
  std::set<std::uint32_t> destinations;
  for (std::size_t i = 4; i < 12; ++i) {
    EXPECT_NE(scenario->flows[i].src, scenario->flows[i].dst);
    destinations.insert(scenario->flows[i].dst);
  }
  EXPECT_EQ(destinations.size(), 8u);  // a permutation: every host receives once
}

// The ConnectX variant reads NVIDIA's names in NVIDIA's units (us, Mb/s,
// 1024ths), and per-packet ACKs and dequeue marking have their keys.
TEST(ScenarioFile, ConnectxDcqcnKeysUseNvidiaNamesAndUnits) {
  const char* toml = R"(
[topology]
kind = "star"
hosts = 3
link_gbps = 25
[switch]
ecn_mark = "dequeue"
[transport]
ack_every_packet = true
[dcqcn]
enabled = true
rpg_time_reset = 55
rpg_byte_reset = 32767
rpg_threshold = 5
rpg_ai_rate = 40
rpg_hai_rate = 400
rpg_gd = 10
rpg_min_dec_fac = 25
rpg_min_rate = 1000
rate_to_set_on_first_cnp = 20000
dce_tcp_g = 1020
dce_tcp_rtt = 50
initial_alpha_value = 512
rate_reduce_monitor_period = 50
clamp_tgt_rate = true
clamp_tgt_rate_after_time_inc = false
min_time_between_cnps = 0
cnp_dscp = 46
[[flows]]
src = 0
dst = 1
bytes = 1
)";
  auto scenario = parse_scenario(toml, "connectx.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  const CongestionConfig& congestion = scenario->engine.congestion;
  const ConnectxDcqcnParams& p = congestion.dcqcn.connectx;
  EXPECT_EQ(congestion.dcqcn.variant, DcqcnVariant::connectx);
  EXPECT_EQ(p.rpg_time_reset_ns, 55'000);
  EXPECT_EQ(p.rpg_byte_reset, 32767u);
  EXPECT_EQ(p.rpg_threshold, 5u);
  EXPECT_DOUBLE_EQ(p.rpg_ai_rate_bps, 40e6);
  EXPECT_DOUBLE_EQ(p.rpg_hai_rate_bps, 400e6);
  EXPECT_EQ(p.rpg_gd, 10u);
  EXPECT_EQ(p.rpg_min_dec_fac, 25u);
  EXPECT_DOUBLE_EQ(p.rpg_min_rate_bps, 1e9);
  EXPECT_DOUBLE_EQ(p.rate_to_set_on_first_cnp_bps, 20e9);
  EXPECT_EQ(p.dce_tcp_g, 1020u);
  EXPECT_EQ(p.dce_tcp_rtt_ns, 50'000);
  EXPECT_EQ(p.initial_alpha_value, 512u);
  EXPECT_EQ(p.rate_reduce_monitor_period_ns, 50'000);
  EXPECT_TRUE(p.clamp_tgt_rate);
  EXPECT_FALSE(p.clamp_tgt_rate_after_time_inc);
  EXPECT_EQ(congestion.min_time_between_cnps_ns, 0);
  EXPECT_EQ(congestion.cnp_dscp, 46);
  EXPECT_TRUE(scenario->switches.ecn_at_dequeue);
  EXPECT_EQ(scenario->engine.ack_request_interval, 1u);
}

TEST(ScenarioFile, DcqcnDefaultsAreConnectx) {
  auto scenario = parse_scenario("[topology]\nkind = \"star\"\nhosts = 2\n[dcqcn]\nenabled = true\n"
                                 "[[flows]]\nsrc = 0\ndst = 1\nbytes = 1\n",
                                 "defaults.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  const CongestionConfig& congestion = scenario->engine.congestion;
  EXPECT_EQ(congestion.dcqcn.variant, DcqcnVariant::connectx);
  EXPECT_EQ(congestion.min_time_between_cnps_ns, 4'000);
  EXPECT_EQ(congestion.dcqcn.connectx.rpg_time_reset_ns, 300'000);
  EXPECT_EQ(congestion.dcqcn.connectx.dce_tcp_g, 1019u);
  EXPECT_FALSE(scenario->switches.ecn_at_dequeue);
  EXPECT_EQ(scenario->switches.ecn_kmin_bytes, 0u);  // by the port's rate
  EXPECT_EQ(scenario->engine.ack_request_interval, 64u);
}

TEST(ScenarioFile, TheSameSeedGivesTheSamePermutation) {
  auto first = parse_scenario(kFull, "a");
  auto second = parse_scenario(kFull, "b");
  ASSERT_TRUE(first && second);
  for (std::size_t i = 0; i < first->flows.size(); ++i) EXPECT_EQ(first->flows[i].dst, second->flows[i].dst);
}

struct BadCase {
  const char* toml;
  const char* says;
};

// ECN thresholds in bytes, for peers whose KB is 1000 bytes; and links that
// put no Ethernet around a datagram take less wire time for the same flow:
// a 1024-byte WRITE payload is 1106 bytes framed, 1070 on a point-to-point
// link (sim/packet.h), and a 1 MiB flow alone is mostly that wire time.
TEST(ScenarioFile, ThresholdsInBytesAndPointToPointFraming) {
  auto scenario = parse_scenario(R"(
[topology]
kind = "star"
hosts = 2
[switch]
ecn_kmin_bytes = 400000
ecn_kmax_bytes = 1600000
[transport]
mtu = 1024
[[flows]]
src = 0
dst = 1
bytes = 1048576
)",
                                 "framing.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  EXPECT_EQ(scenario->switches.ecn_kmin_bytes, 400'000u);
  EXPECT_EQ(scenario->switches.ecn_kmax_bytes, 1'600'000u);
  EXPECT_EQ(scenario->topology.framing, Framing::ethernet);
  SimResult ethernet = run_simulation(*scenario);
  scenario->topology.framing = Framing::point_to_point;
  SimResult point_to_point = run_simulation(*scenario);
  ASSERT_TRUE(ethernet.flows[0].finished() && point_to_point.flows[0].finished());
  double ratio = static_cast<double>(point_to_point.flows[0].finish - point_to_point.flows[0].spec.start) /
                 static_cast<double>(ethernet.flows[0].finish - ethernet.flows[0].spec.start);
  EXPECT_NEAR(ratio, 1070.0 / 1106.0, 0.005);
  auto written = parse_scenario("[topology]\nkind = \"star\"\nhosts = 2\nframing = \"point_to_point\"\n"
                                "[[flows]]\nsrc = 0\ndst = 1\nbytes = 1\n",
                                "written.toml");
  ASSERT_TRUE(written) << written.error();
  EXPECT_EQ(written->topology.framing, Framing::point_to_point);
  // GPU servers built on that fabric keep its framing.
  auto servers = parse_scenario("[topology]\nkind = \"star\"\nhosts = 2\nframing = \"point_to_point\"\n"
                                "[servers]\ngpus = 2\n[[flows]]\nsrc = 0\ndst = 1\nbytes = 1\n",
                                "servers.toml");
  ASSERT_TRUE(servers) << servers.error();
  EXPECT_EQ(servers->topology.framing, Framing::point_to_point);
}

TEST(ScenarioFile, MistakesAreNamed) {
  const BadCase cases[] = {
      {"[topology]\nkind = \"star\"\nhosts = 3\nhostz = 4\n[[flows]]\nsrc=0\ndst=1\nbytes=1", "unknown key 'hostz'"},
      {"[topology]\nkind = \"ring\"\n", "'ring' is not one of"},
      {"[topology]\nkind = \"star\"\nhosts = \"three\"\n", "topology.hosts: expected a number"},
      {"[topology]\nkind = \"fat_tree\"\nk = 5\n", "even k"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[flows]]\nsrc = 0\ndst = 9\nbytes = 1\n", "flows[0].dst"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n", "nothing to simulate"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[switch]\necn_kmin_kb = 10\necn_kmax_kb = 5\n", "ecn_kmax_kb"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[switch]\necn_kmin_kb = 10\necn_kmin_bytes = 10000\n",
       "ecn_kmin_kb and ecn_kmin_bytes name one threshold"},
      {"[topology]\nkind = \"star\"\nhosts = 3\nframing = \"ppp\"\n", "'ppp' is not one of"},
      {"[topology]\nkind = \"edges\"\nhosts = 2\nswitches = 1\nlinks = [{a = \"h0\", b = \"s0\"}, {a = \"h1\", b = "
       "\"x1\"}]\n",
       "not a node name"},
      {"[topology]\nkind = \"edges\"\nhosts = 2\nswitches = 1\nlinks = [{a = \"h0\", b = \"s0\"}]\n",
       "host 1 has no link"},
      {"[topology]\nkind = \"edges\"\nhosts = 1\nswitches = 1\nlinks = [{a = \"h0\", b = \"s0\"}, {a = \"h0\", b = \"s0\"}]\n",
       "two links into the plane of switch 0"},
      {"[topology]\nkind = \"edges\"\nhosts = 2\nswitches = 2\nlinks = [{a = \"h0\", b = \"s0\"}, {a = \"h1\", b = \"s0\"}, {a = \"h0\", b = \"s1\"}]\n",
       "switch 1 is not connected to host 1"},
      {"[topology\nkind = 1", "bad.toml:1:"},
      {"[topology]\nkind = \"edges\"\nhosts = 2\nswitches = 2\nlinks = [{a = \"h0\", b = \"s0\"}, {a = \"h1\", b = "
       "\"s1\"}, {a = \"s0\", b = \"s1\"}]\nroutes = [{at = \"s0\", to = \"h1\", via = \"s0\"}]\n",
       "not linked"},
      {"[topology]\nkind = \"star\"\nhosts = 3\nloss = 0.9\n", "topology.loss"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[switch]\nscheduler = \"wfq\"\n", "'wfq' is not one of"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[dcqcn]\nrai_mbps = 40\n", "dcqcn.rai_mbps: belongs to variant = \"paper\""},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[dcqcn]\nvariant = \"paper\"\nrpg_ai_rate = 5\n",
       "dcqcn.rpg_ai_rate: belongs to variant = \"connectx\""},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[dcqcn]\nvariant = \"dctcp\"\n", "'dctcp' is not one of"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[dcqcn]\nrpg_gd = 3\n", "dcqcn.rpg_gd"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[dcqcn]\ncnp_interval_us = 3\n", "unknown key 'cnp_interval_us' (now min_time_between_cnps, in us)"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[switch]\necn_mark = \"early\"\n", "'early' is not one of"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[switch]\ndwrr_weights = [1, 2]\n", "a list of 8 weights"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[output]\ncapture = [\"s0-h1\"]\n", "output.capture"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[workloads]]\nkind = \"allreduce\"\nbytes = 100\n"
       "straggler_delay_us = 5\n",
       "need a straggler"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[workloads]]\nkind = \"cdf\"\ncdf_file = \"missing.csv\"\nload = 0.5\n"
       "duration_us = 10\n",
       "cannot read"},
      {"seed = 1\n", "[topology] is required"},
      {"[topology]\nkind = \"star\"\nhosts = 4\n[[workloads]]\nkind = \"collective\"\nbytes = 4000\n",
       "workloads[0].operation: all_reduce, all_gather, reduce_scatter or alltoall"},
      {"[topology]\nkind = \"star\"\nhosts = 4\n[[workloads]]\nkind = \"collective\"\noperation = \"broadcast\"\n"
       "bytes = 4000\n",
       "'broadcast' is not one of"},
      {"[topology]\nkind = \"star\"\nhosts = 4\n[[workloads]]\nkind = \"allreduce\"\nalgorithm = \"tree\"\n"
       "bytes = 4000\n",
       "'tree' is not one of"},
      {"[topology]\nkind = \"star\"\nhosts = 4\n[[workloads]]\nkind = \"allreduce\"\noperation = \"alltoall\"\n"
       "bytes = 4000\n",
       "unknown key 'operation'"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[transport]\ntail_timeout_us = -5\n", "transport.tail_timeout_us"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[transport]\nloss_probe_us = -5\n", "transport.loss_probe_us"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[failures]]\nlink = \"s0\"\nat_us = 5\n",
       "failures[0].link: expected the two ends of a link"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[failures]]\nlink = \"h0-h1\"\nat_us = 5\n",
       "two hosts are never linked"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[failures]]\nlink = \"s0-h1\"\n", "failures[0].at_us: missing"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[failures]]\nlink = \"s0-h1\"\nat_us = 5\nrecover_us = 2\n",
       "must recover after it fails"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[failures]]\nswitch = \"h1\"\nat_us = 5\n", "failures[0].switch: 'h1' is a host"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[failures]]\nswitch = \"s0\"\nlink = \"s0-h1\"\nat_us = 5\n",
       "give either link"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[[failures]]\nlink = \"s0-q1\"\nat_us = 5\n", "not a node name"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[routing]\nreconverge = 5\n", "unknown key 'reconverge'"},
  };
  for (const BadCase& bad : cases) {
    auto scenario = parse_scenario(bad.toml, "bad.toml");
    ASSERT_FALSE(scenario) << bad.toml;
    EXPECT_NE(scenario.error().find(bad.says), std::string::npos) << scenario.error();
    EXPECT_EQ(scenario.error().rfind("bad.toml", 0), 0u) << scenario.error();
  }
}

TEST(ScenarioFile, FabricExtrasLoad) {
  auto scenario = parse_scenario(R"(
deadlock_check_us = 50
[topology]
kind = "edges"
hosts = 3
switches = 2
loss = 0.001
links = [{a = "h0", b = "s0"}, {a = "h1", b = "s1"}, {a = "h2", b = "s1"}, {a = "s0", b = "s1"}]
routes = [{at = "s1", to = "h0", via = "s0"}]
[switch]
scheduler = "dwrr"
dwrr_weights = [1, 2, 3, 4, 5, 6, 7, 8]
strict_priorities = [7]
[output]
sample_us = 5
capture = ["s0->s1", "h2->s1"]
capture_frames = 10
[[flows]]
src = 0
dst = 1
bytes = 100
dscp = 8
[[workloads]]
kind = "allreduce"
hosts = [2, 0, 1]
bytes = 3000
iterations = 4
step_compute_us = 2
straggler = 0
straggler_delay_us = 7
straggler_link_gbps = 25
)",
                                 "extras.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  EXPECT_EQ(scenario->deadlock_check, 50 * kPicosecondsPerUs);
  ASSERT_EQ(scenario->topology.routes.size(), 1u);
  EXPECT_EQ(scenario->topology.routes[0].to_host, 0u);
  EXPECT_DOUBLE_EQ(scenario->topology.edges[3].link.loss, 0.001);
  EXPECT_EQ(scenario->switches.scheduler, Scheduler::dwrr);
  EXPECT_EQ(scenario->switches.dwrr_weights[7], 8u);
  EXPECT_EQ(scenario->switches.strict_priorities, 0x80);
  EXPECT_EQ(scenario->sample_interval, 5 * kPicosecondsPerUs);
  ASSERT_EQ(scenario->captures.size(), 2u);
  EXPECT_TRUE(scenario->captures[1].first.is_host);
  EXPECT_EQ(scenario->capture_frames, 10u);
  EXPECT_EQ(scenario->flows[0].dscp, std::optional<std::uint8_t>(8));
  ASSERT_TRUE(scenario->collective.has_value());
  EXPECT_EQ(scenario->collective->hosts, (std::vector<std::uint32_t>{2, 0, 1}));
  EXPECT_EQ(scenario->collective->iterations, 4u);
  EXPECT_EQ(scenario->collective->straggler, std::optional<std::uint32_t>(0));
  EXPECT_EQ(scenario->collective->straggler_delay, 7 * kPicosecondsPerUs);
  EXPECT_EQ(scenario->topology.edges[0].link.rate_bps, 25'000'000'000u);  // h0's link
}

TEST(ScenarioFile, ACollectiveNamesItsOperationAndAlgorithm) {
  auto scenario = parse_scenario(
      "[topology]\nkind = \"star\"\nhosts = 8\n[[workloads]]\nkind = \"collective\"\noperation = \"alltoall\"\n"
      "algorithm = \"pairwise\"\ncount = 4\nbytes = 4000\niteration_gap_us = 25\n",
      "alltoall.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  ASSERT_TRUE(scenario->collective);
  EXPECT_EQ(scenario->collective->operation, collective::Operation::alltoall);
  EXPECT_EQ(scenario->collective->algorithm, collective::Algorithm::pairwise);
  EXPECT_EQ(scenario->collective->hosts, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(scenario->collective->iteration_gap, 25 * kPicosecondsPerUs);
  auto defaults = parse_scenario(
      "[topology]\nkind = \"star\"\nhosts = 8\n[[workloads]]\nkind = \"collective\"\noperation = \"alltoall\"\n"
      "bytes = 4000\n",
      "direct.toml");
  ASSERT_TRUE(defaults) << defaults.error();
  EXPECT_EQ(defaults->collective->algorithm, collective::Algorithm::direct);
  // Halving-doubling on a rank count that is not a power of two is refused when it runs.
  auto odd = parse_scenario(
      "[topology]\nkind = \"star\"\nhosts = 8\n[[workloads]]\nkind = \"allreduce\"\nalgorithm = "
      "\"halving_doubling\"\ncount = 6\nbytes = 6000\n",
      "odd.toml");
  ASSERT_TRUE(odd) << odd.error();
  try {
    run_simulation(*odd);
    ADD_FAILURE() << "ran";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("power of two"), std::string::npos) << error.what();
  }
}

TEST(ScenarioFile, TrimmingIsASwitchSetting) {
  const std::string flow = "[[flows]]\nsrc = 1\ndst = 0\nbytes = 100\n";
  auto scenario = parse_scenario(
      "[topology]\nkind = \"star\"\nhosts = 3\n[switch]\npfc = false\ntrim = true\ntrim_kb = 64\n" + flow, "trim.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  EXPECT_TRUE(scenario->switches.trim);
  EXPECT_EQ(scenario->switches.trim_bytes, 64u << 10);
  auto defaults = parse_scenario("[topology]\nkind = \"star\"\nhosts = 3\n" + flow, "plain.toml");
  ASSERT_TRUE(defaults) << defaults.error();
  EXPECT_FALSE(defaults->switches.trim);
}

TEST(ScenarioFile, AMissingFileIsAnError) {
  auto scenario = load_scenario("/nonexistent/scenario.toml");
  ASSERT_FALSE(scenario);
  EXPECT_NE(scenario.error().find("cannot read"), std::string::npos);
}

// [chakra] reads ASTRA-sim's 8-rank all-reduce (tests/sim/astra_sim_traces).
std::string chakra_scenario(const std::string& hosts, const std::string& table) {
  return "[topology]\nkind = \"star\"\nhosts = " + hosts + "\n[chakra]\ntraces = \"" +
         std::string(UROCE_ASTRA_SIM_TRACES) + "/all_reduce/8npus_1MB/all_reduce\"\n" + table;
}

TEST(ScenarioFile, AChakraTableReadsEveryRanksTrace) {
  auto scenario = parse_scenario(chakra_scenario("10", "ranks = [9, 8, 7, 6, 5, 4, 3, 2]\nalgorithm = \"halving_doubling\"\n"
                                                       "start_us = 5\nslices = 4\nchannels = 2\n[chakra.groups]\ntp = [0, 1]\n"),
                                 "chakra.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  ASSERT_EQ(scenario->chakra.size(), 1u);
  const ChakraSpec& job = scenario->chakra[0];
  EXPECT_FALSE(scenario->chakra_listed);
  EXPECT_EQ(job.name, "chakra");
  EXPECT_EQ(job.ranks.size(), 8u);
  EXPECT_EQ(job.hosts.front(), 9u);
  EXPECT_EQ(job.groups.at("tp"), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(job.algorithm, collective::Algorithm::halving_doubling);
  EXPECT_EQ(job.start, 5 * kPicosecondsPerUs);
  EXPECT_EQ(job.slices, 4u);
  EXPECT_EQ(job.channels, 2u);
}

// Four ranks whose traces declare their process groups as PyTorch records
// them (chakra/process_groups.h): each pair all-reduces in its own group,
// then all four in the default one. `second_pair` is what rank 3's trace
// says the pair "2" is.
std::string traces_declaring_groups(const std::string& second_pair) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("uroce-pg-" + std::to_string(::getpid()) + "-" + second_pair.substr(0, 1));
  std::filesystem::create_directories(dir);
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    std::string pair = rank == 3 ? second_pair : "2, 3";
    chakra::Trace trace;
    trace.version = "0.0.4";
    chakra::TraceNode groups;
    groups.id = 1;
    groups.name = std::string(chakra::kProcessGroupNodeName);
    groups.type = chakra::kMetadataNode;
    groups.inputs = R"(['[{"pg_name": "0", "ranks": []}, {"pg_name": "1", "ranks": [0, 1]}, {"pg_name": "2", "ranks": [)" +
                    pair + R"(]}]'])";
    chakra::TraceNode own;
    own.id = 2;
    own.name = "nccl:all_reduce";
    own.type = chakra::kCommCollNode;
    own.comm_type = chakra::CommType::all_reduce;
    own.comm_size = 1 << 20;
    own.pg_name = rank < 2 ? "1" : "2";
    chakra::TraceNode everyone = own;
    everyone.id = 3;
    everyone.pg_name = "0";
    everyone.deps = {2};
    trace.nodes = {groups, own, everyone};
    std::ofstream((dir / ("step." + std::to_string(rank) + ".et")).string(), std::ios::binary)
        << chakra::encode_trace(trace);
  }
  return (dir / "step").string();
}

TEST(ScenarioFile, ProcessGroupsATraceDeclaresNeedNoGroupsTable) {
  std::string traces = traces_declaring_groups("2, 3");
  std::string head = "[topology]\nkind = \"star\"\nhosts = 4\n[chakra]\ntraces = \"" + traces + "\"\n";
  auto scenario = parse_scenario(head, "groups.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  const ChakraSpec& job = scenario->chakra[0];
  EXPECT_EQ(job.groups.at("0"), (std::vector<std::uint32_t>{0, 1, 2, 3}));  // [] in the trace: every rank
  EXPECT_EQ(job.groups.at("1"), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(job.groups.at("2"), (std::vector<std::uint32_t>{2, 3}));
  SimResult result = run_simulation(*scenario);
  ASSERT_EQ(result.chakra.size(), 1u);
  EXPECT_EQ(result.chakra[0].ranks_finished, 4u);
  std::map<std::string, std::uint32_t> ranks_of;
  for (const ChakraCollectiveResult& collective : result.chakra[0].collectives) ranks_of[collective.group] = collective.ranks;
  EXPECT_EQ(ranks_of, (std::map<std::string, std::uint32_t>{{"0", 4}, {"1", 2}, {"2", 2}}));

  // Ranks that disagree about a group are an error naming both files; a
  // [chakra.groups] entry overrides what the traces say.
  std::string odd = traces_declaring_groups("1, 3");
  auto disagree = parse_scenario("[topology]\nkind = \"star\"\nhosts = 4\n[chakra]\ntraces = \"" + odd + "\"\n", "odd.toml");
  ASSERT_FALSE(disagree);
  EXPECT_NE(disagree.error().find(odd + ".3.et: process group \"2\" is ranks [1, 3] here, [2, 3] in " + odd + ".0.et"),
            std::string::npos)
      << disagree.error();
  auto overridden = parse_scenario("[topology]\nkind = \"star\"\nhosts = 4\n[chakra]\ntraces = \"" + odd +
                                       "\"\n[chakra.groups]\n2 = [2, 3]\n",
                                   "override.toml");
  ASSERT_TRUE(overridden) << overridden.error();
  EXPECT_EQ(overridden->chakra[0].groups.at("2"), (std::vector<std::uint32_t>{2, 3}));
  std::filesystem::remove_all(std::filesystem::path(traces).parent_path());
  std::filesystem::remove_all(std::filesystem::path(odd).parent_path());
}

TEST(ScenarioFile, ChakraTablesInAListAreJobsSharingTheFabric) {
  std::string traces = std::string(UROCE_ASTRA_SIM_TRACES) + "/all_reduce/4npus_1MB/all_reduce";
  auto scenario = parse_scenario("[topology]\nkind = \"star\"\nhosts = 8\n[[chakra]]\nname = \"left\"\ntraces = \"" +
                                     traces + "\"\n[[chakra]]\ntraces = \"" + traces + "\"\nranks = [4, 5, 6, 7]\n",
                                 "jobs.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  EXPECT_TRUE(scenario->chakra_listed);
  ASSERT_EQ(scenario->chakra.size(), 2u);
  EXPECT_EQ(scenario->chakra[0].name, "left");
  EXPECT_EQ(scenario->chakra[1].name, "job1");
  EXPECT_EQ(scenario->chakra[1].hosts, (std::vector<std::uint32_t>{4, 5, 6, 7}));

  auto twice = parse_scenario("[topology]\nkind = \"star\"\nhosts = 8\n[[chakra]]\nname = \"x\"\ntraces = \"" + traces +
                                  "\"\n[[chakra]]\nname = \"x\"\ntraces = \"" + traces + "\"\n",
                              "bad.toml");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("chakra[1].name: a second job named \"x\""), std::string::npos) << twice.error();
  auto neither = parse_scenario("chakra = 3\n[topology]\nkind = \"star\"\nhosts = 8\n", "bad.toml");
  ASSERT_FALSE(neither);
  EXPECT_NE(neither.error().find("a [chakra] table, or [[chakra]] tables"), std::string::npos) << neither.error();
}

TEST(ScenarioFile, ACollectiveTakesSlicesAndChannels) {
  auto scenario = parse_scenario("[topology]\nkind = \"star\"\nhosts = 4\n[[workloads]]\nkind = \"collective\"\n"
                                 "operation = \"all_reduce\"\nbytes = 4096\nslices = 8\nchannels = 2\n",
                                 "collective.toml");
  ASSERT_TRUE(scenario) << scenario.error();
  ASSERT_TRUE(scenario->collective);
  EXPECT_EQ(scenario->collective->slices, 8u);
  EXPECT_EQ(scenario->collective->channels, 2u);
  auto bad = parse_scenario("[topology]\nkind = \"star\"\nhosts = 4\n[[workloads]]\nkind = \"allreduce\"\n"
                            "bytes = 4096\nslices = 65\n",
                            "bad.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("workloads[0].slices"), std::string::npos) << bad.error();
}

TEST(ScenarioFile, ChakraMistakesAreNamed) {
  const std::pair<std::string, const char*> cases[] = {
      {"[topology]\nkind = \"star\"\nhosts = 3\n[chakra]\n", "chakra.traces: the traces' path and prefix"},
      {"[topology]\nkind = \"star\"\nhosts = 3\n[chakra]\ntraces = \"/nonexistent/step\"\n",
       "no file /nonexistent/step.0.et"},
      {chakra_scenario("4", ""), "8 ranks, more than the topology's 4 hosts"},
      {chakra_scenario("10", "ranks = [0, 1]\n"), "chakra.ranks: 2 hosts for 8 ranks"},
      {chakra_scenario("10", "[chakra.groups]\ntp = [0, 9]\n"), "chakra.groups.tp: each entry must be a rank below 8"},
      {chakra_scenario("10", "[chakra.groups]\ntp = [1, 1]\n"), "rank 1 is listed twice"},
      {chakra_scenario("10", "algorithm = \"tree\"\n"), "'tree' is not one of"},
      {chakra_scenario("10", "trace = \"x\"\n"), "unknown key 'trace'"},
      {chakra_scenario("10", "slices = 0\n"), "chakra.slices"},
      {chakra_scenario("10", "channels = 33\n"), "chakra.channels"},
  };
  for (const auto& [toml, says] : cases) {
    auto scenario = parse_scenario(toml, "bad.toml");
    ASSERT_FALSE(scenario) << toml;
    EXPECT_NE(scenario.error().find(says), std::string::npos) << scenario.error();
  }
}

}  // namespace
}  // namespace uroce::sim
