// The RoCEv2 opcode table: for each BTH opcode, its name, transport, the kind
// of operation, where the packet sits in its message, and which extension
// headers follow the BTH.
#pragma once

#include <cstdint>
#include <string_view>

namespace uroce::wire {

enum class Transport : std::uint8_t { rc, uc, ud, cnp, xrc };

enum class OpKind : std::uint8_t {
  send,
  rdma_write,
  rdma_read_request,
  rdma_read_response,
  acknowledge,
  atomic_acknowledge,
  compare_swap,
  fetch_add,
  cnp,
};

// Where a packet sits in a multi-packet message.
enum class Position : std::uint8_t { first, middle, last, only };

// Extension headers, in the order they follow the BTH.
enum ExtHeader : std::uint16_t {
  kExtNone = 0,
  kExtDeth = 1 << 0,
  kExtReth = 1 << 1,
  kExtAtomicEth = 1 << 2,
  kExtAeth = 1 << 3,
  kExtAtomicAckEth = 1 << 4,
  kExtImmDt = 1 << 5,
  kExtIeth = 1 << 6,
  kExtCnpReserved = 1 << 7,  // the 16 reserved bytes of a CNP
  kExtXrceth = 1 << 8,       // XRC requests: the destination XRC SRQ, right after the BTH
};

struct OpcodeInfo {
  std::uint8_t value;
  std::string_view name;  // e.g. "SEND_LAST_WITH_IMMEDIATE"; UC/UD reuse RC names
  Transport transport;
  OpKind kind;
  Position position;
  std::uint16_t headers;  // ExtHeader bits
  bool carries_payload;   // payload may follow the headers

  bool has(ExtHeader header) const { return (headers & header) != 0; }
  // Requests and READ responses: what an RNIC sends ECN-capable, and the only
  // packets whose CE marks its notification point answers. ACKs and CNPs are not.
  bool ecn_capable() const {
    return kind != OpKind::acknowledge && kind != OpKind::atomic_acknowledge && kind != OpKind::cnp;
  }
};

namespace opcode {
inline constexpr std::uint8_t kRcSendFirst = 0x00;
inline constexpr std::uint8_t kRcSendMiddle = 0x01;
inline constexpr std::uint8_t kRcSendLast = 0x02;
inline constexpr std::uint8_t kRcSendLastWithImmediate = 0x03;
inline constexpr std::uint8_t kRcSendOnly = 0x04;
inline constexpr std::uint8_t kRcSendOnlyWithImmediate = 0x05;
inline constexpr std::uint8_t kRcRdmaWriteFirst = 0x06;
inline constexpr std::uint8_t kRcRdmaWriteMiddle = 0x07;
inline constexpr std::uint8_t kRcRdmaWriteLast = 0x08;
inline constexpr std::uint8_t kRcRdmaWriteLastWithImmediate = 0x09;
inline constexpr std::uint8_t kRcRdmaWriteOnly = 0x0A;
inline constexpr std::uint8_t kRcRdmaWriteOnlyWithImmediate = 0x0B;
inline constexpr std::uint8_t kRcRdmaReadRequest = 0x0C;
inline constexpr std::uint8_t kRcRdmaReadResponseFirst = 0x0D;
inline constexpr std::uint8_t kRcRdmaReadResponseMiddle = 0x0E;
inline constexpr std::uint8_t kRcRdmaReadResponseLast = 0x0F;
inline constexpr std::uint8_t kRcRdmaReadResponseOnly = 0x10;
inline constexpr std::uint8_t kRcAcknowledge = 0x11;
inline constexpr std::uint8_t kRcAtomicAcknowledge = 0x12;
inline constexpr std::uint8_t kRcCompareSwap = 0x13;
inline constexpr std::uint8_t kRcFetchAdd = 0x14;
inline constexpr std::uint8_t kRcSendLastWithInvalidate = 0x16;
inline constexpr std::uint8_t kRcSendOnlyWithInvalidate = 0x17;
inline constexpr std::uint8_t kRcAtomicWrite = 0x1D;  // IBTA 1.5: 8 bytes, RETH, placed in one store
inline constexpr std::uint8_t kUcBase = 0x20;  // UC opcode = kUcBase + RC send/write opcode
inline constexpr std::uint8_t kXrcBase = 0xA0;  // XRC opcode = kXrcBase + RC opcode (every one)
// RC's or XRC's RDMA ATOMIC WRITE.
inline constexpr bool is_atomic_write(std::uint8_t value) {
  return value == kRcAtomicWrite || value == kXrcBase + kRcAtomicWrite;
}
inline constexpr std::uint8_t kUdSendOnly = 0x64;
inline constexpr std::uint8_t kUdSendOnlyWithImmediate = 0x65;
inline constexpr std::uint8_t kCnp = 0x81;
}  // namespace opcode

// The table entry for an opcode, or nullptr if RoCEv2 does not define it
// (reserved values, RD and vendor opcodes).
const OpcodeInfo* find_opcode(std::uint8_t value);

std::string_view to_string(Transport transport);

}  // namespace uroce::wire
