// configured_devices(), configured_progress(), configured_local_path(),
// configured_shared_regions(), configured_gso() and configured_loss_probe(): the UROCE_*
// variables.
#include "ibverbs/configuration.h"

#include <cstdlib>
#include <sstream>

namespace uroce::ibverbs {

std::vector<DeviceSpec> configured_devices() {
  const char* addresses = std::getenv("UROCE_ADDRESS");
  const char* interface = std::getenv("UROCE_INTERFACE");
  std::vector<DeviceSpec> specs;
  std::istringstream list(addresses != nullptr && *addresses != '\0' ? addresses : "127.0.0.1");
  for (std::string address; std::getline(list, address, ',');) {
    if (address.empty()) continue;
    specs.push_back(DeviceSpec{"uroce" + std::to_string(specs.size()), address, interface ? interface : ""});
  }
  return specs;
}

Expected<ProgressChoice, std::string> configured_progress() {
  const char* value = std::getenv("UROCE_PROGRESS");
  std::string mode = value != nullptr ? value : "";
  if (mode.empty() || mode == "adaptive") return ProgressChoice{true, ProgressMode::adaptive};
  if (mode == "thread") return ProgressChoice{true, ProgressMode::thread};
  if (mode == "inline") return ProgressChoice{false, ProgressMode::thread};
  return unexpected("UROCE_PROGRESS='" + mode + "' is not one of adaptive, thread, inline");
}

namespace {

// A variable that is 0 or 1 (unset or empty: unset); another value is an error naming it.
Expected<bool, std::string> zero_or_one(const char* name, bool unset = false) {
  const char* value = std::getenv(name);
  std::string text = value != nullptr ? value : "";
  if (text.empty()) return unset;
  if (text == "0") return false;
  if (text == "1") return true;
  return unexpected(std::string(name) + "='" + text + "' is not 0 or 1");
}

}  // namespace

Expected<bool, std::string> configured_local_path() {
  auto wire = zero_or_one("UROCE_WIRE");
  if (!wire) return unexpected(wire.error());
  return !*wire;
}

Expected<bool, std::string> configured_shared_regions() { return zero_or_one("UROCE_SHARED_MR"); }

Expected<bool, std::string> configured_gso() { return zero_or_one("UROCE_GSO", true); }

Expected<bool, std::string> configured_peer_reads() { return zero_or_one("UROCE_PEER_READS", true); }

Expected<TimeNs, std::string> configured_loss_probe() {
  // 5 ms: under bulk load on a small host ACKs can lag 1 to 5 ms behind a
  // deep receive queue, and probes at 1 ms then cost bandwidth (docs/benchmarks-log.md).
  constexpr TimeNs kDefaultUs = 5000, kLongestUs = 10'000'000;
  const char* value = std::getenv("UROCE_LOSS_PROBE_US");
  std::string text = value != nullptr ? value : "";
  if (text.empty()) return kDefaultUs * 1000;
  bool digits = text.size() <= 8 && text.find_first_not_of("0123456789") == std::string::npos;
  TimeNs microseconds = digits ? std::stoll(text) : -1;
  if (microseconds < 0 || microseconds > kLongestUs) {
    return unexpected("UROCE_LOSS_PROBE_US='" + text + "' is not a whole number of microseconds up to 10000000");
  }
  return microseconds * 1000;
}

}  // namespace uroce::ibverbs
