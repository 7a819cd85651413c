// [[failures]] and [routing]:
//
//   [[failures]]
//   link = "s0-s4"      # the nodes at its two ends: h<N> hosts, s<N> switches
//   at_us = 100
//   recover_us = 600    # optional: the link stays down
//
//   [[failures]]
//   switch = "s5"       # the switch and all its links
//   at_us = 200
//
//   [routing]
//   reconverge_us = 1000
#include "sim/failure_table.h"

#include <fmt/format.h>

#include "sim/toml_fields.h"

namespace uroce::sim {

namespace {

constexpr double kLatestUs = 1e9;

Failure failure_from(const toml::table& table, std::string_view where) {
  only_keys(table, where, {"link", "switch", "at_us", "recover_us"});
  Failure failure;
  auto link = table.get_as<std::string>("link");
  auto whole = table.get_as<std::string>("switch");
  if ((link == nullptr) == (whole == nullptr)) {
    throw ScenarioError(fmt::format("{}: give either link = \"s0-s4\" or switch = \"s4\"", where));
  }
  if (whole != nullptr) {
    failure.a = node_name(whole->get(), where);
    if (failure.a.is_host) throw ScenarioError(fmt::format("{}.switch: '{}' is a host", where, whole->get()));
  } else {
    const std::string& name = link->get();
    std::size_t dash = name.find('-');
    if (dash == std::string::npos) {
      throw ScenarioError(fmt::format("{}.link: expected the two ends of a link, such as \"s0-s4\"", where));
    }
    failure.a = node_name(name.substr(0, dash), where);
    failure.b = node_name(name.substr(dash + 1), where);
    if (failure.a.is_host && failure.b->is_host) {
      throw ScenarioError(fmt::format("{}.link: two hosts are never linked directly", where));
    }
  }
  if (!table.contains("at_us")) throw ScenarioError(fmt::format("{}.at_us: missing (when it fails)", where));
  failure.at = microseconds_field(table, where, "at_us", 0, kLatestUs);
  if (table.contains("recover_us")) {
    failure.recover = microseconds_field(table, where, "recover_us", 0, kLatestUs);
    if (failure.recover <= failure.at) {
      throw ScenarioError(fmt::format("{}.recover_us: it must recover after it fails", where));
    }
  }
  return failure;
}

}  // namespace

void failures_from(const toml::table& root, Scenario& scenario) {
  const toml::table& routing = table_or_empty(root, "routing");
  only_keys(routing, "routing", {"reconverge_us"});
  scenario.reconverge = microseconds_field(routing, "routing", "reconverge_us",
                                           static_cast<double>(scenario.reconverge) / kPicosecondsPerUs, kLatestUs);
  const toml::node* failures = root.get("failures");
  if (failures == nullptr) return;
  const toml::array* list = failures->as_array();
  if (list == nullptr) throw ScenarioError("[[failures]] must be an array of tables");
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string where = fmt::format("failures[{}]", i);
    const toml::table* table = (*list)[i].as_table();
    if (table == nullptr) throw ScenarioError(where + ": expected a table");
    scenario.failures.push_back(failure_from(*table, where));
  }
}

}  // namespace uroce::sim
