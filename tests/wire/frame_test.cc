// Whole-frame emit/parse: round trips for every opcode, and a clear error (never
// a crash) for every kind of broken frame.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/frame_builder.h"
#include "wire/frame.h"

namespace uroce::wire {
namespace {

std::vector<std::uint8_t> make_payload(std::size_t length) {
  std::vector<std::uint8_t> payload(length);
  for (std::size_t i = 0; i < length; ++i) payload[i] = static_cast<std::uint8_t>(i ^ (i >> 8));
  return payload;
}

std::vector<std::uint8_t> write_only_frame(std::size_t payload_length = 64) {
  static std::vector<std::uint8_t> payload;
  payload = make_payload(payload_length);
  return testing::emit(testing::frame_spec(testing::headers_for(opcode::kRcRdmaWriteOnly), payload));
}

TEST(Frame, RoundTripsEveryOpcodeOverIpv4AndIpv6WithAndWithoutVlan) {
  for (std::uint8_t opcode : testing::all_opcodes()) {
    const OpcodeInfo* op = find_opcode(opcode);
    for (int ip_version : {4, 6}) {
      for (bool vlan : {false, true}) {
        for (std::size_t length : {0, 1, 2, 3, 4, 5, 255, 256, 4096}) {
          if (!op->carries_payload && length > 0) continue;
          auto payload = make_payload(length);
          TransportHeaders headers = testing::headers_for(opcode, static_cast<std::uint32_t>(length + 3));
          RoceFrameSpec spec = testing::frame_spec(headers, payload, ip_version, vlan);
          auto bytes = testing::emit(spec);

          auto frame = parse_roce_frame(bytes);
          ASSERT_TRUE(frame) << op->name << ": " << to_string(frame.error());
          headers.bth.pad_count = static_cast<std::uint8_t>((4 - length % 4) % 4);
          EXPECT_EQ(frame->packet.headers, headers) << op->name;
          EXPECT_EQ(frame->packet.op, op);
          EXPECT_EQ(std::vector<std::uint8_t>(frame->packet.payload.begin(), frame->packet.payload.end()), payload);
          EXPECT_EQ(frame->ethernet, spec.ethernet);
          EXPECT_EQ(frame->udp.src_port, spec.udp.src_port);
          EXPECT_EQ(frame->udp.dst_port, kRoceV2Port);
          EXPECT_EQ(frame->ip_version(), ip_version);
          EXPECT_TRUE(frame->icrc_ok);
          EXPECT_EQ((bytes.size() - spec.ethernet.header_length()) % 4, 0u) << "IP datagram is 4-byte aligned";
        }
      }
    }
  }
}

TEST(Frame, Ipv4HeaderFieldsSurviveTheRoundTrip) {
  auto payload = make_payload(10);
  RoceFrameSpec spec = testing::frame_spec(testing::headers_for(opcode::kRcSendOnly), payload, 4);
  auto frame = parse_roce_frame(testing::emit(spec));
  ASSERT_TRUE(frame);
  Ipv4Repr expected = std::get<Ipv4Repr>(spec.ip);
  expected.payload_length = static_cast<std::uint16_t>(kUdpHeaderLength + kBthLength + 12 + 4);
  EXPECT_EQ(std::get<Ipv4Repr>(frame->ip), expected);
}

TEST(Frame, EveryTruncationIsReportedAsTruncated) {
  for (int ip_version : {4, 6}) {
    auto payload = make_payload(33);
    auto bytes = testing::emit(
        testing::frame_spec(testing::headers_for(opcode::kRcRdmaWriteOnlyWithImmediate), payload, ip_version, true));
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
      auto frame = parse_roce_frame(ByteSpan(bytes).first(cut));
      ASSERT_FALSE(frame) << cut;
      EXPECT_EQ(frame.error(), WireError::truncated) << cut;
    }
  }
}

TEST(Frame, EthernetPaddingAndFcsAfterTheDatagramAreIgnored) {
  auto payload = make_payload(0);
  auto bytes = testing::emit(testing::frame_spec(testing::headers_for(opcode::kRcSendOnly), payload));
  ASSERT_LT(bytes.size(), 60u);
  bytes.resize(64, 0);  // pad to the Ethernet minimum plus a 4-byte FCS
  auto frame = parse_roce_frame(bytes);
  ASSERT_TRUE(frame);
  EXPECT_TRUE(frame->icrc_ok);
  EXPECT_TRUE(frame->packet.payload.empty());
}

TEST(Frame, OtherTrafficIsNotRoce) {
  auto arp = write_only_frame();
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(parse_roce_frame(arp).error(), WireError::not_roce);

  auto tcp = write_only_frame();
  tcp[kEthernetHeaderLength + ipv4_field::protocol] = 6;
  EXPECT_EQ(parse_roce_frame(tcp).error(), WireError::not_roce);

  auto other_port = write_only_frame();
  other_port[kEthernetHeaderLength + kIpv4HeaderLength + udp_field::dst_port + 1] ^= 1;
  EXPECT_EQ(parse_roce_frame(other_port).error(), WireError::not_roce);

  auto payload = make_payload(4);
  auto v6 = testing::emit(testing::frame_spec(testing::headers_for(opcode::kRcSendOnly), payload, 6));
  v6[kEthernetHeaderLength + ipv6_field::next_header] = 0;  // hop-by-hop options
  EXPECT_EQ(parse_roce_frame(v6).error(), WireError::not_roce);
}

TEST(Frame, VersionErrors) {
  auto ip_version = write_only_frame();
  ip_version[kEthernetHeaderLength] = 0x65;
  EXPECT_EQ(parse_roce_frame(ip_version).error(), WireError::bad_version);

  auto tver = write_only_frame();
  tver[kEthernetHeaderLength + kIpv4HeaderLength + kUdpHeaderLength + bth_field::flags] |= 0x01;
  EXPECT_EQ(parse_roce_frame(tver).error(), WireError::bad_version);
}

TEST(Frame, UnknownOpcode) {
  for (int value : {0x15, 0x1C, 0x40, 0xFF}) {
    auto frame = write_only_frame();
    frame[kEthernetHeaderLength + kIpv4HeaderLength + kUdpHeaderLength + bth_field::opcode] = static_cast<std::uint8_t>(value);
    EXPECT_EQ(parse_roce_frame(frame).error(), WireError::unknown_opcode) << int(value);
  }
}

TEST(Frame, Fragment) {
  auto frame = write_only_frame();
  frame[kEthernetHeaderLength + ipv4_field::flags_fragment] = 0x20;
  EXPECT_EQ(parse_roce_frame(frame).error(), WireError::fragmented);
}

TEST(Packet, LengthRules) {
  std::vector<std::uint8_t> packet(kBthLength + 8 + kIcrcLength, 0);
  packet[bth_field::opcode] = opcode::kRcSendOnly;
  EXPECT_TRUE(parse_roce_packet(packet));
  EXPECT_EQ(parse_roce_packet(packet)->payload.size(), 8u);

  packet[bth_field::flags] = 3 << 4;  // pad 3 of 8 bytes: fine
  EXPECT_EQ(parse_roce_packet(packet)->payload.size(), 5u);

  std::vector<std::uint8_t> short_body(kBthLength + 0 + kIcrcLength, 0);
  short_body[bth_field::opcode] = opcode::kRcSendOnly;
  short_body[bth_field::flags] = 1 << 4;  // pad 1 but no bytes at all
  EXPECT_EQ(parse_roce_packet(short_body).error(), WireError::bad_length);

  std::vector<std::uint8_t> unaligned(kBthLength + 5 + kIcrcLength, 0);
  unaligned[bth_field::opcode] = opcode::kRcSendOnly;
  EXPECT_EQ(parse_roce_packet(unaligned).error(), WireError::bad_length);

  std::vector<std::uint8_t> ack_with_payload(kBthLength + AethRepr::kLength + 4 + kIcrcLength, 0);
  ack_with_payload[bth_field::opcode] = opcode::kRcAcknowledge;
  EXPECT_EQ(parse_roce_packet(ack_with_payload).error(), WireError::bad_length);

  std::vector<std::uint8_t> read_missing_reth(kBthLength + 8 + kIcrcLength, 0);
  read_missing_reth[bth_field::opcode] = opcode::kRcRdmaReadRequest;
  EXPECT_EQ(parse_roce_packet(read_missing_reth).error(), WireError::truncated);

  std::vector<std::uint8_t> no_icrc(kBthLength + 2, 0);
  EXPECT_EQ(parse_roce_packet(no_icrc).error(), WireError::truncated);
}

TEST(Emit, RejectsHeadersThatDoNotMatchTheOpcode) {
  std::vector<std::uint8_t> out(256);
  TransportHeaders missing = testing::headers_for(opcode::kRcRdmaWriteOnly);
  missing.reth.reset();
  EXPECT_EQ(emit_roce_packet(missing, {}, out).error(), WireError::bad_header);

  TransportHeaders extra = testing::headers_for(opcode::kRcSendOnly);
  extra.deth = DethRepr{1, 2};
  EXPECT_EQ(emit_roce_packet(extra, {}, out).error(), WireError::bad_header);

  TransportHeaders unknown;
  unknown.bth.opcode = 0x15;
  EXPECT_EQ(emit_roce_packet(unknown, {}, out).error(), WireError::unknown_opcode);

  std::vector<std::uint8_t> payload(4, 1);
  EXPECT_EQ(emit_roce_packet(testing::headers_for(opcode::kRcAcknowledge), payload, out).error(),
            WireError::bad_length);
  std::vector<std::uint8_t> tiny(kBthLength + 4 + 3);
  EXPECT_EQ(emit_roce_packet(testing::headers_for(opcode::kRcSendOnly), payload, tiny).error(),
            WireError::buffer_too_small);
}

TEST(Emit, PadsAndZeroesReservedBytes) {
  std::vector<std::uint8_t> out(128, 0xEE);
  std::vector<std::uint8_t> payload = {1, 2, 3, 4, 5};
  auto length = emit_roce_packet(testing::headers_for(opcode::kRcSendOnly), payload, out);
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, kBthLength + 8 + kIcrcLength);
  EXPECT_EQ((out[bth_field::flags] >> 4) & 3, 3);
  for (std::size_t i = kBthLength + 5; i < *length; ++i) EXPECT_EQ(out[i], 0) << i;

  auto cnp_length = emit_roce_packet(testing::headers_for(opcode::kCnp), {}, out);
  ASSERT_TRUE(cnp_length);
  EXPECT_EQ(*cnp_length, kBthLength + kCnpReservedLength + kIcrcLength);
  for (std::size_t i = kBthLength; i < *cnp_length; ++i) EXPECT_EQ(out[i], 0) << i;
}

}  // namespace
}  // namespace uroce::wire
