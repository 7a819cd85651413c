// ARP for IPv4 over Ethernet (RFC 826): how a raw port learns the MAC address
// behind a peer's IPv4 address, and answers for its own.
#pragma once

#include <array>
#include <cstdint>

#include "common/bytes.h"
#include "wire/error.h"
#include "wire/ethernet.h"

namespace uroce::wire {

inline constexpr std::uint16_t kEthertypeArp = 0x0806;
inline constexpr std::size_t kArpLength = 28;  // Ethernet hardware, IPv4 protocol addresses
inline constexpr MacAddress kBroadcastMac = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

namespace arp_field {
inline constexpr std::size_t hardware_type = 0;  // 1: Ethernet
inline constexpr std::size_t protocol_type = 2;  // 0x0800: IPv4
inline constexpr std::size_t hardware_length = 4;
inline constexpr std::size_t protocol_length = 5;
inline constexpr std::size_t operation = 6;
inline constexpr std::size_t sender_mac = 8;
inline constexpr std::size_t sender_ip = 14;
inline constexpr std::size_t target_mac = 18;
inline constexpr std::size_t target_ip = 24;
}  // namespace arp_field

enum class ArpOperation : std::uint16_t { request = 1, reply = 2 };

struct ArpRepr {
  ArpOperation operation = ArpOperation::request;
  MacAddress sender_mac{};
  std::array<std::uint8_t, 4> sender_ip{};
  MacAddress target_mac{};  // zero in a request
  std::array<std::uint8_t, 4> target_ip{};

  // Only Ethernet/IPv4 requests and replies parse (bad_header otherwise).
  static WireResult<ArpRepr> parse(ByteSpan packet);
  void emit(MutableByteSpan out) const;  // writes kArpLength bytes
  bool operator==(const ArpRepr&) const = default;
};

}  // namespace uroce::wire
