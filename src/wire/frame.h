// Whole RoCEv2 packets and frames: parse untrusted bytes into headers, payload
// and ICRC verdict; emit headers and payload into bytes with lengths, pad,
// checksums and ICRC filled in.
//
//   transport packet (what a UDP socket carries): BTH | ext headers | payload | pad | ICRC
//   frame (what a raw port carries):  Ethernet | IPv4/IPv6 | UDP 4791 | transport packet
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "common/bytes.h"
#include "wire/bth.h"
#include "wire/error.h"
#include "wire/ethernet.h"
#include "wire/ext_headers.h"
#include "wire/icrc.h"
#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/opcode.h"
#include "wire/udp.h"

namespace uroce::wire {

// The BTH and the extension headers its opcode carries (the others empty).
struct TransportHeaders {
  BthRepr bth;
  std::optional<DethRepr> deth;
  std::optional<XrcethRepr> xrceth;
  std::optional<RethRepr> reth;
  std::optional<AtomicEthRepr> atomic_eth;
  std::optional<AethRepr> aeth;
  std::optional<AtomicAckEthRepr> atomic_ack_eth;
  std::optional<ImmDtRepr> imm_dt;
  std::optional<IethRepr> ieth;

  bool operator==(const TransportHeaders&) const = default;
};

struct RocePacket {
  TransportHeaders headers;
  const OpcodeInfo* op = nullptr;  // never null after a successful parse
  ByteSpan payload;                // pad excluded; points into the parsed bytes
  std::uint32_t icrc = 0;          // as read from the wire (little-endian)
};

using IpHeader = std::variant<Ipv4Repr, Ipv6Repr>;

// An IP datagram carrying RoCEv2: what the engine sends and receives.
struct RoceDatagram {
  IpHeader ip;
  UdpRepr udp;
  RocePacket packet;
  bool icrc_ok = false;
  ByteSpan ip_header;    // the IP header as received, options included; points into the parsed bytes
  ByteSpan udp_payload;  // BTH .. ICRC; points into the parsed bytes

  int ip_version() const { return std::holds_alternative<Ipv4Repr>(ip) ? 4 : 6; }
};

struct RoceFrame : RoceDatagram {
  EthernetRepr ethernet;
};

// Parses a UDP payload as a RoCEv2 transport packet. Checks the opcode, TVer,
// that every extension header fits, pad and length rules; not the ICRC (that
// needs the IP header).
WireResult<RocePacket> parse_roce_packet(ByteSpan udp_payload);

// Whether a parse computes the ICRC (skip: the receiver accepts the packet
// unchecked by its policy, so the CRC over every byte is not worth its cost;
// icrc_ok stays false).
enum class IcrcCheck : std::uint8_t { verify, skip };

// Parses an IP datagram (IPv4 or IPv6 header first) carrying RoCEv2 and
// verifies its ICRC. Bytes after the IP total length are ignored.
WireResult<RoceDatagram> parse_roce_datagram(ByteSpan datagram, IcrcCheck check = IcrcCheck::verify);

// Parses an Ethernet frame carrying RoCEv2 and verifies its ICRC. Trailing
// bytes after the IP datagram (Ethernet padding, FCS) are ignored. A wrong
// ICRC is not an error here: icrc_ok says so, and the receiver drops it.
WireResult<RoceFrame> parse_roce_frame(ByteSpan frame);

// Bytes from BTH to the end of the extension headers for this opcode.
std::size_t transport_headers_length(const OpcodeInfo& op);

// Writes BTH, extension headers, payload, pad and a zero ICRC placeholder.
// The pad count is derived from the payload size. The headers must be exactly
// those the opcode carries (bad_header otherwise). Returns the bytes written.
WireResult<std::size_t> emit_roce_packet(const TransportHeaders& headers, ByteSpan payload, MutableByteSpan out);

struct RoceDatagramSpec {
  IpHeader ip;  // payload_length is computed
  UdpRepr udp;  // payload_length is computed
  TransportHeaders headers;
};

// Where begin_roce_datagram put things.
struct DatagramLayout {
  std::size_t ip_header_length = 0;
  std::size_t payload_offset = 0;  // the caller writes payload_length bytes here
  std::size_t length = 0;          // the whole datagram, ICRC included
};

// Two-step emission for callers that gather the payload themselves (the
// engine copies straight from registered memory): begin writes every header,
// pad and lengths for a payload of payload_length bytes; the caller fills the
// payload; seal computes the ICRC.
WireResult<DatagramLayout> begin_roce_datagram(const RoceDatagramSpec& spec, std::size_t payload_length,
                                               MutableByteSpan out);
void seal_roce_datagram(MutableByteSpan out, const DatagramLayout& layout);
// The same for a whole datagram that begin_roce_datagram laid out (its IP
// header gives its own length); not an IP/UDP datagram: left as it is.
void seal_roce_datagram(MutableByteSpan datagram);

struct RoceFrameSpec {
  EthernetRepr ethernet;
  IpHeader ip;  // payload_length is computed
  UdpRepr udp;  // payload_length is computed
  TransportHeaders headers;
  ByteSpan payload;
};

// Writes a complete frame with IP and UDP lengths, IPv4 checksum and ICRC.
// Returns the frame length (without Ethernet padding or FCS).
WireResult<std::size_t> emit_roce_frame(const RoceFrameSpec& spec, MutableByteSpan out);

}  // namespace uroce::wire
