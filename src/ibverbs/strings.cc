// The verbs' names for statuses, node types, port states and events, and
// the IB static-rate conversions; what programs print must read as it does
// with rdma-core.
#include <infiniband/verbs.h>

#include <array>
#include <iterator>

namespace {

template <std::size_t N>
const char* name_or(const std::array<const char*, N>& names, int value, const char* fallback) {
  return value >= 0 && static_cast<std::size_t>(value) < N ? names[static_cast<std::size_t>(value)] : fallback;
}

struct RateInfo {
  ibv_rate rate;
  int mbps;
  int multiple;  // of 2.5 Gb/s, or -1
};

constexpr std::array<RateInfo, 23> kRates{{
    {IBV_RATE_2_5_GBPS, 2500, 1},    {IBV_RATE_5_GBPS, 5000, 2},      {IBV_RATE_10_GBPS, 10000, 4},
    {IBV_RATE_20_GBPS, 20000, 8},    {IBV_RATE_30_GBPS, 30000, 12},   {IBV_RATE_40_GBPS, 40000, 16},
    {IBV_RATE_60_GBPS, 60000, 24},   {IBV_RATE_80_GBPS, 80000, 32},   {IBV_RATE_120_GBPS, 120000, 48},
    {IBV_RATE_14_GBPS, 14062, -1},   {IBV_RATE_56_GBPS, 56250, -1},   {IBV_RATE_112_GBPS, 112500, -1},
    {IBV_RATE_168_GBPS, 168750, -1}, {IBV_RATE_25_GBPS, 25781, -1},   {IBV_RATE_100_GBPS, 103125, -1},
    {IBV_RATE_200_GBPS, 206250, -1}, {IBV_RATE_300_GBPS, 309375, -1}, {IBV_RATE_28_GBPS, 28125, -1},
    {IBV_RATE_50_GBPS, 53125, -1},   {IBV_RATE_400_GBPS, 425000, -1}, {IBV_RATE_600_GBPS, 637500, -1},
    {IBV_RATE_800_GBPS, 850000, -1}, {IBV_RATE_1200_GBPS, 1275000, -1},
}};

}  // namespace

extern "C" {

const char* ibv_wc_status_str(ibv_wc_status status) {
  static constexpr std::array<const char*, 24> kNames{
      "success", "local length error", "local QP operation error", "local EE context operation error",
      "local protection error", "Work Request Flushed Error", "memory management operation error",
      "bad response error", "local access error", "remote invalid request error", "remote access error",
      "remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
      "local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
      "invalid EE context state", "fatal error", "response timeout error", "general error", "TM error",
      "TM rendezvous error"};
  return name_or(kNames, status, "unknown");
}

const char* ibv_node_type_str(ibv_node_type node_type) {
  static constexpr std::array<const char*, 8> kNames{
      "unknown", "InfiniBand channel adapter", "InfiniBand switch", "InfiniBand router", "iWARP NIC",
      "usNIC", "usNIC UDP", "unspecified"};
  return name_or(kNames, node_type + 1, "unknown");  // IBV_NODE_UNKNOWN is -1
}

const char* ibv_port_state_str(ibv_port_state port_state) {
  static constexpr std::array<const char*, 6> kNames{"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                                     "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
  return name_or(kNames, port_state, "(invalid state)");
}

const char* ibv_event_type_str(ibv_event_type event) {
  static constexpr std::array<const char*, 20> kNames{
      "CQ error", "local work queue catastrophic error", "invalid request local work queue error",
      "local access violation work queue error", "communication established", "send queue drained",
      "path migrated", "path migration request error", "local catastrophic error", "port active", "port error",
      "LID change", "P_Key change", "SM change", "SRQ catastrophic error", "SRQ limit reached",
      "last WQE reached", "client reregistration", "GID table change", "WQ fatal"};
  return name_or(kNames, event, "unknown");
}

int ibv_rate_to_mbps(ibv_rate rate) {
  for (const RateInfo& info : kRates) {
    if (info.rate == rate) return info.mbps;
  }
  return -1;
}

ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const RateInfo& info : kRates) {
    if (info.mbps == mbps) return info.rate;
  }
  return IBV_RATE_MAX;
}

int ibv_rate_to_mult(ibv_rate rate) {
  for (const RateInfo& info : kRates) {
    if (info.rate == rate) return info.multiple;
  }
  return -1;
}

ibv_rate mult_to_ibv_rate(int mult) {
  for (const RateInfo& info : kRates) {
    if (info.multiple > 0 && info.multiple == mult) return info.rate;
  }
  return IBV_RATE_MAX;
}

}  // extern "C"
