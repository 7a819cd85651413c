// Reading typed, range-checked values out of a scenario file's TOML tables:
// every table is checked for unknown keys and every value for its type and
// range, and each complaint names the table and key it is about.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sim_time.h"
#include "sim/topology.h"

namespace uroce::sim {

// Thrown by the readers, turned into the loader's error at the top.
struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void only_keys(const toml::table& table, std::string_view where, std::initializer_list<std::string_view> allowed);
bool boolean(const toml::table& table, std::string_view where, std::string_view key, bool fallback);
std::string text(const toml::table& table, std::string_view where, std::string_view key, std::string fallback,
                 std::initializer_list<std::string_view> choices);
const toml::table& table_or_empty(const toml::table& root, std::string_view key);
// A host-number list under key, each below hosts; empty when the key is absent.
std::vector<std::uint32_t> host_list(const toml::table& table, std::string_view where, std::string_view key,
                                     std::uint32_t hosts);
// start_us (default 0) as simulated time.
SimTime start_time(const toml::table& table, std::string_view where);
// A duration given in microseconds under key.
SimTime microseconds_field(const toml::table& table, std::string_view where, std::string_view key, double fallback_us,
                           double high_us);

// A node named h<N> (a host) or s<N> (a switch).
NodeRef node_name(const std::string& name, std::string_view where);

std::string describe_number_error(std::string_view where, std::string_view key, double value, double low, double high);

// key's value (integer or float) within [low, high], or fallback if absent.
template <typename T>
T number(const toml::table& table, std::string_view where, std::string_view key, T fallback, T low, T high) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return fallback;
  double value;
  if (auto integer = node->value_exact<std::int64_t>()) {
    value = static_cast<double>(*integer);
  } else if (auto real = node->value_exact<double>()) {
    value = *real;
  } else {
    throw ScenarioError(std::string(where) + "." + std::string(key) + ": expected a number");
  }
  if (value < static_cast<double>(low) || value > static_cast<double>(high)) {
    throw ScenarioError(describe_number_error(where, key, value, static_cast<double>(low), static_cast<double>(high)));
  }
  return static_cast<T>(value);
}

}  // namespace uroce::sim
