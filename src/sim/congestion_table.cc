// The [dcqcn] table's keys, checked one by one.
#include "sim/congestion_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "sim/toml_fields.h"

namespace uroce::sim {

namespace {

constexpr const char* kWhere = "dcqcn";
constexpr double kMaxMbps = 1.6e6;
constexpr double kMaxUs = 1e7;

// Keys each variant owns; naming one under the other variant is an error.
constexpr std::array<std::string_view, 15> kConnectxKeys = {
    "rpg_time_reset", "rpg_byte_reset", "rpg_threshold", "rpg_ai_rate", "rpg_hai_rate", "rpg_gd",
    "rpg_min_dec_fac", "rpg_min_rate", "rate_to_set_on_first_cnp", "dce_tcp_g", "dce_tcp_rtt",
    "initial_alpha_value", "rate_reduce_monitor_period", "clamp_tgt_rate", "clamp_tgt_rate_after_time_inc"};
constexpr std::array<std::string_view, 9> kPaperKeys = {
    "g", "initial_alpha", "rai_mbps", "rhai_mbps", "min_rate_mbps", "alpha_timer_us", "rate_timer_us",
    "byte_counter_kb", "fast_recovery_steps"};

TimeNs microseconds(const toml::table& table, std::string_view key, TimeNs fallback, double low_us) {
  return static_cast<TimeNs>(
      number<double>(table, kWhere, key, static_cast<double>(fallback) / 1000, low_us, kMaxUs) * 1000);
}

double megabits(const toml::table& table, std::string_view key, double fallback_bps, double low_mbps) {
  return number<double>(table, kWhere, key, fallback_bps / 1e6, low_mbps, kMaxMbps) * 1e6;
}

template <std::size_t N>
void refuse_keys_of_other_variant(const toml::table& table, const std::array<std::string_view, N>& keys,
                                  std::string_view variant) {
  for (std::string_view key : keys) {
    if (table.contains(key)) {
      throw ScenarioError(fmt::format("dcqcn.{}: belongs to variant = \"{}\"", key, variant));
    }
  }
}

void connectx_from(const toml::table& table, ConnectxDcqcnParams& p) {
  p.rpg_time_reset_ns = microseconds(table, "rpg_time_reset", p.rpg_time_reset_ns, 1);
  p.rpg_byte_reset = number<std::uint64_t>(table, kWhere, "rpg_byte_reset", p.rpg_byte_reset, 0, 1ull << 32);
  p.rpg_threshold = number<std::uint32_t>(table, kWhere, "rpg_threshold", p.rpg_threshold, 1, 31);
  p.rpg_ai_rate_bps = megabits(table, "rpg_ai_rate", p.rpg_ai_rate_bps, 0);
  p.rpg_hai_rate_bps = megabits(table, "rpg_hai_rate", p.rpg_hai_rate_bps, 0);
  p.rpg_gd = number<std::uint32_t>(table, kWhere, "rpg_gd", p.rpg_gd, 10, 20);
  p.rpg_min_dec_fac = number<std::uint32_t>(table, kWhere, "rpg_min_dec_fac", p.rpg_min_dec_fac, 0, 100);
  p.rpg_min_rate_bps = megabits(table, "rpg_min_rate", p.rpg_min_rate_bps, 1);
  p.rate_to_set_on_first_cnp_bps = megabits(table, "rate_to_set_on_first_cnp", p.rate_to_set_on_first_cnp_bps, 0);
  p.dce_tcp_g = number<std::uint32_t>(table, kWhere, "dce_tcp_g", p.dce_tcp_g, 0, 1023);
  p.dce_tcp_rtt_ns = microseconds(table, "dce_tcp_rtt", p.dce_tcp_rtt_ns, 1);
  p.initial_alpha_value = number<std::uint32_t>(table, kWhere, "initial_alpha_value", p.initial_alpha_value, 1, 1023);
  p.rate_reduce_monitor_period_ns = microseconds(table, "rate_reduce_monitor_period", p.rate_reduce_monitor_period_ns, 1);
  p.clamp_tgt_rate = boolean(table, kWhere, "clamp_tgt_rate", p.clamp_tgt_rate);
  p.clamp_tgt_rate_after_time_inc =
      boolean(table, kWhere, "clamp_tgt_rate_after_time_inc", p.clamp_tgt_rate_after_time_inc);
}

void paper_from(const toml::table& table, PaperDcqcnParams& p) {
  p.g = number<double>(table, kWhere, "g", p.g, 0, 1);
  p.initial_alpha = number<double>(table, kWhere, "initial_alpha", p.initial_alpha, 0, 1);
  p.additive_increase_bps = megabits(table, "rai_mbps", p.additive_increase_bps, 0);
  p.hyper_increase_bps = megabits(table, "rhai_mbps", p.hyper_increase_bps, 0);
  p.min_rate_bps = megabits(table, "min_rate_mbps", p.min_rate_bps, 0.001);
  p.alpha_timer_ns = microseconds(table, "alpha_timer_us", p.alpha_timer_ns, 0.001);
  p.rate_timer_ns = microseconds(table, "rate_timer_us", p.rate_timer_ns, 0.001);
  if (table.contains("byte_counter_kb")) {  // the default, 10^6 x 10 bytes, is not a whole KiB
    p.byte_counter = number<std::uint64_t>(table, kWhere, "byte_counter_kb", 0, 1, 1 << 30) * 1024;
  }
  p.fast_recovery_steps = number<std::uint32_t>(table, kWhere, "fast_recovery_steps", p.fast_recovery_steps, 0, 100);
}

}  // namespace

void congestion_from(const toml::table& table, CongestionConfig& congestion) {
  constexpr std::array<std::string_view, 5> common = {"enabled", "variant", "notification_point",
                                                      "min_time_between_cnps", "cnp_dscp"};
  auto listed = [](const auto& keys, std::string_view name) {
    return std::find(keys.begin(), keys.end(), name) != keys.end();
  };
  for (const auto& [key, value] : table) {
    std::string_view name = key.str();
    if (!listed(common, name) && !listed(kConnectxKeys, name) && !listed(kPaperKeys, name)) {
      // Scenario files written before the ConnectX variant used this name.
      std::string_view hint = name == "cnp_interval_us" ? " (now min_time_between_cnps, in us)" : "";
      throw ScenarioError(fmt::format("dcqcn: unknown key '{}'{}", name, hint));
    }
  }
  congestion.reaction_point = boolean(table, kWhere, "enabled", false);
  congestion.notification_point = boolean(table, kWhere, "notification_point", congestion.notification_point);
  bool paper = text(table, kWhere, "variant", "connectx", {"connectx", "paper"}) == "paper";
  DcqcnParams& dcqcn = congestion.dcqcn;
  dcqcn.variant = paper ? DcqcnVariant::paper : DcqcnVariant::connectx;
  // The paper's notification point sends at most one CNP per 50 us; ConnectX's every 4 us.
  TimeNs np_default = paper ? 50'000 : congestion.min_time_between_cnps_ns;
  congestion.min_time_between_cnps_ns = microseconds(table, "min_time_between_cnps", np_default, 0);
  congestion.cnp_dscp = number<std::uint8_t>(table, kWhere, "cnp_dscp", congestion.cnp_dscp, 0, 63);
  if (paper) {
    refuse_keys_of_other_variant(table, kConnectxKeys, "connectx");
    paper_from(table, dcqcn.paper);
  } else {
    refuse_keys_of_other_variant(table, kPaperKeys, "paper");
    connectx_from(table, dcqcn.connectx);
  }
}

}  // namespace uroce::sim
