// IPv6 fixed header parsing and emission.
#include "wire/ipv6.h"

#include <algorithm>

namespace uroce::wire {

WireResult<Ipv6View> Ipv6View::new_checked(ByteSpan packet) {
  if (packet.size() < kIpv6HeaderLength) return fail(WireError::truncated);
  if ((packet[ipv6_field::version_class_flow] >> 4) != 6) return fail(WireError::bad_version);
  Ipv6View view(packet);
  if (packet.size() < kIpv6HeaderLength + view.payload_length()) return fail(WireError::truncated);
  return view;
}

Ipv6Address Ipv6View::src() const {
  Ipv6Address address;
  std::copy_n(&bytes_[ipv6_field::src], address.size(), address.begin());
  return address;
}

Ipv6Address Ipv6View::dst() const {
  Ipv6Address address;
  std::copy_n(&bytes_[ipv6_field::dst], address.size(), address.begin());
  return address;
}

Ipv6Repr Ipv6Repr::parse(const Ipv6View& view) {
  Ipv6Repr repr;
  repr.dscp = view.dscp();
  repr.ecn = view.ecn();
  repr.flow_label = view.flow_label();
  repr.next_header = view.next_header();
  repr.hop_limit = view.hop_limit();
  repr.src = view.src();
  repr.dst = view.dst();
  repr.payload_length = view.payload_length();
  return repr;
}

void Ipv6Repr::emit(MutableByteSpan out) const {
  std::uint32_t traffic_class = (std::uint32_t{dscp} << 2) | static_cast<std::uint32_t>(ecn);
  store_be32(&out[ipv6_field::version_class_flow], (6u << 28) | (traffic_class << 20) | (flow_label & 0xFFFFF));
  store_be16(&out[ipv6_field::payload_length], payload_length);
  out[ipv6_field::next_header] = next_header;
  out[ipv6_field::hop_limit] = hop_limit;
  std::copy(src.begin(), src.end(), &out[ipv6_field::src]);
  std::copy(dst.begin(), dst.end(), &out[ipv6_field::dst]);
}

}  // namespace uroce::wire
