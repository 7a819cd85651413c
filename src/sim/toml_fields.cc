// The typed readers of scenario files' TOML values.
#include "sim/toml_fields.h"

#include <fmt/format.h>

#include <algorithm>

namespace uroce::sim {

void only_keys(const toml::table& table, std::string_view where, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : table) {
    if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
      throw ScenarioError(fmt::format("{}: unknown key '{}'", where, key.str()));
    }
  }
}

std::string describe_number_error(std::string_view where, std::string_view key, double value, double low, double high) {
  return fmt::format("{}.{}: {} is outside [{}, {}]", where, key, value, low, high);
}

bool boolean(const toml::table& table, std::string_view where, std::string_view key, bool fallback) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return fallback;
  auto value = node->value_exact<bool>();
  if (!value) throw ScenarioError(fmt::format("{}.{}: expected true or false", where, key));
  return *value;
}

std::string text(const toml::table& table, std::string_view where, std::string_view key, std::string fallback,
                 std::initializer_list<std::string_view> choices) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return fallback;
  auto value = node->value_exact<std::string>();
  if (!value) throw ScenarioError(fmt::format("{}.{}: expected a string", where, key));
  if (std::find(choices.begin(), choices.end(), *value) == choices.end()) {
    std::string list;
    for (std::string_view choice : choices) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", choice);
    throw ScenarioError(fmt::format("{}.{}: '{}' is not one of {}", where, key, *value, list));
  }
  return *value;
}

const toml::table& table_or_empty(const toml::table& root, std::string_view key) {
  static const toml::table empty;
  const toml::node* node = root.get(key);
  if (node == nullptr) return empty;
  if (!node->is_table()) throw ScenarioError(fmt::format("[{}] must be a table", key));
  return *node->as_table();
}

std::vector<std::uint32_t> host_list(const toml::table& table, std::string_view where, std::string_view key,
                                     std::uint32_t hosts) {
  std::vector<std::uint32_t> list;
  const toml::node* node = table.get(key);
  if (node == nullptr) return list;
  const toml::array* array = node->as_array();
  if (array == nullptr) throw ScenarioError(fmt::format("{}.{}: expected a list of host numbers", where, key));
  for (const toml::node& entry : *array) {
    auto host = entry.value_exact<std::int64_t>();
    if (!host || *host < 0 || *host >= hosts) {
      throw ScenarioError(fmt::format("{}.{}: hosts are numbered 0 to {}", where, key, hosts - 1));
    }
    list.push_back(static_cast<std::uint32_t>(*host));
  }
  return list;
}

SimTime start_time(const toml::table& table, std::string_view where) {
  return microseconds_field(table, where, "start_us", 0, 1e9);
}

SimTime microseconds_field(const toml::table& table, std::string_view where, std::string_view key, double fallback_us,
                           double high_us) {
  return static_cast<SimTime>(number<double>(table, where, key, fallback_us, 0, high_us) *
                              static_cast<double>(kPicosecondsPerUs));
}

NodeRef node_name(const std::string& name, std::string_view where) {
  if (name.size() >= 2 && (name[0] == 'h' || name[0] == 's') &&
      std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; }) && name.size() < 10) {
    return NodeRef{name[0] == 'h', static_cast<std::uint32_t>(std::stoul(name.substr(1)))};
  }
  throw ScenarioError(fmt::format("{}: '{}' is not a node name (h<N> for a host, s<N> for a switch)", where, name));
}


}  // namespace uroce::sim
