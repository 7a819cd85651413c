// configured_devices(), configured_progress() and configured_local_path():
// the UROCE_* variables.
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

Expected<bool, std::string> configured_local_path() {
  const char* value = std::getenv("UROCE_WIRE");
  std::string wire = value != nullptr ? value : "";
  if (wire.empty() || wire == "0") return true;
  if (wire == "1") return false;
  return unexpected("UROCE_WIRE='" + wire + "' is not 0 or 1");
}

}  // namespace uroce::ibverbs
