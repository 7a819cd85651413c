// IPv4 header. RoCEv2 sends with DF set and never fragments; options are
// skipped on parse (they still count in the ICRC) and never emitted.
#pragma once

#include <array>
#include <cstdint>

#include "common/bytes.h"
#include "wire/error.h"

namespace uroce::wire {

using Ipv4Address = std::array<std::uint8_t, 4>;

inline constexpr std::size_t kIpv4HeaderLength = 20;  // without options
inline constexpr std::uint8_t kIpProtocolUdp = 17;

namespace ipv4_field {
inline constexpr std::size_t version_ihl = 0;
inline constexpr std::size_t tos = 1;  // DSCP(6) ECN(2)
inline constexpr std::size_t total_length = 2;
inline constexpr std::size_t identification = 4;
inline constexpr std::size_t flags_fragment = 6;  // reserved(1) DF(1) MF(1) offset(13)
inline constexpr std::size_t ttl = 8;
inline constexpr std::size_t protocol = 9;
inline constexpr std::size_t checksum = 10;
inline constexpr std::size_t src = 12;
inline constexpr std::size_t dst = 16;
}  // namespace ipv4_field

// The two ECN bits of IPv4 TOS / IPv6 traffic class (RFC 3168).
enum class Ecn : std::uint8_t { not_ect = 0, ect1 = 1, ect0 = 2, ce = 3 };

class Ipv4View {
 public:
  // Checks version, IHL and total length against the bytes; trailing bytes
  // beyond total length (Ethernet padding) are excluded from payload().
  static WireResult<Ipv4View> new_checked(ByteSpan packet);

  std::size_t header_length() const { return std::size_t{bytes_[ipv4_field::version_ihl] & 0x0Fu} * 4; }
  std::uint8_t dscp() const { return bytes_[ipv4_field::tos] >> 2; }
  Ecn ecn() const { return static_cast<Ecn>(bytes_[ipv4_field::tos] & 0x3); }
  std::uint16_t total_length() const { return load_be16(&bytes_[ipv4_field::total_length]); }
  std::uint16_t identification() const { return load_be16(&bytes_[ipv4_field::identification]); }
  bool dont_fragment() const { return (bytes_[ipv4_field::flags_fragment] & 0x40) != 0; }
  bool more_fragments() const { return (bytes_[ipv4_field::flags_fragment] & 0x20) != 0; }
  std::uint16_t fragment_offset() const { return load_be16(&bytes_[ipv4_field::flags_fragment]) & 0x1FFF; }
  std::uint8_t ttl() const { return bytes_[ipv4_field::ttl]; }
  std::uint8_t protocol() const { return bytes_[ipv4_field::protocol]; }
  std::uint16_t checksum() const { return load_be16(&bytes_[ipv4_field::checksum]); }
  bool checksum_ok() const;
  Ipv4Address src() const;
  Ipv4Address dst() const;

  ByteSpan header() const { return bytes_.first(header_length()); }
  ByteSpan payload() const { return bytes_.subspan(header_length(), total_length() - header_length()); }

 private:
  explicit Ipv4View(ByteSpan bytes) : bytes_(bytes) {}
  ByteSpan bytes_;
};

struct Ipv4Repr {
  std::uint8_t dscp = 0;
  Ecn ecn = Ecn::not_ect;
  std::uint16_t identification = 0;
  bool dont_fragment = true;
  std::uint8_t ttl = 64;
  std::uint8_t protocol = kIpProtocolUdp;
  Ipv4Address src{};
  Ipv4Address dst{};
  std::uint16_t payload_length = 0;

  // Rejects fragments: a RoCEv2 receiver cannot use them.
  static WireResult<Ipv4Repr> parse(const Ipv4View& view);
  // Writes a 20-byte header with a valid checksum.
  void emit(MutableByteSpan out) const;
  bool operator==(const Ipv4Repr&) const = default;
};

// The Internet checksum (RFC 1071) of an IPv4 header whose checksum field is
// taken as zero.
std::uint16_t ipv4_header_checksum(ByteSpan header);

}  // namespace uroce::wire
