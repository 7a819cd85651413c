// The device addresses `uroce run` is given, checked before the program
// starts: each must be an IP address, and on the UDP port one this host
// holds, since the device binds UDP 4791 there.
#pragma once

#include <optional>
#include <string>

namespace uroce::tools {

// What is wrong with LIST (comma-separated addresses), or nothing. On the
// raw Ethernet port (RAW_PORT) an address need not be the host's: the port
// answers ARP for it itself; it must be IPv4 there.
std::optional<std::string> device_address_problem(const std::string& list, bool raw_port);

}  // namespace uroce::tools
