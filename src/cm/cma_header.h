// What librdmacm adds to the CM: service IDs made from a port space and a
// port number, and the 36-byte header at the start of a REQ's (or
// SIDR_REQ's) private data that names the IP addresses and the source port
// (Linux's rdma_cm puts it there; tests/vectors/kernel-cm.pcap shows one).
// An IPv4 address sits in the last 4 of its 16 bytes, after 12 zero bytes
// (not the ::ffff: mapping of a GID).
#pragma once

#include <cstdint>
#include <optional>

#include "cm/cm_messages.h"
#include "common/bytes.h"

namespace uroce::cm {

enum class PortSpace : std::uint16_t { ipoib = 0x0002, tcp = 0x0106, udp = 0x0111, ib = 0x013F };

// 0x0000000001 | port space | port, as rdma_cm writes it.
std::uint64_t service_id(PortSpace space, std::uint16_t port);

struct ServiceAddress {
  PortSpace space;
  std::uint16_t port;
  bool operator==(const ServiceAddress&) const = default;
};
// nullopt: not a service ID from rdma_cm's IP port spaces.
std::optional<ServiceAddress> parse_service_id(std::uint64_t id);

struct CmaHeader {
  static constexpr std::size_t kLength = 36;
  std::uint8_t ip_version = 4;  // 4 or 6
  std::uint16_t source_port = 0;
  Gid source{};       // IPv6, or IPv4 in the last 4 bytes
  Gid destination{};

  // nullopt: too short, an unknown header version or IP version.
  static std::optional<CmaHeader> parse(ByteSpan private_data);
  // out: at least kLength bytes.
  void emit(MutableByteSpan out) const;
  bool operator==(const CmaHeader&) const = default;
};

}  // namespace uroce::cm
