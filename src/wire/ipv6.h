// IPv6 fixed header. RoCEv2 carries UDP directly after it; extension headers
// are not followed (such a packet is reported as not RoCEv2).
#pragma once

#include <array>
#include <cstdint>

#include "common/bytes.h"
#include "wire/error.h"
#include "wire/ipv4.h"

namespace uroce::wire {

using Ipv6Address = std::array<std::uint8_t, 16>;

inline constexpr std::size_t kIpv6HeaderLength = 40;

namespace ipv6_field {
inline constexpr std::size_t version_class_flow = 0;  // version(4) class(8) flow(20)
inline constexpr std::size_t payload_length = 4;
inline constexpr std::size_t next_header = 6;
inline constexpr std::size_t hop_limit = 7;
inline constexpr std::size_t src = 8;
inline constexpr std::size_t dst = 24;
}  // namespace ipv6_field

class Ipv6View {
 public:
  static WireResult<Ipv6View> new_checked(ByteSpan packet);

  std::uint8_t traffic_class() const { return static_cast<std::uint8_t>(load_be32(&bytes_[0]) >> 20); }
  std::uint8_t dscp() const { return traffic_class() >> 2; }
  Ecn ecn() const { return static_cast<Ecn>(traffic_class() & 0x3); }
  std::uint32_t flow_label() const { return load_be32(&bytes_[0]) & 0xFFFFF; }
  std::uint16_t payload_length() const { return load_be16(&bytes_[ipv6_field::payload_length]); }
  std::uint8_t next_header() const { return bytes_[ipv6_field::next_header]; }
  std::uint8_t hop_limit() const { return bytes_[ipv6_field::hop_limit]; }
  Ipv6Address src() const;
  Ipv6Address dst() const;

  ByteSpan header() const { return bytes_.first(kIpv6HeaderLength); }
  ByteSpan payload() const { return bytes_.subspan(kIpv6HeaderLength, payload_length()); }

 private:
  explicit Ipv6View(ByteSpan bytes) : bytes_(bytes) {}
  ByteSpan bytes_;
};

struct Ipv6Repr {
  std::uint8_t dscp = 0;
  Ecn ecn = Ecn::not_ect;
  std::uint32_t flow_label = 0;
  std::uint8_t next_header = kIpProtocolUdp;
  std::uint8_t hop_limit = 64;
  Ipv6Address src{};
  Ipv6Address dst{};
  std::uint16_t payload_length = 0;

  static Ipv6Repr parse(const Ipv6View& view);
  void emit(MutableByteSpan out) const;  // writes 40 bytes
  bool operator==(const Ipv6Repr&) const = default;
};

}  // namespace uroce::wire
