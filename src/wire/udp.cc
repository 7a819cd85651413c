// UDP header parsing and emission; RoCEv2 source port selection.
#include "wire/udp.h"

namespace uroce::wire {

WireResult<UdpView> UdpView::new_checked(ByteSpan datagram) {
  if (datagram.size() < kUdpHeaderLength) return fail(WireError::truncated);
  UdpView view(datagram);
  if (view.length() < kUdpHeaderLength) return fail(WireError::bad_length);
  if (datagram.size() < view.length()) return fail(WireError::truncated);
  return view;
}

UdpRepr UdpRepr::parse(const UdpView& view) {
  return UdpRepr{view.src_port(), view.dst_port(), view.checksum(),
                 static_cast<std::uint16_t>(view.length() - kUdpHeaderLength)};
}

void UdpRepr::emit(MutableByteSpan out) const {
  store_be16(&out[udp_field::src_port], src_port);
  store_be16(&out[udp_field::dst_port], dst_port);
  store_be16(&out[udp_field::length], static_cast<std::uint16_t>(kUdpHeaderLength + payload_length));
  store_be16(&out[udp_field::checksum], checksum);
}

std::uint16_t roce_source_port(std::uint32_t qpn) {
  // Fold the 24-bit QPN with a multiplicative hash into 14 bits.
  std::uint32_t hash = (qpn & 0xFFFFFF) * 0x9E3779B1u;
  return static_cast<std::uint16_t>(kRoceSourcePortMin | (hash >> 18));
}

}  // namespace uroce::wire
