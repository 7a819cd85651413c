// configured_devices(): UROCE_ADDRESS and UROCE_INTERFACE.
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

}  // namespace uroce::ibverbs
