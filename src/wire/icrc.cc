// ICRC computation: masks a small copy of the variant header fields, then runs
// the CRC over the rest of the packet in place.
#include "wire/icrc.h"

#include <algorithm>
#include <array>

#include "wire/bth.h"
#include "wire/crc32.h"
#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/udp.h"

namespace uroce::wire {
namespace {

constexpr std::size_t kIcrcPreambleLength = 8;   // the 0xFF bytes standing for the LRH
constexpr std::size_t kMaxIpv4HeaderLength = 60;
constexpr std::size_t kMaskedTransportLength = kUdpHeaderLength + kBthLength;
// Datagrams up to this size are copied whole so the CRC runs in one call: for
// short packets the second call's set-up costs more than the copy.
constexpr std::size_t kCopyWholeLength = 256;

void mask_ip_header(MutableByteSpan header) {
  if (header.empty()) return;
  if ((header[0] >> 4) == 4 && header.size() >= kIpv4HeaderLength) {
    header[ipv4_field::tos] = 0xFF;
    header[ipv4_field::ttl] = 0xFF;
    header[ipv4_field::checksum] = 0xFF;
    header[ipv4_field::checksum + 1] = 0xFF;
  } else if ((header[0] >> 4) == 6 && header.size() >= kIpv6HeaderLength) {
    header[0] |= 0x0F;  // low nibble of the traffic class
    header[1] = 0xFF;   // rest of the class, top of the flow label
    header[2] = 0xFF;
    header[3] = 0xFF;
    header[ipv6_field::hop_limit] = 0xFF;
  }
}

}  // namespace

std::uint32_t compute_icrc(ByteSpan ip_header, ByteSpan udp_to_pad) {
  std::array<std::uint8_t, kIcrcPreambleLength + kMaxIpv4HeaderLength + kCopyWholeLength> masked;
  std::fill_n(masked.begin(), kIcrcPreambleLength, 0xFF);

  std::size_t ip_length = std::min(ip_header.size(), kMaxIpv4HeaderLength);
  std::copy_n(ip_header.begin(), ip_length, masked.begin() + kIcrcPreambleLength);
  mask_ip_header(MutableByteSpan(masked).subspan(kIcrcPreambleLength, ip_length));

  std::size_t transport_offset = kIcrcPreambleLength + ip_length;
  std::size_t transport_length =
      udp_to_pad.size() <= kCopyWholeLength ? udp_to_pad.size() : std::min(udp_to_pad.size(), kMaskedTransportLength);
  std::copy_n(udp_to_pad.begin(), transport_length, masked.begin() + transport_offset);
  std::uint8_t* transport = masked.data() + transport_offset;
  if (transport_length >= kUdpHeaderLength) {
    transport[udp_field::checksum] = 0xFF;
    transport[udp_field::checksum + 1] = 0xFF;
  }
  if (transport_length > kUdpHeaderLength + bth_field::fecn_becn) {
    transport[kUdpHeaderLength + bth_field::fecn_becn] = 0xFF;
  }

  std::uint32_t crc = crc32_update(0, ByteSpan(masked).first(transport_offset + transport_length));
  return crc32_update(crc, udp_to_pad.subspan(transport_length));
}

}  // namespace uroce::wire
