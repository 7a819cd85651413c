// The opcode table against the IBTA specification's: names, transports,
// extension headers.
#include <gtest/gtest.h>

#include "wire/opcode.h"

namespace uroce::wire {
namespace {

struct Row {
  std::uint8_t value;
  const char* name;
  Transport transport;
  std::uint16_t headers;
};

TEST(Opcode, MatchesProtocolTable) {
  const Row table[] = {
      {0x00, "SEND_FIRST", Transport::rc, kExtNone},
      {0x03, "SEND_LAST_WITH_IMMEDIATE", Transport::rc, kExtImmDt},
      {0x06, "RDMA_WRITE_FIRST", Transport::rc, kExtReth},
      {0x0B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", Transport::rc, kExtReth | kExtImmDt},
      {0x0C, "RDMA_READ_REQUEST", Transport::rc, kExtReth},
      {0x0D, "RDMA_READ_RESPONSE_FIRST", Transport::rc, kExtAeth},
      {0x0E, "RDMA_READ_RESPONSE_MIDDLE", Transport::rc, kExtNone},
      {0x10, "RDMA_READ_RESPONSE_ONLY", Transport::rc, kExtAeth},
      {0x11, "ACKNOWLEDGE", Transport::rc, kExtAeth},
      {0x12, "ATOMIC_ACKNOWLEDGE", Transport::rc, kExtAeth | kExtAtomicAckEth},
      {0x13, "COMPARE_SWAP", Transport::rc, kExtAtomicEth},
      {0x14, "FETCH_ADD", Transport::rc, kExtAtomicEth},
      {0x16, "SEND_LAST_WITH_INVALIDATE", Transport::rc, kExtIeth},
      {0x17, "SEND_ONLY_WITH_INVALIDATE", Transport::rc, kExtIeth},
      {0x20, "SEND_FIRST", Transport::uc, kExtNone},
      {0x2B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", Transport::uc, kExtReth | kExtImmDt},
      {0x64, "SEND_ONLY", Transport::ud, kExtDeth},
      {0x65, "SEND_ONLY_WITH_IMMEDIATE", Transport::ud, kExtDeth | kExtImmDt},
      {0x81, "CNP", Transport::cnp, kExtCnpReserved},
  };
  for (const Row& e : table) {
    const OpcodeInfo* op = find_opcode(e.value);
    ASSERT_NE(op, nullptr) << int(e.value);
    EXPECT_EQ(op->name, e.name);
    EXPECT_EQ(op->transport, e.transport);
    EXPECT_EQ(op->headers, e.headers) << op->name;
  }
}

TEST(Opcode, UcHasExactlyTheSendAndWriteFamilies) {
  for (std::uint8_t rc = 0; rc <= 0x17; ++rc) {
    const OpcodeInfo* rc_op = find_opcode(rc);
    const OpcodeInfo* uc_op = find_opcode(static_cast<std::uint8_t>(opcode::kUcBase + rc));
    bool send_or_write = rc <= 0x0B;
    EXPECT_EQ(uc_op != nullptr, send_or_write) << int(rc);
    if (uc_op) {
      EXPECT_EQ(uc_op->name, rc_op->name);
    }
  }
}

// XRC (IBTA Annex A14) has every RC opcode at 0xA0 + the RC value; its
// requests carry an XRCETH after the BTH, its responses do not.
TEST(Opcode, XrcHasEveryRcOpcodeAndItsRequestsNameAnXrcSrq) {
  for (std::uint8_t rc = 0; rc <= 0x1F; ++rc) {
    const OpcodeInfo* rc_op = find_opcode(rc);
    const OpcodeInfo* xrc_op = find_opcode(static_cast<std::uint8_t>(opcode::kXrcBase + rc));
    ASSERT_EQ(xrc_op != nullptr, rc_op != nullptr) << int(rc);
    if (xrc_op == nullptr) continue;
    EXPECT_EQ(xrc_op->transport, Transport::xrc);
    EXPECT_EQ(xrc_op->name, rc_op->name);
    EXPECT_EQ(xrc_op->kind, rc_op->kind);
    bool response = rc_op->kind == OpKind::acknowledge || rc_op->kind == OpKind::atomic_acknowledge ||
                    rc_op->kind == OpKind::rdma_read_response;
    EXPECT_EQ(xrc_op->headers, rc_op->headers | (response ? kExtNone : kExtXrceth)) << xrc_op->name;
  }
  EXPECT_EQ(find_opcode(0xA4)->name, "SEND_ONLY");
  EXPECT_EQ(find_opcode(0xB1)->kind, OpKind::acknowledge);
  EXPECT_EQ(find_opcode(0xB5), nullptr);
}

// IBTA 1.5's RDMA ATOMIC WRITE (0x1D; XRC 0xBD): a RETH and 8 bytes of
// payload, a request that is not on UC. FLUSH (0x1C) is not served.
TEST(Opcode, AtomicWriteIsAnRcAndXrcRequestWithAReth) {
  const OpcodeInfo* op = find_opcode(opcode::kRcAtomicWrite);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->name, "RDMA_ATOMIC_WRITE");
  EXPECT_EQ(op->transport, Transport::rc);
  EXPECT_EQ(op->headers, kExtReth);
  EXPECT_TRUE(op->carries_payload);
  EXPECT_TRUE(op->ecn_capable());
  EXPECT_EQ(find_opcode(0xBD)->headers, kExtReth | kExtXrceth);
  EXPECT_EQ(find_opcode(0x3D), nullptr);  // no UC atomic write
  EXPECT_EQ(find_opcode(0x1C), nullptr);
  EXPECT_TRUE(opcode::is_atomic_write(0xBD));
  EXPECT_FALSE(opcode::is_atomic_write(0x0A));
}

TEST(Opcode, ReservedAndOtherTransportsAreUnknown) {
  for (int value : {0x15, 0x18, 0x1C, 0x1F, 0x2C, 0x40, 0x60, 0x63, 0x66, 0x80, 0x82, 0xB5, 0xB8, 0xC0, 0xFF}) {
    EXPECT_EQ(find_opcode(static_cast<std::uint8_t>(value)), nullptr) << value;
  }
  int known = 0;
  for (int value = 0; value < 256; ++value) known += find_opcode(static_cast<std::uint8_t>(value)) != nullptr;
  EXPECT_EQ(known, 24 + 12 + 2 + 1 + 24);
}

}  // namespace
}  // namespace uroce::wire
