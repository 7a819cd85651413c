// summary.json, flows.csv and the human summary of a run.
#include "sim/sim_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "sim/chakra_report.h"
#include "sim/collective_bandwidth.h"
#include "sim/collective_choice.h"
#include "sim/fairness.h"

namespace uroce::sim {

namespace {

// The p-th percentile (nearest rank) of finished flows' completion times.
double percentile_us(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(values.size()) + 0.999999);
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

std::vector<double> completion_times_us(const SimResult& result) {
  std::vector<double> times;
  for (const FlowResult& flow : result.flows) {
    if (flow.finished()) times.push_back(microseconds(flow.finish - flow.spec.start));
  }
  return times;
}

std::string node_name(NodeRef node) { return fmt::format("{}{}", node.is_host ? 'h' : 's', node.index); }

// "s0->s1" for each hop of the cycle, in wait-for order.
std::vector<std::string> cycle_links(const Deadlock& deadlock) {
  std::vector<std::string> links;
  for (const PausedHop& hop : deadlock.cycle) {
    links.push_back(fmt::format("s{}->{}", hop.switch_index, node_name(hop.next)));
  }
  return links;
}

nlohmann::ordered_json deadlock_json(const SimResult& result) {
  if (!result.deadlock) return nullptr;
  return {{"detected_at_us", microseconds(result.deadlock->detected_at)},
          {"priority", result.deadlock->cycle.front().priority},
          {"cycle", cycle_links(*result.deadlock)}};
}

// Per iteration: its time, and nccl-tests' algbw and busbw for it.
nlohmann::ordered_json collective_json(const CollectiveSpec& spec, const Topology& topology, const SimResult& result) {
  nlohmann::ordered_json times = nlohmann::ordered_json::array();
  nlohmann::ordered_json algbw = nlohmann::ordered_json::array();
  nlohmann::ordered_json busbw = nlohmann::ordered_json::array();
  for (SimTime t : result.collective_iterations) {
    times.push_back(microseconds(t));
    CollectiveBandwidth bandwidth =
        collective_bandwidth(spec.operation, spec.bytes, static_cast<std::uint32_t>(spec.hosts.size()), t);
    algbw.push_back(bandwidth.algbw_gb_per_s);
    busbw.push_back(bandwidth.busbw_gb_per_s);
  }
  nlohmann::ordered_json predicted = nullptr;  // what the choice saw
  if (spec.algorithm_chosen && spec.operation == collective::Operation::all_reduce) {
    predicted = nlohmann::ordered_json::object();
    for (const PredictedTime& p : predict_algorithms(spec, topology)) {
      predicted[collective::to_string(p.algorithm)] = p.seconds * 1e6;
    }
  }
  return {{"operation", collective::to_string(spec.operation)}, {"algorithm", collective::to_string(spec.algorithm)},
          {"algorithm_chosen", spec.algorithm_chosen}, {"predicted_us", predicted},
          {"channels", spec.channels}, {"slices", spec.slices},
          {"ranks", spec.hosts.size()}, {"bytes", spec.bytes},
          {"iterations", result.collective_iterations.size()}, {"failed", result.collective_failed},
          {"elapsed_us", result.collective_iterations.empty() ? 0.0 : microseconds(result.collective_finished_at - spec.start)},
          {"iteration_us", times}, {"algbw_gb_per_s", algbw}, {"busbw_gb_per_s", busbw}};
}

}  // namespace

nlohmann::ordered_json summary_json(const Scenario& scenario, const SimResult& result) {
  nlohmann::ordered_json flows = nlohmann::ordered_json::array();
  for (const FlowResult& flow : result.flows) {
    flows.push_back({{"id", flow.id},
                     {"src", flow.spec.src},
                     {"dst", flow.spec.dst},
                     {"bytes", flow.spec.bytes},
                     {"start_us", microseconds(flow.spec.start)},
                     {"fct_us", flow.finished() ? nlohmann::ordered_json(microseconds(flow.finish - flow.spec.start))
                                                : nlohmann::ordered_json(nullptr)}});
  }
  std::vector<double> fct = completion_times_us(result);
  const FabricCounters& c = result.fabric;
  nlohmann::ordered_json summary = {{"scenario", scenario.name},
          {"topology", scenario.topology.description},
          {"hosts", result.hosts},
          {"switches", result.switches},
          {"sim_time_us", microseconds(result.sim_time)},
          {"wall_s", result.wall_s},
          {"ranks", result.ranks},
          {"events", result.events},
          {"seed", result.seed},
          {"flows_finished", fct.size()},
          {"flows_failed", result.failed_flows},
          {"fct_us", {{"p50", percentile_us(fct, 50)}, {"p99", percentile_us(fct, 99)}, {"max", percentile_us(fct, 100)}}},
          {"deadlock", deadlock_json(result)},
          {"flows", flows},
          {"totals",
           {{"data_packets", c.data_packets},
            {"pause_frames", c.pause_frames},
            {"resume_frames", c.resume_frames},
            {"pause_us_total", microseconds(c.pause_time_total)},
            {"ecn_marked", c.ecn_marked},
            {"cnps", result.cnps},
            {"drops", c.drops},
            {"lossless_violations", c.lossless_violations},
            {"link_losses", c.link_losses},
            {"failure_losses", c.failure_losses},
            {"trimmed", c.trimmed},
            {"retransmitted_packets", result.retransmitted_packets},
            {"timeouts", result.timeouts},
            {"peak_switch_buffer_bytes", result.peak_switch_buffer_bytes}}}};
  if (scenario.transport.multipath.entropy_values != 0) {
    summary["multipath"] = {{"evs_per_qp", scenario.transport.multipath.entropy_values},
                            {"lost", result.paths_lost},
                            {"evs_retired", result.paths_retired},
                            {"probes", result.paths_probes},
                            {"evs_restored", result.paths_restored},
                            {"placed_on_arrival", result.placed_out_of_order}};
  }
  if (scenario.collective) summary["collective"] = collective_json(*scenario.collective, scenario.topology, result);
  if (!result.chakra.empty()) summary["chakra"] = chakra_summary_json(scenario, result);
  if (auto shares = fairness(result)) {
    summary["fairness"] = {{"jain_index", shares->jain},
                           {"window_us", {microseconds(shares->window_start), microseconds(shares->window_end)}},
                           {"flow_gbps", shares->flow_gbps}};
  }
  return summary;
}

std::string flows_csv(const SimResult& result) {
  std::string out = "id,src,dst,bytes,start_us,fct_us\n";
  for (const FlowResult& flow : result.flows) {
    out += fmt::format("{},{},{},{},{:.3f},{}\n", flow.id, flow.spec.src, flow.spec.dst, flow.spec.bytes,
                       microseconds(flow.spec.start),
                       flow.finished() ? fmt::format("{:.3f}", microseconds(flow.finish - flow.spec.start)) : "");
  }
  return out;
}

std::string human_summary(const Scenario& scenario, const SimResult& result) {
  std::vector<double> fct = completion_times_us(result);
  const FabricCounters& c = result.fabric;
  double wall = std::max(result.wall_s, 1e-9);
  std::string out = fmt::format("{}: {}\n", scenario.name, scenario.topology.description);
  out += fmt::format("simulated {:.1f} us in {:.2f} s wall{} ({} events, {:.2f} M events/s, {:.0f} data packets/s)\n",
                     microseconds(result.sim_time), result.wall_s,
                     result.ranks > 1 ? fmt::format(" on {} ranks", result.ranks) : std::string(), result.events,
                     static_cast<double>(result.events) / wall / 1e6, static_cast<double>(c.data_packets) / wall);
  if (!result.flows.empty()) {  // a collective alone has none
    out += fmt::format("flows: {} of {} finished; FCT p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us\n", fct.size(),
                       result.flows.size(), percentile_us(fct, 50), percentile_us(fct, 99), percentile_us(fct, 100));
  }
  out += fmt::format(
      "pause frames {} ({:.1f} us paused in all), ECN marked {}, CNPs {}, drops {} (lossless violations {}), "
      "lost on links {}, lost to failed links {}, trimmed {}, retransmitted {}\n",
      c.pause_frames, microseconds(c.pause_time_total), c.ecn_marked, result.cnps, c.drops, c.lossless_violations,
      c.link_losses, c.failure_losses, c.trimmed, result.retransmitted_packets);
  if (scenario.transport.multipath.entropy_values != 0) {
    out += fmt::format(
        "multipath: {} EVs per QP, packets found lost {}, EVs retired {}, probes {}, EVs restored {}, "
        "packets placed on arrival {}\n",
        scenario.transport.multipath.entropy_values, result.paths_lost, result.paths_retired, result.paths_probes,
        result.paths_restored, result.placed_out_of_order);
  }
  if (auto shares = fairness(result)) {
    out += fmt::format("fairness while all {} flows ran ({:.0f} to {:.0f} us): Jain index {:.3f}\n",
                       shares->flow_gbps.size(), microseconds(shares->window_start), microseconds(shares->window_end),
                       shares->jain);
  }
  if (scenario.collective) {
    const std::vector<SimTime>& times = result.collective_iterations;
    SimTime total = 0;
    for (SimTime t : times) total += t;
    SimTime mean = times.empty() ? 0 : total / static_cast<SimTime>(times.size());
    const CollectiveSpec& spec = *scenario.collective;
    CollectiveBandwidth bandwidth =
        collective_bandwidth(spec.operation, spec.bytes, static_cast<std::uint32_t>(spec.hosts.size()), mean);
    out += fmt::format(
        "{} ({}{}, {} ranks): {} of {} iterations{}, mean {:.1f} us (algbw {:.2f} GB/s, busbw {:.2f} GB/s), slowest "
        "{:.1f} us\n",
        collective::to_string(spec.operation), collective::to_string(spec.algorithm),
        spec.algorithm_chosen ? " by predicted time" : "", spec.hosts.size(), times.size(),
        spec.iterations, result.collective_failed ? " (failed)" : "", microseconds(mean),
        bandwidth.algbw_gb_per_s, bandwidth.busbw_gb_per_s,
        times.empty() ? 0.0 : microseconds(*std::max_element(times.begin(), times.end())));
  }
  out += chakra_summary(scenario, result);
  if (result.deadlock) {
    std::string cycle;
    for (const std::string& link : cycle_links(*result.deadlock)) cycle += link + " ";
    out += fmt::format("PFC DEADLOCK detected at {:.1f} us (priority {}): {}waits on itself; the run stopped there\n",
                       microseconds(result.deadlock->detected_at), result.deadlock->cycle.front().priority, cycle);
  }
  return out;
}

}  // namespace uroce::sim
