// Ethernet II header with an optional 802.1Q VLAN tag (which carries the PCP
// that PFC priorities use).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "wire/error.h"

namespace uroce::wire {

using MacAddress = std::array<std::uint8_t, 6>;

inline constexpr std::size_t kEthernetHeaderLength = 14;
inline constexpr std::size_t kVlanTagLength = 4;
inline constexpr std::uint16_t kEthertypeIpv4 = 0x0800;
inline constexpr std::uint16_t kEthertypeIpv6 = 0x86DD;
inline constexpr std::uint16_t kEthertypeVlan = 0x8100;

namespace ethernet_field {
inline constexpr std::size_t dst = 0;
inline constexpr std::size_t src = 6;
inline constexpr std::size_t ethertype = 12;
inline constexpr std::size_t vlan_tci = 14;        // when ethertype is 0x8100
inline constexpr std::size_t inner_ethertype = 16;  // when ethertype is 0x8100
}  // namespace ethernet_field

struct VlanTag {
  std::uint8_t priority = 0;  // PCP, 3 bits
  bool drop_eligible = false;
  std::uint16_t vlan_id = 0;  // 12 bits
  bool operator==(const VlanTag&) const = default;
};

class EthernetView {
 public:
  static WireResult<EthernetView> new_checked(ByteSpan frame);

  MacAddress dst() const;
  MacAddress src() const;
  bool has_vlan() const;
  VlanTag vlan() const;  // only when has_vlan()
  std::uint16_t ethertype() const;  // after any VLAN tag
  std::size_t header_length() const { return has_vlan() ? kEthernetHeaderLength + kVlanTagLength : kEthernetHeaderLength; }
  ByteSpan payload() const { return bytes_.subspan(header_length()); }

 private:
  explicit EthernetView(ByteSpan bytes) : bytes_(bytes) {}
  ByteSpan bytes_;
};

struct EthernetRepr {
  MacAddress dst{};
  MacAddress src{};
  std::optional<VlanTag> vlan;
  std::uint16_t ethertype = kEthertypeIpv4;

  static EthernetRepr parse(const EthernetView& view);
  std::size_t header_length() const { return vlan ? kEthernetHeaderLength + kVlanTagLength : kEthernetHeaderLength; }
  // Writes header_length() bytes; out must be at least that long.
  void emit(MutableByteSpan out) const;
  bool operator==(const EthernetRepr&) const = default;
};

}  // namespace uroce::wire
