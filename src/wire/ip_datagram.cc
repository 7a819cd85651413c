// IpDatagramView and mark_congestion_experienced(): the IP and UDP fields
// that carriers of a datagram read, and the one field a switch writes.
#include "wire/ip_datagram.h"

#include <algorithm>

#include "wire/ipv6.h"
#include "wire/opcode.h"
#include "wire/udp.h"

namespace uroce::wire {

int ip_version(ByteSpan ip_header) {
  if (ip_header.empty()) return 0;
  int version = ip_header[ipv4_field::version_ihl] >> 4;
  return version == 4 || version == 6 ? version : 0;
}

WireResult<IpDatagramView> IpDatagramView::new_checked(ByteSpan datagram) {
  if (datagram.empty()) return unexpected(WireError::truncated);
  int version = datagram[ipv4_field::version_ihl] >> 4;
  if (version == 4) {
    std::size_t header_length = std::size_t{datagram[ipv4_field::version_ihl] & 0x0Fu} * 4;
    if (header_length < kIpv4HeaderLength) return unexpected(WireError::bad_length);
    if (datagram.size() < header_length + kUdpHeaderLength) return unexpected(WireError::truncated);
    if (datagram[ipv4_field::protocol] != kIpProtocolUdp) return unexpected(WireError::not_roce);
    return IpDatagramView(datagram, true, header_length);
  }
  if (version == 6) {
    if (datagram.size() < kIpv6HeaderLength + kUdpHeaderLength) return unexpected(WireError::truncated);
    if (datagram[ipv6_field::next_header] != kIpProtocolUdp) return unexpected(WireError::not_roce);
    return IpDatagramView(datagram, false, kIpv6HeaderLength);
  }
  return unexpected(WireError::bad_version);
}

std::uint8_t IpDatagramView::traffic_class() const {
  if (ipv4_) return bytes_[ipv4_field::tos];
  return static_cast<std::uint8_t>(load_be32(bytes_.data()) >> 20);
}

ByteSpan IpDatagramView::source_address() const {
  return ipv4_ ? bytes_.subspan(ipv4_field::src, 4) : bytes_.subspan(ipv6_field::src, 16);
}

ByteSpan IpDatagramView::destination_address() const {
  return ipv4_ ? bytes_.subspan(ipv4_field::dst, 4) : bytes_.subspan(ipv6_field::dst, 16);
}

Gid IpDatagramView::destination_gid() const {
  ByteSpan address = destination_address();
  if (ipv4_) return gid_from_ipv4({address[0], address[1], address[2], address[3]});
  Gid gid;
  std::copy(address.begin(), address.end(), gid.begin());
  return gid;
}

std::uint16_t IpDatagramView::source_port() const {
  return load_be16(bytes_.data() + ip_header_length_ + udp_field::src_port);
}

std::uint16_t IpDatagramView::destination_port() const {
  return load_be16(bytes_.data() + ip_header_length_ + udp_field::dst_port);
}

std::size_t IpDatagramView::ip_total_length() const {
  if (ipv4_) return load_be16(bytes_.data() + ipv4_field::total_length);
  return kIpv6HeaderLength + load_be16(bytes_.data() + ipv6_field::payload_length);
}

std::optional<std::uint8_t> IpDatagramView::bth_opcode() const {
  ByteSpan payload = udp_payload();
  if (payload.empty()) return std::nullopt;
  return payload[0];
}

WireResult<Transmit> describe_transmit(ByteSpan datagram) {
  auto view = IpDatagramView::new_checked(datagram);
  if (!view) return unexpected(view.error());
  Transmit transmit;
  transmit.length = datagram.size();
  transmit.udp_payload_offset = view->ip_header_length() + kUdpHeaderLength;
  transmit.destination = view->destination_gid();
  transmit.source_port = view->source_port();
  transmit.destination_port = view->destination_port();
  transmit.traffic_class = view->traffic_class();
  transmit.ipv4 = view->is_ipv4();
  std::optional<std::uint8_t> op = view->bth_opcode();
  transmit.kind = op == opcode::kRcAcknowledge ? TransmitKind::acknowledge
                  : op == opcode::kCnp         ? TransmitKind::cnp
                                               : TransmitKind::data;
  return transmit;
}

WireResult<GrhSource> parse_grh_area(ByteSpan area) {
  if (area.size() < kIpv6HeaderLength) return unexpected(WireError::truncated);
  GrhSource grh;
  ByteSpan ipv4 = area.subspan(kIpv6HeaderLength - kIpv4HeaderLength, kIpv4HeaderLength);
  if (ip_version(ipv4) == 4) {
    ByteSpan source = ipv4.subspan(ipv4_field::src, 4);
    grh.source = gid_from_ipv4({source[0], source[1], source[2], source[3]});
    grh.traffic_class = ipv4[ipv4_field::tos];
    return grh;
  }
  if (ip_version(area) == 6) {
    std::copy_n(area.begin() + ipv6_field::src, grh.source.size(), grh.source.begin());
    grh.traffic_class = static_cast<std::uint8_t>(load_be32(area.data()) >> 20);
    return grh;
  }
  return unexpected(WireError::bad_version);
}

bool mark_congestion_experienced(MutableByteSpan datagram) {
  auto view = IpDatagramView::new_checked(datagram);
  if (!view || view->ecn() == Ecn::not_ect || view->ecn() == Ecn::ce) return false;
  if (view->is_ipv4()) {
    datagram[ipv4_field::tos] |= static_cast<std::uint8_t>(Ecn::ce);
    store_be16(datagram.data() + ipv4_field::checksum, 0);
    store_be16(datagram.data() + ipv4_field::checksum,
               ipv4_header_checksum(ByteSpan(datagram.data(), view->ip_header_length())));
  } else {
    // The traffic class straddles the first two bytes; its ECN bits are the
    // second byte's bits 4 and 5.
    datagram[1] |= static_cast<std::uint8_t>(static_cast<std::uint8_t>(Ecn::ce) << 4);
  }
  return true;
}

}  // namespace uroce::wire
