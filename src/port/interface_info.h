// Facts about a local network interface that ports need: its index, MAC
// address and MTU, and which interface holds a given address; and the
// receive buffer a port's socket was granted. Looked up in
// the calling thread's network namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "uroce/expected.h"
#include "uroce/verbs_types.h"
#include "uroce/vocabulary.h"
#include "wire/ethernet.h"

namespace uroce::port {

struct InterfaceInfo {
  std::string name;
  int index = 0;
  wire::MacAddress mac{};
  int mtu = 1500;
};

Expected<InterfaceInfo, std::string> find_interface(const std::string& name);
// The interface that holds this local address, if any.
std::optional<InterfaceInfo> interface_with_address(const Gid& gid);
// The interface's first IPv4 address, as a GID.
std::optional<Gid> first_ipv4_address(const std::string& interface);

// The MTU of the link behind a local address: its interface's, loopback's
// for 127.0.0.0/8 and ::1 (only 127.0.0.1 is listed on lo), else Ethernet's 1500.
int link_mtu_for_address(const Gid& gid);

// The largest path MTU whose packets fit a link of this MTU. Besides the
// payload a packet carries IP, UDP, BTH, at most 28 bytes of extension
// headers (AtomicETH; RETH + ImmDt), pad and ICRC.
PathMtu largest_path_mtu(std::size_t link_mtu, bool ipv4);

// The receive buffer a socket has (SO_RCVBUF, which Linux reports doubled
// for its bookkeeping: halved back here), in bytes; 0 if it cannot be read.
std::size_t granted_receive_buffer(int fd);

}  // namespace uroce::port
