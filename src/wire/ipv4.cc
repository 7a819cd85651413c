// IPv4 header parsing, emission and header checksum.
#include "wire/ipv4.h"

#include <algorithm>

namespace uroce::wire {

WireResult<Ipv4View> Ipv4View::new_checked(ByteSpan packet) {
  if (packet.size() < kIpv4HeaderLength) return fail(WireError::truncated);
  if ((packet[ipv4_field::version_ihl] >> 4) != 4) return fail(WireError::bad_version);
  Ipv4View view(packet);
  if (view.header_length() < kIpv4HeaderLength) return fail(WireError::bad_header);
  if (packet.size() < view.header_length()) return fail(WireError::truncated);
  if (view.total_length() < view.header_length()) return fail(WireError::bad_length);
  if (packet.size() < view.total_length()) return fail(WireError::truncated);
  return view;
}

bool Ipv4View::checksum_ok() const { return ipv4_header_checksum(header()) == checksum(); }

Ipv4Address Ipv4View::src() const {
  Ipv4Address address;
  std::copy_n(&bytes_[ipv4_field::src], address.size(), address.begin());
  return address;
}

Ipv4Address Ipv4View::dst() const {
  Ipv4Address address;
  std::copy_n(&bytes_[ipv4_field::dst], address.size(), address.begin());
  return address;
}

WireResult<Ipv4Repr> Ipv4Repr::parse(const Ipv4View& view) {
  if (view.more_fragments() || view.fragment_offset() != 0) return fail(WireError::fragmented);
  Ipv4Repr repr;
  repr.dscp = view.dscp();
  repr.ecn = view.ecn();
  repr.identification = view.identification();
  repr.dont_fragment = view.dont_fragment();
  repr.ttl = view.ttl();
  repr.protocol = view.protocol();
  repr.src = view.src();
  repr.dst = view.dst();
  repr.payload_length = static_cast<std::uint16_t>(view.total_length() - view.header_length());
  return repr;
}

void Ipv4Repr::emit(MutableByteSpan out) const {
  out[ipv4_field::version_ihl] = 0x45;
  out[ipv4_field::tos] = static_cast<std::uint8_t>((dscp << 2) | static_cast<std::uint8_t>(ecn));
  store_be16(&out[ipv4_field::total_length], static_cast<std::uint16_t>(kIpv4HeaderLength + payload_length));
  store_be16(&out[ipv4_field::identification], identification);
  store_be16(&out[ipv4_field::flags_fragment], dont_fragment ? 0x4000 : 0);
  out[ipv4_field::ttl] = ttl;
  out[ipv4_field::protocol] = protocol;
  store_be16(&out[ipv4_field::checksum], 0);
  std::copy(src.begin(), src.end(), &out[ipv4_field::src]);
  std::copy(dst.begin(), dst.end(), &out[ipv4_field::dst]);
  store_be16(&out[ipv4_field::checksum], ipv4_header_checksum(out.first(kIpv4HeaderLength)));
}

std::uint16_t ipv4_header_checksum(ByteSpan header) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < header.size(); i += 2) {
    if (i == ipv4_field::checksum) continue;
    sum += load_be16(&header[i]);
  }
  while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace uroce::wire
