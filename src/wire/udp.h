// UDP header. RoCEv2 uses destination port 4791 and a zero checksum.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "wire/error.h"

namespace uroce::wire {

inline constexpr std::size_t kUdpHeaderLength = 8;
inline constexpr std::uint16_t kRoceV2Port = 4791;
// RoCEv2 source ports carry ECMP entropy and stay in this range.
inline constexpr std::uint16_t kRoceSourcePortMin = 0xC000;

namespace udp_field {
inline constexpr std::size_t src_port = 0;
inline constexpr std::size_t dst_port = 2;
inline constexpr std::size_t length = 4;
inline constexpr std::size_t checksum = 6;
}  // namespace udp_field

class UdpView {
 public:
  // Checks the length field against the bytes; payload() stops at it.
  static WireResult<UdpView> new_checked(ByteSpan datagram);

  std::uint16_t src_port() const { return load_be16(&bytes_[udp_field::src_port]); }
  std::uint16_t dst_port() const { return load_be16(&bytes_[udp_field::dst_port]); }
  std::uint16_t length() const { return load_be16(&bytes_[udp_field::length]); }
  std::uint16_t checksum() const { return load_be16(&bytes_[udp_field::checksum]); }
  ByteSpan header() const { return bytes_.first(kUdpHeaderLength); }
  ByteSpan payload() const { return bytes_.subspan(kUdpHeaderLength, length() - kUdpHeaderLength); }

 private:
  explicit UdpView(ByteSpan bytes) : bytes_(bytes) {}
  ByteSpan bytes_;
};

struct UdpRepr {
  std::uint16_t src_port = kRoceSourcePortMin;
  std::uint16_t dst_port = kRoceV2Port;
  std::uint16_t checksum = 0;
  std::uint16_t payload_length = 0;

  static UdpRepr parse(const UdpView& view);
  void emit(MutableByteSpan out) const;  // writes 8 bytes
  bool operator==(const UdpRepr&) const = default;
};

// The UDP source port for a QP: 0xC000 plus a 14-bit hash of the QPN, so that
// one QP stays on one ECMP path while different QPs spread.
std::uint16_t roce_source_port(std::uint32_t qpn);

}  // namespace uroce::wire
