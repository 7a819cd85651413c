// The connection-manager MADs Linux sends over RoCEv2, captured from kernel
// Soft-RoCE in the qemu harness (tests/vectors/kernel-cm.md says how): the
// reference the CM on the wire (issue 15) must meet. Checks what the capture
// shows: UD SEND_ONLY to QP 1 with Q_Key 0x80010000 and a valid ICRC, a
// 256-byte MAD of class 7, rping's REQ (service ID from the TCP port space
// and its port, path fields, the rdma_cm header's addresses), then the REJ
// with reason "timeout" the kernel sends when nobody answers.
#include <gtest/gtest.h>

#include <vector>

#include "capture/pcap_file.h"
#include "common/bytes.h"
#include "wire/frame.h"
#include "wire/opcode.h"

namespace uroce {
namespace {

std::vector<std::vector<std::uint8_t>> frames() {
  std::vector<std::vector<std::uint8_t>> all;
  auto reader = capture::PcapReader::open(std::string(UROCE_VECTORS_DIR) + "/kernel-cm.pcap");
  if (!reader) return all;
  while (true) {
    auto record = reader->next();
    if (!record || !record->has_value()) break;
    all.emplace_back((*record)->bytes.begin(), (*record)->bytes.end());
  }
  return all;
}

TEST(KernelCmVector, ReqAndRejAsLinuxSendsThem) {
  auto captured = frames();
  ASSERT_EQ(captured.size(), 2u);
  std::vector<std::uint16_t> attributes;
  for (const auto& bytes : captured) {
    auto frame = wire::parse_roce_frame(bytes);
    ASSERT_TRUE(frame);
    EXPECT_TRUE(frame->icrc_ok);
    const wire::RocePacket& packet = frame->packet;
    EXPECT_EQ(packet.headers.bth.opcode, wire::opcode::kUdSendOnly);
    EXPECT_EQ(packet.headers.bth.dest_qp, 1u);
    EXPECT_EQ(packet.headers.bth.pkey, 0xFFFF);
    ASSERT_TRUE(packet.headers.deth);
    EXPECT_EQ(packet.headers.deth->qkey, 0x80010000u);
    EXPECT_EQ(packet.headers.deth->src_qp, 1u);
    ASSERT_EQ(packet.payload.size(), 256u);
    ByteSpan mad = packet.payload;
    EXPECT_EQ(mad[0], 1);     // base version
    EXPECT_EQ(mad[1], 0x07);  // class: communication management
    EXPECT_EQ(mad[2], 2);     // class version
    EXPECT_EQ(mad[3], 0x03);  // method: Send
    attributes.push_back(load_be16(mad.data() + 16));
  }
  EXPECT_EQ(attributes, (std::vector<std::uint16_t>{0x10, 0x12}));  // REQ, then REJ

  ByteSpan req = wire::parse_roce_frame(captured[0])->packet.payload.subspan(24);  // after the MAD header
  EXPECT_EQ(load_be64(req.data() + 8), 0x0000000001061C06u);  // RDMA_PS_TCP (0x0106) << 16 | port 7174
  EXPECT_EQ(load_be32(req.data() + 32) >> 8, 0x000011u);       // the local QPN
  EXPECT_EQ(req[40 + 3] >> 3, 20);                             // remote CM response timeout
  EXPECT_EQ(load_be16(req.data() + 48), 0xFFFF);               // P_Key
  EXPECT_EQ(req[50] >> 4, 3);                                  // path MTU 1024
  EXPECT_EQ(req[51] >> 4, 15);                                 // max CM retries
  EXPECT_EQ(load_be32(req.data() + 52), 0xFFFFFFFFu);          // permissive LIDs over RoCE
  EXPECT_EQ(load_be32(req.data() + 56 + 12), 0x0A4F2802u);     // primary local GID: 10.79.40.2
  EXPECT_EQ(load_be32(req.data() + 72 + 12), 0x0A4F2801u);     // primary remote GID: 10.79.40.1
  ByteSpan rdma_cm = req.subspan(140);                         // private data: the rdma_cm header first
  EXPECT_EQ(rdma_cm[0], 0);                                    // its version
  EXPECT_EQ(rdma_cm[1] >> 4, 4);                               // IPv4
  EXPECT_EQ(load_be32(rdma_cm.data() + 4 + 12), 0x0A4F2802u);  // source address
  EXPECT_EQ(load_be32(rdma_cm.data() + 20 + 12), 0x0A4F2801u); // destination address

  ByteSpan rej = wire::parse_roce_frame(captured[1])->packet.payload.subspan(24);
  EXPECT_EQ(load_be32(rej.data()), load_be32(req.data()));  // the REQ's local communication ID
  EXPECT_EQ(load_be16(rej.data() + 10), 4);                 // reason: timeout
}

}  // namespace
}  // namespace uroce
