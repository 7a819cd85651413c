// [chakra] (one job) or [[chakra]] (several, each with a name): traces =
// "DIR/PREFIX" names PREFIX.0.et, PREFIX.1.et... (every rank's file,
// counted until the next is missing); ranks = [hosts] places rank r on
// hosts[r] (default: host r); groups maps each process group's pg_name to
// its ranks (groups a PyTorch trace declares need no entry; an entry
// overrides the traces'); algorithm names the collectives' algorithm (default: each
// operation's own; "auto": each collective's by predicted time,
// sim/collective_choice.h, the default on GPU servers); slices cuts each
// transfer into that many pipelined slices (default 1); channels spreads
// the slices over that many QPs per pair of ranks (default 1, on GPU
// servers one per GPU); control_dependencies holds nodes back on their
// control dependencies too (default: data dependencies only); start_us
// delays the replay.
#include "sim/chakra_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "sim/toml_fields.h"

namespace uroce::sim {

namespace {

constexpr std::uint32_t kMaxRanks = 1u << 16;

std::vector<std::uint32_t> rank_list(const toml::array& list, const std::string& where, std::uint32_t ranks) {
  std::vector<std::uint32_t> out;
  std::vector<bool> seen(ranks, false);
  for (const toml::node& entry : list) {
    auto rank = entry.value_exact<std::int64_t>();
    if (!rank || *rank < 0 || *rank >= ranks) {
      throw ScenarioError(fmt::format("{}: each entry must be a rank below {}", where, ranks));
    }
    if (seen[*rank]) throw ScenarioError(fmt::format("{}: rank {} is listed twice", where, *rank));
    seen[*rank] = true;
    out.push_back(static_cast<std::uint32_t>(*rank));
  }
  if (out.empty()) throw ScenarioError(where + ": a group needs at least one rank");
  return out;
}

// The process groups the traces declare (a PyTorch trace's, chakra/process_groups.h),
// for those [chakra.groups] does not name: every file that declares a group
// must declare it alike, and an empty list of ranks is every rank.
void add_declared_groups(ChakraSpec& spec, const std::set<std::string>& named) {
  auto ranks = static_cast<std::uint32_t>(spec.ranks.size());
  std::map<std::string, std::uint32_t> declared_by;  // group -> the first rank whose trace declares it
  for (std::uint32_t rank = 0; rank < ranks; ++rank) {
    for (const chakra::ProcessGroup& group : spec.ranks[rank].process_groups) {
      if (named.count(group.name)) continue;
      std::string file = fmt::format("{}.{}.et", spec.traces, rank);
      std::vector<std::uint32_t> members = group.ranks;
      if (members.empty()) {
        for (std::uint32_t r = 0; r < ranks; ++r) members.push_back(r);
      }
      for (std::uint32_t member : members) {
        if (member >= ranks) {
          throw ScenarioError(fmt::format("{}: process group \"{}\" has rank {}, but there are {} trace files", file,
                                          group.name, member, ranks));
        }
      }
      auto [first, inserted] = declared_by.emplace(group.name, rank);
      if (inserted) {
        spec.groups[group.name] = std::move(members);
      } else if (spec.groups[group.name] != members) {
        throw ScenarioError(fmt::format("{}: process group \"{}\" is ranks [{}] here, [{}] in {}.{}.et", file,
                                        group.name, fmt::join(members, ", "), fmt::join(spec.groups[group.name], ", "),
                                        spec.traces, first->second));
      }
    }
  }
}

}  // namespace

void chakra_from(const toml::table& table, const std::string& where, Scenario& scenario,
                 const std::filesystem::path& base_dir) {
  only_keys(table, where,
            {"name", "traces", "ranks", "groups", "algorithm", "slices", "channels", "control_dependencies", "start_us"});
  ChakraSpec spec;
  spec.name = scenario.chakra_listed ? fmt::format("job{}", scenario.chakra.size()) : "chakra";
  if (auto name = table.get_as<std::string>("name")) spec.name = name->get();
  for (const ChakraSpec& other : scenario.chakra) {
    if (other.name == spec.name) throw ScenarioError(where + ".name: a second job named \"" + spec.name + "\"");
  }
  auto traces = table.get_as<std::string>("traces");
  if (traces == nullptr || traces->get().empty()) {
    throw ScenarioError(where + ".traces: the traces' path and prefix, such as \"traces/step\" for traces/step.0.et");
  }
  spec.traces = traces->get();
  std::filesystem::path prefix = base_dir / spec.traces;
  for (std::uint32_t rank = 0; rank < kMaxRanks; ++rank) {
    std::filesystem::path file = prefix.string() + "." + std::to_string(rank) + ".et";
    if (!std::filesystem::exists(file)) break;
    auto trace = chakra::read_trace(file.string());
    if (!trace) throw ScenarioError(where + ": " + trace.error());
    spec.ranks.push_back(std::move(*trace));
  }
  if (spec.ranks.empty()) throw ScenarioError(where + ".traces: no file " + prefix.string() + ".0.et");
  spec.traces = prefix.string();
  auto ranks = static_cast<std::uint32_t>(spec.ranks.size());
  spec.hosts = host_list(table, where, "ranks", scenario.topology.hosts);
  if (spec.hosts.empty()) {
    if (ranks > scenario.topology.hosts) {
      throw ScenarioError(fmt::format("{}: {} ranks, more than the topology's {} hosts", where, ranks,
                                      scenario.topology.hosts));
    }
    for (std::uint32_t r = 0; r < ranks; ++r) spec.hosts.push_back(r);
  } else if (spec.hosts.size() != ranks) {
    throw ScenarioError(fmt::format("{}.ranks: {} hosts for {} ranks (trace files)", where, spec.hosts.size(), ranks));
  }
  std::vector<bool> used(scenario.topology.hosts, false);
  for (std::uint32_t host : spec.hosts) {
    if (used[host]) throw ScenarioError(fmt::format("{}.ranks: host {} runs two ranks", where, host));
    used[host] = true;
  }
  std::set<std::string> named;
  if (const toml::node* groups = table.get("groups")) {
    if (!groups->is_table()) throw ScenarioError(where + ".groups: a table of pg_name = [ranks]");
    for (const auto& [name, list] : *groups->as_table()) {
      std::string at = where + ".groups." + std::string(name.str());
      if (!list.is_array()) throw ScenarioError(at + ": expected a list of ranks");
      spec.groups[std::string(name.str())] = rank_list(*list.as_array(), at, ranks);
      named.insert(std::string(name.str()));
    }
  }
  add_declared_groups(spec, named);
  // On GPU servers NCCL's defaults: its choice of algorithm, a channel per GPU (per rail).
  std::uint32_t gpus = scenario.topology.servers.gpus;
  std::string algorithm = text(table, where, "algorithm", gpus != 0 ? "auto" : "",
                               {"auto", "ring", "halving_doubling", "double_binary_tree", "direct", "pairwise"});
  spec.choose_algorithm = algorithm == "auto";
  if (!algorithm.empty() && !spec.choose_algorithm) spec.algorithm = *collective::algorithm_from(algorithm);
  spec.slices = number<std::uint32_t>(table, where, "slices", 1, 1, 64);
  spec.channels = number<std::uint32_t>(table, where, "channels", std::max(gpus, 1u), 1, 32);
  spec.control_dependencies = boolean(table, where, "control_dependencies", false);
  spec.start = start_time(table, where);
  scenario.chakra.push_back(std::move(spec));
}

}  // namespace uroce::sim
