// Losing chosen request packets on a TestNetwork link.
#include "tests/support/lost_packets.h"

#include <map>

namespace uroce::testing {

std::int64_t request_psn(std::span<const std::uint8_t> datagram) {
  if (datagram.size() < 40 || datagram[15] != 1) return -1;
  const std::uint8_t* bth = datagram.data() + 28;
  std::uint8_t opcode = bth[0];
  bool request = opcode <= 0x0C || opcode == 0x13 || opcode == 0x14 || (opcode >= 0x15 && opcode <= 0x16);
  if (!request) return -1;
  return (std::int64_t{bth[9]} << 16) | (bth[10] << 8) | bth[11];
}

ChannelFaults lose_request_psns(std::vector<std::uint32_t> psns, int times) {
  ChannelFaults faults;
  faults.drop = 1.0;
  faults.applies_to = [psns = std::move(psns), times, lost = std::map<std::uint32_t, int>{}](auto datagram) mutable {
    std::int64_t psn = request_psn(datagram);
    if (psn < 0) return false;
    for (std::uint32_t p : psns) {
      if (p == psn && lost[p] < times) {
        ++lost[p];
        return true;
      }
    }
    return false;
  };
  return faults;
}

}  // namespace uroce::testing
