// configured_devices(), configured_progress(), configured_local_path() and
// configured_shared_regions():
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

Expected<bool, std::string> configured_shared_regions() {
  const char* value = std::getenv("UROCE_SHARED_MR");
  std::string shared = value != nullptr ? value : "";
  if (shared.empty() || shared == "0") return false;
  if (shared == "1") return true;
  return unexpected("UROCE_SHARED_MR='" + shared + "' is not 0 or 1");
}

}  // namespace uroce::ibverbs
