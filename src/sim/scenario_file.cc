// Reading scenario files with toml++: the scenario's own keys and its
// topology, switch and transport tables (the dcqcn table is read in
// congestion_table, flows and workloads in workload_file).
#include "sim/scenario_file.h"

#include <fmt/format.h>

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "sim/chakra_table.h"
#include "sim/congestion_table.h"
#include "sim/failure_table.h"
#include "sim/gpu_servers.h"
#include "sim/toml_fields.h"
#include "sim/workload_file.h"

namespace uroce::sim {

namespace {

constexpr double kMaxGbps = 1600;
constexpr std::int64_t kMaxDelayNs = 1'000'000'000;

LinkSpec link(const toml::table& table, std::string_view where, std::string_view gbps_key, LinkSpec fallback) {
  double gbps = number<double>(table, where, gbps_key, static_cast<double>(fallback.rate_bps) / 1e9, 0.001, kMaxGbps);
  auto delay_ns = number<std::int64_t>(table, where, "delay_ns", fallback.propagation / kPicosecondsPerNs, 0,
                                       kMaxDelayNs);
  return LinkSpec{static_cast<std::uint64_t>(gbps * 1e9), delay_ns * kPicosecondsPerNs};
}

Topology topology_from(const toml::table& table) {
  const char* where = "topology";
  std::string kind =
      text(table, where, "kind", "", {"dumbbell", "star", "leaf_spine", "fat_tree", "multi_plane", "edges"});
  if (kind.empty()) {
    throw ScenarioError("topology.kind: missing (dumbbell, star, leaf_spine, fat_tree, multi_plane or edges)");
  }
  LinkSpec host_link = link(table, where, "link_gbps", LinkSpec{});
  Topology topology;
  if (kind == "dumbbell") {
    only_keys(table, where, {"kind", "hosts_per_side", "link_gbps", "delay_ns", "bottleneck_gbps", "loss", "framing"});
    auto per_side = number<std::uint32_t>(table, where, "hosts_per_side", 1, 1, 1 << 16);
    LinkSpec bottleneck = link(table, where, "bottleneck_gbps", host_link);
    topology = dumbbell(per_side, host_link, bottleneck);
  } else if (kind == "star") {
    only_keys(table, where, {"kind", "hosts", "link_gbps", "delay_ns", "loss", "framing"});
    topology = star(number<std::uint32_t>(table, where, "hosts", 2, 2, 1 << 16), host_link);
  } else if (kind == "leaf_spine") {
    only_keys(table, where, {"kind", "leaves", "spines", "hosts_per_leaf", "link_gbps", "uplink_gbps", "delay_ns", "loss", "framing"});
    topology = leaf_spine(number<std::uint32_t>(table, where, "leaves", 2, 1, 4096),
                          number<std::uint32_t>(table, where, "spines", 2, 1, 4096),
                          number<std::uint32_t>(table, where, "hosts_per_leaf", 4, 1, 4096), host_link,
                          link(table, where, "uplink_gbps", host_link));
  } else if (kind == "multi_plane") {
    only_keys(table, where,
              {"kind", "planes", "leaves", "spines", "hosts_per_leaf", "links_per_spine", "link_gbps", "uplink_gbps",
               "delay_ns", "loss", "framing"});
    topology = multi_plane(number<std::uint32_t>(table, where, "planes", 2, 1, kMaxHostPorts),
                           number<std::uint32_t>(table, where, "leaves", 2, 1, 4096),
                           number<std::uint32_t>(table, where, "spines", 2, 1, 4096),
                           number<std::uint32_t>(table, where, "hosts_per_leaf", 4, 1, 4096), host_link,
                           link(table, where, "uplink_gbps", host_link),
                           number<std::uint32_t>(table, where, "links_per_spine", 1, 1, 256));
  } else if (kind == "fat_tree") {
    only_keys(table, where, {"kind", "k", "link_gbps", "delay_ns", "loss", "framing"});
    auto k = number<std::uint32_t>(table, where, "k", 4, 2, 64);
    if (k % 2 != 0) throw ScenarioError("topology.k: a fat-tree needs an even k");
    topology = fat_tree(k, host_link);
  } else {
    only_keys(table, where, {"kind", "hosts", "switches", "links", "link_gbps", "delay_ns", "loss", "routes", "framing"});
    topology.hosts = number<std::uint32_t>(table, where, "hosts", 0, 1, 1 << 20);
    topology.switches = number<std::uint32_t>(table, where, "switches", 0, 1, 1 << 20);
    const toml::array* links = table.get_as<toml::array>("links");
    if (links == nullptr) throw ScenarioError("topology.links: an array of {a, b[, link_gbps, delay_ns]} is needed");
    for (std::size_t i = 0; i < links->size(); ++i) {
      std::string at = fmt::format("topology.links[{}]", i);
      const toml::table* entry = links->get(i)->as_table();
      if (entry == nullptr) throw ScenarioError(at + ": expected {a = \"h0\", b = \"s0\"}");
      only_keys(*entry, at, {"a", "b", "link_gbps", "delay_ns"});
      auto a = entry->get_as<std::string>("a");
      auto b = entry->get_as<std::string>("b");
      if (a == nullptr || b == nullptr) throw ScenarioError(at + ": a and b name the two ends");
      LinkSpec spec = link(*entry, at, "link_gbps", host_link);
      topology.edges.push_back({node_name(a->get(), at), node_name(b->get(), at), spec});
    }
    if (const toml::node* routes = table.get("routes")) {
      const toml::array* list = routes->as_array();
      if (list == nullptr) throw ScenarioError("topology.routes: an array of {at, to, via} is needed");
      for (std::size_t i = 0; i < list->size(); ++i) {
        std::string at = fmt::format("topology.routes[{}]", i);
        const toml::table* entry = list->get(i)->as_table();
        if (entry == nullptr) throw ScenarioError(at + ": expected {at = \"s0\", to = \"h2\", via = \"s1\"}");
        only_keys(*entry, at, {"at", "to", "via"});
        auto at_switch = entry->get_as<std::string>("at");
        auto to_host = entry->get_as<std::string>("to");
        auto via_switch = entry->get_as<std::string>("via");
        if (at_switch == nullptr || to_host == nullptr || via_switch == nullptr) {
          throw ScenarioError(at + ": at (a switch), to (a host) and via (a switch) are all needed");
        }
        NodeRef from = node_name(at_switch->get(), at);
        NodeRef target = node_name(to_host->get(), at);
        NodeRef via = node_name(via_switch->get(), at);
        if (from.is_host || via.is_host || !target.is_host) {
          throw ScenarioError(at + ": at and via name switches (s<N>), to names a host (h<N>)");
        }
        topology.routes.push_back({from.index, target.index, via.index});
      }
    }
    topology.description = fmt::format("{} hosts, {} switches, {} links", topology.hosts, topology.switches,
                                       topology.edges.size());
  }
  double loss = number<double>(table, where, "loss", 0, 0, 0.5);
  for (TopologyEdge& edge : topology.edges) edge.link.loss = loss;
  topology.framing = text(table, where, "framing", "ethernet", {"ethernet", "point_to_point"}) == "point_to_point"
                         ? Framing::point_to_point
                         : Framing::ethernet;
  if (auto problem = topology_problem(topology)) throw ScenarioError("topology: " + *problem);
  return topology;
}

// [servers]: the fabric's NICs become GPU servers (sim/gpu_servers.h).
Topology servers_from(const toml::table& table, const Topology& fabric) {
  const char* where = "servers";
  only_keys(table, where, {"gpus", "nvlink_gbps", "nvlink_delay_ns", "nic"});
  GpuServerSpec spec;
  spec.gpus = number<std::uint32_t>(table, where, "gpus", spec.gpus, 1, 72);
  double gbps = number<double>(table, where, "nvlink_gbps", static_cast<double>(spec.nvlink.rate_bps) / 1e9, 1, 100'000);
  spec.nvlink.rate_bps = static_cast<std::uint64_t>(gbps * 1e9);
  spec.nvlink.propagation = number<std::int64_t>(table, where, "nvlink_delay_ns", spec.nvlink.propagation / kPicosecondsPerNs,
                                                 0, kMaxDelayNs) * kPicosecondsPerNs;
  spec.nics = text(table, where, "nic", "rail", {"rail", "shared"}) == "rail" ? ServerNics::rail : ServerNics::shared;
  try {
    Topology topology = with_gpu_servers(fabric, spec);
    if (auto problem = topology_problem(topology)) throw ScenarioError("servers: " + *problem);
    return topology;
  } catch (const std::invalid_argument& error) {
    throw ScenarioError(std::string("servers: ") + error.what() + " (the [topology]'s hosts are the NICs)");
  }
}

// A list of priorities such as [3, 4] as a bit mask; fallback when absent.
std::uint8_t priority_mask(const toml::table& table, std::string_view key, std::uint8_t fallback) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return fallback;
  const toml::array* list = node->as_array();
  if (list == nullptr) throw ScenarioError(fmt::format("switch.{}: expected a list such as [3]", key));
  std::uint8_t mask = 0;
  for (const toml::node& entry : *list) {
    auto priority = entry.value_exact<std::int64_t>();
    if (!priority || *priority < 0 || *priority > 7) {
      throw ScenarioError(fmt::format("switch.{}: priorities are 0 to 7", key));
    }
    mask |= static_cast<std::uint8_t>(1u << *priority);
  }
  return mask;
}

SwitchConfig switch_from(const toml::table& table) {
  const char* where = "switch";
  only_keys(table, where,
            {"buffer_kb", "pfc", "lossless_priorities", "xoff_kb", "xon_offset_kb", "headroom_kb", "dynamic_alpha",
             "ecn", "ecn_kmin_kb", "ecn_kmax_kb", "ecn_kmin_bytes", "ecn_kmax_bytes", "ecn_pmax", "ecn_mark", "lossy_queue_kb", "forwarding", "scheduler",
             "dwrr_weights", "strict_priorities", "trim", "trim_kb"});
  SwitchConfig config;
  constexpr std::uint64_t kKb = 1024;
  constexpr std::uint64_t kMaxKb = 1 << 24;
  auto kilobytes = [&](std::string_view key, std::uint64_t fallback) {
    return number<std::uint64_t>(table, where, key, fallback / kKb, 0, kMaxKb) * kKb;
  };
  config.buffer_bytes = kilobytes("buffer_kb", config.buffer_bytes);
  config.pfc = boolean(table, where, "pfc", config.pfc);
  config.lossless_priorities = priority_mask(table, "lossless_priorities", config.lossless_priorities);
  config.strict_priorities = priority_mask(table, "strict_priorities", config.strict_priorities);
  config.scheduler = text(table, where, "scheduler", "strict", {"strict", "dwrr"}) == "dwrr" ? Scheduler::dwrr
                                                                                             : Scheduler::strict;
  if (const toml::node* node = table.get("dwrr_weights")) {
    const toml::array* list = node->as_array();
    if (list == nullptr || list->size() != kPriorities) {
      throw ScenarioError("switch.dwrr_weights: a list of 8 weights, priority 0 first");
    }
    for (std::size_t p = 0; p < list->size(); ++p) {
      auto weight = list->get(p)->value_exact<std::int64_t>();
      if (!weight || *weight < 1 || *weight > 1000) throw ScenarioError("switch.dwrr_weights: weights are 1 to 1000");
      config.dwrr_weights[p] = static_cast<std::uint32_t>(*weight);
    }
  }
  config.xoff_bytes = kilobytes("xoff_kb", config.xoff_bytes);
  config.xon_offset_bytes = kilobytes("xon_offset_kb", config.xon_offset_bytes);
  config.headroom_bytes = kilobytes("headroom_kb", config.headroom_bytes);
  config.dynamic_alpha = number<double>(table, where, "dynamic_alpha", config.dynamic_alpha, 0, 64);
  config.ecn = boolean(table, where, "ecn", config.ecn);
  // In KiB, or in bytes for a peer whose KB is 1,000 bytes; not both.
  auto threshold = [&](std::string_view kb_key, std::string_view bytes_key, std::uint64_t fallback) {
    if (table.contains(kb_key) && table.contains(bytes_key)) {
      throw ScenarioError(fmt::format("switch: {} and {} name one threshold; give one", kb_key, bytes_key));
    }
    if (table.contains(bytes_key)) return number<std::uint64_t>(table, where, bytes_key, fallback, 0, kMaxKb * kKb);
    return kilobytes(kb_key, fallback);
  };
  config.ecn_kmin_bytes = threshold("ecn_kmin_kb", "ecn_kmin_bytes", config.ecn_kmin_bytes);
  config.ecn_kmax_bytes = threshold("ecn_kmax_kb", "ecn_kmax_bytes", config.ecn_kmax_bytes);
  if (config.ecn_kmin_bytes != 0 && config.ecn_kmax_bytes != 0 && config.ecn_kmax_bytes <= config.ecn_kmin_bytes) {
    throw ScenarioError("switch: ecn_kmax_kb (or ecn_kmax_bytes) must exceed ecn_kmin_kb (or ecn_kmin_bytes)");
  }
  config.ecn_pmax = number<double>(table, where, "ecn_pmax", config.ecn_pmax, 0, 1);
  config.ecn_at_dequeue = text(table, where, "ecn_mark", "enqueue", {"enqueue", "dequeue"}) == "dequeue";
  config.lossy_queue_bytes = kilobytes("lossy_queue_kb", config.lossy_queue_bytes);
  config.trim = boolean(table, where, "trim", config.trim);
  config.trim_bytes = kilobytes("trim_kb", config.trim_bytes);
  std::string forwarding = text(table, where, "forwarding", "ecmp", {"ecmp", "spray", "source"});
  config.forwarding = forwarding == "spray"    ? Forwarding::spray
                      : forwarding == "source" ? Forwarding::source
                                               : Forwarding::ecmp;
  return config;
}

void transport_from(const toml::table& table, Scenario& scenario) {
  const char* where = "transport";
  only_keys(table, where,
            {"mtu", "recovery", "timeout", "retry_cnt", "data_dscp", "window_packets", "tail_timeout_us",
             "tail_timeout_packets", "loss_probe_us", "ack_every_packet", "multipath_evs", "multipath_reorder_window_us",
             "multipath_avoid_us", "multipath_probe_us", "multipath_direct_placement", "ack_dscp"});
  TransportSpec& transport = scenario.transport;
  auto mtu = number<std::uint32_t>(table, where, "mtu", 4096, 256, 4096);
  switch (mtu) {
    case 256: transport.mtu = PathMtu::mtu256; break;
    case 512: transport.mtu = PathMtu::mtu512; break;
    case 1024: transport.mtu = PathMtu::mtu1024; break;
    case 2048: transport.mtu = PathMtu::mtu2048; break;
    case 4096: transport.mtu = PathMtu::mtu4096; break;
    default: throw ScenarioError("transport.mtu: one of 256, 512, 1024, 2048, 4096");
  }
  transport.recovery = text(table, where, "recovery", "go_back_n", {"go_back_n", "selective_repeat"}) ==
                               "selective_repeat"
                           ? LossRecovery::selective_repeat
                           : LossRecovery::go_back_n;
  transport.timeout = number<std::uint8_t>(table, where, "timeout", transport.timeout, 1, 31);
  transport.retry_cnt = number<std::uint8_t>(table, where, "retry_cnt", transport.retry_cnt, 0, 7);
  if (table.contains("tail_timeout_us")) {
    transport.tail_timeout_ns =
        static_cast<TimeNs>(number<double>(table, where, "tail_timeout_us", 0, 0, 1e6) * 1000);
  }
  transport.tail_timeout_packets =
      number<std::uint32_t>(table, where, "tail_timeout_packets", transport.tail_timeout_packets, 1, 1 << 20);
  if (table.contains("loss_probe_us")) {
    transport.loss_probe_ns = static_cast<TimeNs>(number<double>(table, where, "loss_probe_us", 0, 0, 1e6) * 1000);
  }
  transport.data_dscp = number<std::uint8_t>(table, where, "data_dscp", transport.data_dscp, 0, 63);
  if (table.contains("ack_dscp")) scenario.engine.ack_dscp = number<std::uint8_t>(table, where, "ack_dscp", 0, 0, 63);
  // Multipath (MRC-style): each QP sprays over this many EVs.
  MultipathConfig& multipath = transport.multipath;
  multipath.entropy_values = number<std::uint16_t>(table, where, "multipath_evs", 0, 0, 4096);
  auto microseconds_key = [&](const char* key, TimeNs fallback) {
    return static_cast<TimeNs>(number<double>(table, where, key, static_cast<double>(fallback) / 1000, 0.001, 1e6) * 1000);
  };
  multipath.reorder_window_ns = microseconds_key("multipath_reorder_window_us", multipath.reorder_window_ns);
  multipath.avoid_ns = microseconds_key("multipath_avoid_us", multipath.avoid_ns);
  multipath.probe_after_ns = microseconds_key("multipath_probe_us", multipath.probe_after_ns);
  multipath.direct_placement = boolean(table, where, "multipath_direct_placement", true);
  multipath.max_probe_after_ns = std::max(multipath.max_probe_after_ns, multipath.probe_after_ns);
  if (multipath.entropy_values != 0 && transport.recovery != LossRecovery::selective_repeat) {
    throw ScenarioError("transport.multipath_evs needs recovery = \"selective_repeat\"");
  }
  scenario.engine.max_inflight_packets =
      number<std::uint32_t>(table, where, "window_packets", scenario.engine.max_inflight_packets, 1, 1 << 20);
  // Every data packet asks for an ACK (AckReq), as IRN and HPCC's simulator acknowledge.
  if (boolean(table, where, "ack_every_packet", false)) scenario.engine.ack_request_interval = 1;
}

// [output]: how often the time series samples, and up to how many flows
// have their delivery rates sampled.
void output_from(const toml::table& table, Scenario& scenario) {
  const char* where = "output";
  only_keys(table, where, {"sample_us", "series_flow_limit", "capture", "capture_frames"});
  scenario.sample_interval = microseconds_field(table, where, "sample_us", 10, 1e6);
  scenario.series_flow_limit =
      number<std::uint32_t>(table, where, "series_flow_limit", scenario.series_flow_limit, 0, 4096);
  scenario.capture_frames = number<std::uint64_t>(table, where, "capture_frames", scenario.capture_frames, 1, 1e9);
  if (const toml::node* node = table.get("capture")) {
    const toml::array* links = node->as_array();
    if (links == nullptr) throw ScenarioError("output.capture: expected a list such as [\"s0->h1\"]");
    for (const toml::node& entry : *links) {
      auto link = entry.value_exact<std::string>();
      std::size_t arrow = link ? link->find("->") : std::string::npos;
      if (arrow == std::string::npos) {
        throw ScenarioError("output.capture: each entry names a link direction, such as \"s0->h1\"");
      }
      scenario.captures.emplace_back(node_name(link->substr(0, arrow), "output.capture"),
                                     node_name(link->substr(arrow + 2), "output.capture"));
    }
  }
}

Scenario scenario_from(const toml::table& root, const std::filesystem::path& base_dir) {
  only_keys(root, "scenario",
            {"name", "seed", "time_limit_us", "deadlock_check_us", "topology", "switch", "transport", "dcqcn", "flows",
             "workloads", "output", "failures", "routing", "chakra", "servers"});
  Scenario scenario;
  if (auto name = root.get_as<std::string>("name")) scenario.name = name->get();
  scenario.seed = number<std::uint64_t>(root, "scenario", "seed", scenario.seed, 0, UINT32_MAX);
  scenario.time_limit = static_cast<SimTime>(
      number<double>(root, "scenario", "time_limit_us", 100'000, 1, 1e9) * kPicosecondsPerUs);
  scenario.deadlock_check = static_cast<SimTime>(
      number<double>(root, "scenario", "deadlock_check_us", 200, 0, 1e9) * kPicosecondsPerUs);
  const toml::node* topology = root.get("topology");
  if (topology == nullptr || !topology->is_table()) throw ScenarioError("[topology] is required");
  scenario.topology = topology_from(*topology->as_table());
  if (const toml::node* servers = root.get("servers")) {
    if (!servers->is_table()) throw ScenarioError("servers: expected a [servers] table");
    scenario.topology = servers_from(*servers->as_table(), scenario.topology);
  }
  scenario.switches = switch_from(table_or_empty(root, "switch"));
  transport_from(table_or_empty(root, "transport"), scenario);
  congestion_from(table_or_empty(root, "dcqcn"), scenario.engine.congestion);
  output_from(table_or_empty(root, "output"), scenario);
  failures_from(root, scenario);
  std::uint64_t random = scenario.seed;
  if (const toml::node* flows = root.get("flows")) {
    if (!flows->is_array()) throw ScenarioError("[[flows]] must be an array of tables");
    flows_from(*flows->as_array(), scenario);
  }
  if (const toml::node* workloads = root.get("workloads")) {
    if (!workloads->is_array()) throw ScenarioError("[[workloads]] must be an array of tables");
    workloads_from(*workloads->as_array(), scenario, random, base_dir);
  }
  if (const toml::node* chakra = root.get("chakra")) {
    if (chakra->is_table()) {
      chakra_from(*chakra->as_table(), "chakra", scenario, base_dir);
    } else if (const toml::array* jobs = chakra->as_array(); jobs != nullptr && jobs->is_array_of_tables()) {
      scenario.chakra_listed = true;
      for (std::size_t i = 0; i < jobs->size(); ++i) {
        chakra_from(*jobs->get(i)->as_table(), fmt::format("chakra[{}]", i), scenario, base_dir);
      }
    } else {
      throw ScenarioError("chakra: a [chakra] table, or [[chakra]] tables for several jobs");
    }
  }
  if (scenario.flows.empty() && !scenario.collective && scenario.chakra.empty()) {
    throw ScenarioError("no [[flows]], [[workloads]] or [chakra]: nothing to simulate");
  }
  return scenario;
}

}  // namespace

Expected<Scenario, std::string> parse_scenario(const std::string& toml_text, const std::string& source_name) {
  try {
    toml::table root = toml::parse(toml_text, source_name);
    return scenario_from(root, std::filesystem::path(source_name).parent_path());
  } catch (const toml::parse_error& error) {
    std::ostringstream message;
    message << source_name << ":" << error.source().begin.line << ":" << error.source().begin.column << ": "
            << error.description();
    return unexpected(message.str());
  } catch (const ScenarioError& error) {
    return unexpected(source_name + ": " + error.what());
  }
}

Expected<Scenario, std::string> load_scenario(const std::string& path) {
  std::ifstream file(path);
  if (!file) return unexpected(path + ": cannot read the file");
  std::stringstream text;
  text << file.rdbuf();
  return parse_scenario(text.str(), path);
}

}  // namespace uroce::sim
