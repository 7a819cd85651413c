// RoCEv2 packet and frame parsing and emission.
#include "wire/frame.h"

#include <algorithm>

#include "wire/icrc.h"
#include "wire/ip_datagram.h"

namespace uroce::wire {
namespace {

// Reads the extension header T at offset if the opcode carries it.
template <typename T>
void take_header(ByteSpan bytes, std::size_t& offset, bool present, std::optional<T>& out) {
  if (!present) return;
  out = T::parse(bytes.subspan(offset, T::kLength));
  offset += T::kLength;
}

template <typename T>
bool put_header(MutableByteSpan out, std::size_t& offset, bool wanted, const std::optional<T>& header) {
  if (wanted != header.has_value()) return false;
  if (!wanted) return true;
  header->emit(out.subspan(offset, T::kLength));
  offset += T::kLength;
  return true;
}

std::uint8_t pad_for(std::size_t payload_length) {
  return static_cast<std::uint8_t>((4 - payload_length % 4) % 4);
}

}  // namespace

std::size_t transport_headers_length(const OpcodeInfo& op) {
  std::size_t length = kBthLength;
  if (op.has(kExtDeth)) length += DethRepr::kLength;
  if (op.has(kExtXrceth)) length += XrcethRepr::kLength;
  if (op.has(kExtReth)) length += RethRepr::kLength;
  if (op.has(kExtAtomicEth)) length += AtomicEthRepr::kLength;
  if (op.has(kExtAeth)) length += AethRepr::kLength;
  if (op.has(kExtAtomicAckEth)) length += AtomicAckEthRepr::kLength;
  if (op.has(kExtImmDt)) length += ImmDtRepr::kLength;
  if (op.has(kExtIeth)) length += IethRepr::kLength;
  if (op.has(kExtCnpReserved)) length += kCnpReservedLength;
  return length;
}

namespace {

// Parses into packet in place (the frame parser fills its own member, saving
// a copy per packet); returns the error, if any.
std::optional<WireError> parse_packet_into(ByteSpan bytes, RocePacket& packet) {
  auto bth_view = BthView::new_checked(bytes);
  if (!bth_view) return bth_view.error();
  if (bth_view->transport_version() != 0) return WireError::bad_version;
  const OpcodeInfo* op = find_opcode(bth_view->opcode());
  if (op == nullptr) return WireError::unknown_opcode;

  std::size_t headers_length = transport_headers_length(*op);
  if (bytes.size() < headers_length + kIcrcLength) return WireError::truncated;

  packet.op = op;
  packet.headers.bth = *BthRepr::parse(*bth_view);
  std::size_t offset = kBthLength;
  take_header(bytes, offset, op->has(kExtDeth), packet.headers.deth);
  take_header(bytes, offset, op->has(kExtXrceth), packet.headers.xrceth);
  take_header(bytes, offset, op->has(kExtReth), packet.headers.reth);
  take_header(bytes, offset, op->has(kExtAtomicEth), packet.headers.atomic_eth);
  take_header(bytes, offset, op->has(kExtAeth), packet.headers.aeth);
  take_header(bytes, offset, op->has(kExtAtomicAckEth), packet.headers.atomic_ack_eth);
  take_header(bytes, offset, op->has(kExtImmDt), packet.headers.imm_dt);
  take_header(bytes, offset, op->has(kExtIeth), packet.headers.ieth);
  if (op->has(kExtCnpReserved)) offset += kCnpReservedLength;

  std::size_t body_length = bytes.size() - kIcrcLength - offset;  // payload + pad
  if (body_length % 4 != 0) return WireError::bad_length;
  if (!op->carries_payload && body_length != 0) return WireError::bad_length;
  std::uint8_t pad = packet.headers.bth.pad_count;
  if (pad > body_length) return WireError::bad_length;
  packet.payload = bytes.subspan(offset, body_length - pad);
  packet.icrc = load_le32(&bytes[bytes.size() - kIcrcLength]);
  return std::nullopt;
}

}  // namespace

WireResult<RocePacket> parse_roce_packet(ByteSpan bytes) {
  RocePacket packet;
  if (auto error = parse_packet_into(bytes, packet)) return fail(*error);
  return packet;
}

namespace {

std::optional<WireError> parse_datagram_into(ByteSpan bytes, RoceDatagram& datagram, IcrcCheck check) {
  if (bytes.empty()) return WireError::truncated;
  ByteSpan ip_header;
  ByteSpan ip_payload;
  if ((bytes[0] >> 4) == 4) {
    auto view = Ipv4View::new_checked(bytes);
    if (!view) return view.error();
    auto repr = Ipv4Repr::parse(*view);
    if (!repr) return repr.error();
    if (repr->protocol != kIpProtocolUdp) return WireError::not_roce;
    datagram.ip = *repr;
    ip_header = view->header();
    ip_payload = view->payload();
  } else if ((bytes[0] >> 4) == 6) {
    auto view = Ipv6View::new_checked(bytes);
    if (!view) return view.error();
    Ipv6Repr repr = Ipv6Repr::parse(*view);
    if (repr.next_header != kIpProtocolUdp) return WireError::not_roce;
    datagram.ip = repr;
    ip_header = view->header();
    ip_payload = view->payload();
  } else {
    return WireError::bad_version;
  }

  auto udp = UdpView::new_checked(ip_payload);
  if (!udp) return udp.error();
  datagram.udp = UdpRepr::parse(*udp);
  if (datagram.udp.dst_port != kRoceV2Port) return WireError::not_roce;

  if (auto error = parse_packet_into(udp->payload(), datagram.packet)) return error;
  datagram.ip_header = ip_header;
  datagram.udp_payload = udp->payload();

  if (check == IcrcCheck::skip) return std::nullopt;
  std::size_t datagram_length = kUdpHeaderLength + udp->payload().size();
  datagram.icrc_ok =
      compute_icrc(ip_header, ip_payload.first(datagram_length - kIcrcLength)) == datagram.packet.icrc;
  return std::nullopt;
}

}  // namespace

WireResult<RoceDatagram> parse_roce_datagram(ByteSpan bytes, IcrcCheck check) {
  // Parsed in place and returned by name on every path: the datagram is
  // never copied (this is on every arrival's path).
  WireResult<RoceDatagram> result(std::in_place);
  if (auto error = parse_datagram_into(bytes, *result, check)) result = fail(*error);
  return result;
}

WireResult<RoceFrame> parse_roce_frame(ByteSpan bytes) {
  auto ethernet = EthernetView::new_checked(bytes);
  if (!ethernet) return fail(ethernet.error());
  std::uint16_t ethertype = ethernet->ethertype();
  if (ethertype != kEthertypeIpv4 && ethertype != kEthertypeIpv6) return fail(WireError::not_roce);

  RoceFrame frame;
  frame.ethernet = EthernetRepr::parse(*ethernet);
  ByteSpan ip = ethernet->payload();
  // The ethertype decides the IP version; a header that disagrees is a bad version.
  if (!ip.empty() && (ip[0] >> 4) != (ethertype == kEthertypeIpv4 ? 4 : 6)) return fail(WireError::bad_version);
  if (auto error = parse_datagram_into(ip, frame, IcrcCheck::verify)) return fail(*error);
  return frame;
}

namespace {

// Writes the BTH (with the given pad count) and the extension headers the
// opcode carries; returns where the payload starts, or bad_header when the
// headers present are not exactly the opcode's.
WireResult<std::size_t> write_transport_headers(const TransportHeaders& headers, const OpcodeInfo& op,
                                                std::uint8_t pad, MutableByteSpan out) {
  BthRepr bth = headers.bth;
  bth.pad_count = pad;
  bth.emit(out);
  std::size_t offset = kBthLength;
  bool ok = put_header(out, offset, op.has(kExtDeth), headers.deth) &&
            put_header(out, offset, op.has(kExtXrceth), headers.xrceth) &&
            put_header(out, offset, op.has(kExtReth), headers.reth) &&
            put_header(out, offset, op.has(kExtAtomicEth), headers.atomic_eth) &&
            put_header(out, offset, op.has(kExtAeth), headers.aeth) &&
            put_header(out, offset, op.has(kExtAtomicAckEth), headers.atomic_ack_eth) &&
            put_header(out, offset, op.has(kExtImmDt), headers.imm_dt) &&
            put_header(out, offset, op.has(kExtIeth), headers.ieth);
  if (!ok) return fail(WireError::bad_header);
  if (op.has(kExtCnpReserved)) {
    std::fill_n(&out[offset], kCnpReservedLength, 0);
    offset += kCnpReservedLength;
  }
  return offset;
}

}  // namespace

WireResult<std::size_t> emit_roce_packet(const TransportHeaders& headers, ByteSpan payload, MutableByteSpan out) {
  const OpcodeInfo* op = find_opcode(headers.bth.opcode);
  if (op == nullptr) return fail(WireError::unknown_opcode);
  if (!op->carries_payload && !payload.empty()) return fail(WireError::bad_length);
  std::uint8_t pad = pad_for(payload.size());
  std::size_t total = transport_headers_length(*op) + payload.size() + pad + kIcrcLength;
  if (out.size() < total) return fail(WireError::buffer_too_small);

  auto offset = write_transport_headers(headers, *op, pad, out);
  if (!offset) return fail(offset.error());
  std::copy(payload.begin(), payload.end(), &out[*offset]);
  std::fill_n(&out[*offset + payload.size()], pad + kIcrcLength, 0);
  return total;
}

WireResult<DatagramLayout> begin_roce_datagram(const RoceDatagramSpec& spec, std::size_t payload_length,
                                               MutableByteSpan out) {
  const OpcodeInfo* op = find_opcode(spec.headers.bth.opcode);
  if (op == nullptr) return fail(WireError::unknown_opcode);
  if (!op->carries_payload && payload_length != 0) return fail(WireError::bad_length);
  bool is_ipv4 = std::holds_alternative<Ipv4Repr>(spec.ip);
  DatagramLayout layout;
  layout.ip_header_length = is_ipv4 ? kIpv4HeaderLength : kIpv6HeaderLength;
  std::size_t transport_offset = layout.ip_header_length + kUdpHeaderLength;
  std::size_t headers_length = transport_headers_length(*op);
  std::uint8_t pad = pad_for(payload_length);
  std::size_t packet_length = headers_length + payload_length + pad + kIcrcLength;
  layout.payload_offset = transport_offset + headers_length;
  layout.length = transport_offset + packet_length;
  if (layout.length - layout.ip_header_length > 0xFFFF) return fail(WireError::bad_length);
  if (out.size() < layout.length) return fail(WireError::buffer_too_small);

  // Headers only; the payload area is the caller's, pad and ICRC are zeroed.
  auto written = write_transport_headers(spec.headers, *op, pad, out.subspan(transport_offset));
  if (!written) return fail(written.error());
  std::fill_n(&out[layout.payload_offset + payload_length], pad + kIcrcLength, 0);

  std::size_t udp_length = kUdpHeaderLength + packet_length;
  MutableByteSpan ip = out.first(layout.ip_header_length);
  if (is_ipv4) {
    Ipv4Repr ipv4 = std::get<Ipv4Repr>(spec.ip);
    ipv4.payload_length = static_cast<std::uint16_t>(udp_length);
    ipv4.emit(ip);
  } else {
    Ipv6Repr ipv6 = std::get<Ipv6Repr>(spec.ip);
    ipv6.payload_length = static_cast<std::uint16_t>(udp_length);
    ipv6.emit(ip);
  }
  UdpRepr udp = spec.udp;
  udp.payload_length = static_cast<std::uint16_t>(packet_length);
  udp.emit(out.subspan(layout.ip_header_length, kUdpHeaderLength));
  return layout;
}

void seal_roce_datagram(MutableByteSpan out, const DatagramLayout& layout) {
  ByteSpan ip = out.first(layout.ip_header_length);
  ByteSpan udp_to_pad = ByteSpan(out).subspan(layout.ip_header_length,
                                              layout.length - layout.ip_header_length - kIcrcLength);
  store_le32(&out[layout.length - kIcrcLength], compute_icrc(ip, udp_to_pad));
}

void seal_roce_datagram(MutableByteSpan datagram) {
  auto view = IpDatagramView::new_checked(datagram);
  if (!view || view->udp_payload().size() < kIcrcLength) return;
  seal_roce_datagram(datagram, DatagramLayout{view->ip_header_length(), 0, datagram.size()});
}

WireResult<std::size_t> emit_roce_frame(const RoceFrameSpec& spec, MutableByteSpan out) {
  std::size_t l2_length = spec.ethernet.header_length();
  if (out.size() < l2_length) return fail(WireError::buffer_too_small);
  MutableByteSpan datagram = out.subspan(l2_length);
  auto layout = begin_roce_datagram(RoceDatagramSpec{spec.ip, spec.udp, spec.headers}, spec.payload.size(), datagram);
  if (!layout) return fail(layout.error());
  spec.ethernet.emit(out);
  std::copy(spec.payload.begin(), spec.payload.end(), &datagram[layout->payload_offset]);
  seal_roce_datagram(datagram, *layout);
  return l2_length + layout->length;
}

}  // namespace uroce::wire
