// The opcode table (IBTA Vol. 1 section 9.2, XRC in Annex A14, RoCEv2 Annex
// A17 for the CNP, RDMA ATOMIC WRITE from release 1.5: an 8-byte WRITE ONLY
// that the responder places in one store).
#include "wire/opcode.h"

#include <array>
#include <optional>

namespace uroce::wire {
namespace {

struct RcOp {
  std::uint8_t value;
  std::string_view name;
  OpKind kind;
  Position position;
  std::uint16_t headers;
  bool carries_payload;
  bool also_uc;  // the SEND and RDMA WRITE families exist on UC too
};

using enum OpKind;
using enum Position;

constexpr std::array kRcOps = {
    RcOp{0x00, "SEND_FIRST", send, first, kExtNone, true, true},
    RcOp{0x01, "SEND_MIDDLE", send, middle, kExtNone, true, true},
    RcOp{0x02, "SEND_LAST", send, last, kExtNone, true, true},
    RcOp{0x03, "SEND_LAST_WITH_IMMEDIATE", send, last, kExtImmDt, true, true},
    RcOp{0x04, "SEND_ONLY", send, only, kExtNone, true, true},
    RcOp{0x05, "SEND_ONLY_WITH_IMMEDIATE", send, only, kExtImmDt, true, true},
    RcOp{0x06, "RDMA_WRITE_FIRST", rdma_write, first, kExtReth, true, true},
    RcOp{0x07, "RDMA_WRITE_MIDDLE", rdma_write, middle, kExtNone, true, true},
    RcOp{0x08, "RDMA_WRITE_LAST", rdma_write, last, kExtNone, true, true},
    RcOp{0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", rdma_write, last, kExtImmDt, true, true},
    RcOp{0x0A, "RDMA_WRITE_ONLY", rdma_write, only, kExtReth, true, true},
    RcOp{0x0B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", rdma_write, only, kExtReth | kExtImmDt, true, true},
    RcOp{0x0C, "RDMA_READ_REQUEST", rdma_read_request, only, kExtReth, false, false},
    RcOp{0x0D, "RDMA_READ_RESPONSE_FIRST", rdma_read_response, first, kExtAeth, true, false},
    RcOp{0x0E, "RDMA_READ_RESPONSE_MIDDLE", rdma_read_response, middle, kExtNone, true, false},
    RcOp{0x0F, "RDMA_READ_RESPONSE_LAST", rdma_read_response, last, kExtAeth, true, false},
    RcOp{0x10, "RDMA_READ_RESPONSE_ONLY", rdma_read_response, only, kExtAeth, true, false},
    RcOp{0x11, "ACKNOWLEDGE", acknowledge, only, kExtAeth, false, false},
    RcOp{0x12, "ATOMIC_ACKNOWLEDGE", atomic_acknowledge, only, kExtAeth | kExtAtomicAckEth, false, false},
    RcOp{0x13, "COMPARE_SWAP", compare_swap, only, kExtAtomicEth, false, false},
    RcOp{0x14, "FETCH_ADD", fetch_add, only, kExtAtomicEth, false, false},
    RcOp{0x16, "SEND_LAST_WITH_INVALIDATE", send, last, kExtIeth, true, false},
    RcOp{0x17, "SEND_ONLY_WITH_INVALIDATE", send, only, kExtIeth, true, false},
    RcOp{0x1D, "RDMA_ATOMIC_WRITE", rdma_write, only, kExtReth, true, false},
};

constexpr std::array<std::optional<OpcodeInfo>, 256> build_table() {
  std::array<std::optional<OpcodeInfo>, 256> table{};
  for (const RcOp& op : kRcOps) {
    table[op.value] = OpcodeInfo{op.value, op.name, Transport::rc, op.kind, op.position, op.headers,
                                 op.carries_payload};
    if (op.also_uc) {
      auto uc = static_cast<std::uint8_t>(opcode::kUcBase + op.value);
      table[uc] = OpcodeInfo{uc, op.name, Transport::uc, op.kind, op.position, op.headers,
                             op.carries_payload};
    }
    // XRC has every RC opcode; its requests name their XRC SRQ in an XRCETH.
    bool request = op.kind != rdma_read_response && op.kind != acknowledge && op.kind != atomic_acknowledge;
    auto xrc = static_cast<std::uint8_t>(opcode::kXrcBase + op.value);
    table[xrc] = OpcodeInfo{xrc, op.name, Transport::xrc, op.kind, op.position,
                            static_cast<std::uint16_t>(op.headers | (request ? kExtXrceth : kExtNone)),
                            op.carries_payload};
  }
  table[opcode::kUdSendOnly] =
      OpcodeInfo{opcode::kUdSendOnly, "SEND_ONLY", Transport::ud, send, only, kExtDeth, true};
  table[opcode::kUdSendOnlyWithImmediate] =
      OpcodeInfo{opcode::kUdSendOnlyWithImmediate, "SEND_ONLY_WITH_IMMEDIATE", Transport::ud, send,
                 only, kExtDeth | kExtImmDt, true};
  table[opcode::kCnp] =
      OpcodeInfo{opcode::kCnp, "CNP", Transport::cnp, cnp, only, kExtCnpReserved, false};
  return table;
}

constexpr auto kOpcodeTable = build_table();

}  // namespace

const OpcodeInfo* find_opcode(std::uint8_t value) {
  const auto& entry = kOpcodeTable[value];
  return entry ? &*entry : nullptr;
}

std::string_view to_string(Transport transport) {
  switch (transport) {
    case Transport::rc: return "RC";
    case Transport::uc: return "UC";
    case Transport::ud: return "UD";
    case Transport::cnp: return "CNP";
    case Transport::xrc: return "XRC";
  }
  return "?";
}

}  // namespace uroce::wire
