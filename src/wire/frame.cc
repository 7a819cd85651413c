// RoCEv2 packet and frame parsing and emission.
#include "wire/frame.h"

#include <algorithm>

#include "wire/icrc.h"

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

WireResult<RoceFrame> parse_roce_frame(ByteSpan bytes) {
  auto ethernet = EthernetView::new_checked(bytes);
  if (!ethernet) return fail(ethernet.error());

  RoceFrame frame;
  frame.ethernet = EthernetRepr::parse(*ethernet);
  ByteSpan ip_header;
  ByteSpan ip_payload;
  if (ethernet->ethertype() == kEthertypeIpv4) {
    auto view = Ipv4View::new_checked(ethernet->payload());
    if (!view) return fail(view.error());
    auto repr = Ipv4Repr::parse(*view);
    if (!repr) return fail(repr.error());
    if (repr->protocol != kIpProtocolUdp) return fail(WireError::not_roce);
    frame.ip = *repr;
    ip_header = view->header();
    ip_payload = view->payload();
  } else if (ethernet->ethertype() == kEthertypeIpv6) {
    auto view = Ipv6View::new_checked(ethernet->payload());
    if (!view) return fail(view.error());
    Ipv6Repr repr = Ipv6Repr::parse(*view);
    if (repr.next_header != kIpProtocolUdp) return fail(WireError::not_roce);
    frame.ip = repr;
    ip_header = view->header();
    ip_payload = view->payload();
  } else {
    return fail(WireError::not_roce);
  }

  auto udp = UdpView::new_checked(ip_payload);
  if (!udp) return fail(udp.error());
  frame.udp = UdpRepr::parse(*udp);
  if (frame.udp.dst_port != kRoceV2Port) return fail(WireError::not_roce);

  if (auto error = parse_packet_into(udp->payload(), frame.packet)) return fail(*error);

  std::size_t datagram_length = kUdpHeaderLength + udp->payload().size();
  frame.icrc_ok = compute_icrc(ip_header, ip_payload.first(datagram_length - kIcrcLength)) == frame.packet.icrc;
  return frame;
}

WireResult<std::size_t> emit_roce_packet(const TransportHeaders& headers, ByteSpan payload, MutableByteSpan out) {
  const OpcodeInfo* op = find_opcode(headers.bth.opcode);
  if (op == nullptr) return fail(WireError::unknown_opcode);
  if (!op->carries_payload && !payload.empty()) return fail(WireError::bad_length);
  std::uint8_t pad = pad_for(payload.size());
  std::size_t total = transport_headers_length(*op) + payload.size() + pad + kIcrcLength;
  if (out.size() < total) return fail(WireError::buffer_too_small);

  BthRepr bth = headers.bth;
  bth.pad_count = pad;
  bth.emit(out);
  std::size_t offset = kBthLength;
  bool ok = put_header(out, offset, op->has(kExtDeth), headers.deth) &&
            put_header(out, offset, op->has(kExtReth), headers.reth) &&
            put_header(out, offset, op->has(kExtAtomicEth), headers.atomic_eth) &&
            put_header(out, offset, op->has(kExtAeth), headers.aeth) &&
            put_header(out, offset, op->has(kExtAtomicAckEth), headers.atomic_ack_eth) &&
            put_header(out, offset, op->has(kExtImmDt), headers.imm_dt) &&
            put_header(out, offset, op->has(kExtIeth), headers.ieth);
  if (!ok) return fail(WireError::bad_header);
  if (op->has(kExtCnpReserved)) {
    std::fill_n(&out[offset], kCnpReservedLength, 0);
    offset += kCnpReservedLength;
  }
  std::copy(payload.begin(), payload.end(), &out[offset]);
  offset += payload.size();
  std::fill_n(&out[offset], pad + kIcrcLength, 0);
  return total;
}

WireResult<std::size_t> emit_roce_frame(const RoceFrameSpec& spec, MutableByteSpan out) {
  std::size_t l2_length = spec.ethernet.header_length();
  bool is_ipv4 = std::holds_alternative<Ipv4Repr>(spec.ip);
  std::size_t l3_length = is_ipv4 ? kIpv4HeaderLength : kIpv6HeaderLength;
  std::size_t transport_offset = l2_length + l3_length + kUdpHeaderLength;
  if (out.size() < transport_offset) return fail(WireError::buffer_too_small);

  auto packet_length = emit_roce_packet(spec.headers, spec.payload, out.subspan(transport_offset));
  if (!packet_length) return fail(packet_length.error());
  std::size_t udp_length = kUdpHeaderLength + *packet_length;
  if (udp_length + l3_length > 0xFFFF) return fail(WireError::bad_length);

  spec.ethernet.emit(out);
  MutableByteSpan ip = out.subspan(l2_length, l3_length);
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
  udp.payload_length = static_cast<std::uint16_t>(*packet_length);
  MutableByteSpan datagram = out.subspan(l2_length + l3_length, udp_length);
  udp.emit(datagram);

  std::uint32_t icrc = compute_icrc(ip, datagram.first(udp_length - kIcrcLength));
  store_le32(&datagram[udp_length - kIcrcLength], icrc);
  return l2_length + l3_length + udp_length;
}

}  // namespace uroce::wire
