// What the engine says about each IP datagram it builds
// (Engine::poll_transmit): everything the layers that carry it need (the
// device's transmit queue, the ports, the simulator's hosts), so that none
// of them reads the datagram's headers again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "uroce/vocabulary.h"

namespace uroce {

enum class TransmitKind : std::uint8_t {
  data,         // a request, a READ response or an atomic's acknowledgement
  acknowledge,  // a bare RC ACKNOWLEDGE (an ACK or a NAK): nothing waits on its bytes
  cnp,          // a congestion notification packet
};

struct Transmit {
  std::size_t length = 0;            // the datagram's bytes; 0: nothing was built
  std::size_t udp_payload_offset = 0;  // where the BTH starts: the IP and UDP headers' length
  Gid destination{};                 // the IP destination (IPv4 mapped as ::ffff:a.b.c.d)
  std::uint16_t source_port = 0;     // UDP: the flow's entropy, which ECMP hashes
  std::uint16_t destination_port = 0;
  std::uint8_t traffic_class = 0;    // DSCP (6 bits) and ECN (2 bits), as in the IP header
  bool ipv4 = true;
  TransmitKind kind = TransmitKind::data;

  explicit operator bool() const { return length != 0; }
  bool operator==(const Transmit&) const = default;
};

// A built datagram on its way down: its bytes (the sender's, writable: a
// port that seals ICRCs writes them) and their description.
struct DescribedDatagram {
  std::span<std::uint8_t> bytes;
  Transmit transmit;
};

}  // namespace uroce
