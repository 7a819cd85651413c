// ARP packet parsing and emission (Ethernet hardware, IPv4 protocol only).
#include "wire/arp.h"

#include <algorithm>

namespace uroce::wire {
namespace {

constexpr std::uint16_t kHardwareEthernet = 1;

}  // namespace

WireResult<ArpRepr> ArpRepr::parse(ByteSpan packet) {
  if (packet.size() < kArpLength) return fail(WireError::truncated);
  if (load_be16(&packet[arp_field::hardware_type]) != kHardwareEthernet ||
      load_be16(&packet[arp_field::protocol_type]) != kEthertypeIpv4 || packet[arp_field::hardware_length] != 6 ||
      packet[arp_field::protocol_length] != 4) {
    return fail(WireError::bad_header);
  }
  std::uint16_t operation = load_be16(&packet[arp_field::operation]);
  if (operation != static_cast<std::uint16_t>(ArpOperation::request) &&
      operation != static_cast<std::uint16_t>(ArpOperation::reply)) {
    return fail(WireError::bad_header);
  }
  ArpRepr arp;
  arp.operation = static_cast<ArpOperation>(operation);
  std::copy_n(&packet[arp_field::sender_mac], 6, arp.sender_mac.begin());
  std::copy_n(&packet[arp_field::sender_ip], 4, arp.sender_ip.begin());
  std::copy_n(&packet[arp_field::target_mac], 6, arp.target_mac.begin());
  std::copy_n(&packet[arp_field::target_ip], 4, arp.target_ip.begin());
  return arp;
}

void ArpRepr::emit(MutableByteSpan out) const {
  store_be16(&out[arp_field::hardware_type], kHardwareEthernet);
  store_be16(&out[arp_field::protocol_type], kEthertypeIpv4);
  out[arp_field::hardware_length] = 6;
  out[arp_field::protocol_length] = 4;
  store_be16(&out[arp_field::operation], static_cast<std::uint16_t>(operation));
  std::copy(sender_mac.begin(), sender_mac.end(), &out[arp_field::sender_mac]);
  std::copy(sender_ip.begin(), sender_ip.end(), &out[arp_field::sender_ip]);
  std::copy(target_mac.begin(), target_mac.end(), &out[arp_field::target_mac]);
  std::copy(target_ip.begin(), target_ip.end(), &out[arp_field::target_ip]);
}

}  // namespace uroce::wire
