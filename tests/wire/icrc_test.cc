// ICRC: CRC-32 backends, the masked fields that routers may change (ICRC still
// valid) and the covered fields (ICRC invalid), for IPv4 and IPv6, checked
// against a plain reference written from the RoCEv2 annex's rules (the
// IBTA's ICRC: CRC-32 over the masked headers and the payload).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "tests/support/frame_builder.h"
#include "wire/crc32.h"
#include "wire/frame.h"
#include "wire/icrc.h"

namespace uroce::wire {
namespace {

// The reference: copy the whole IP datagram, set the variant fields to ones,
// prefix eight 0xFF bytes and run zlib's crc32 once.
std::uint32_t reference_icrc(ByteSpan frame, std::size_t l2_length) {
  std::vector<std::uint8_t> bytes(frame.begin() + l2_length, frame.end() - kIcrcLength);
  std::size_t ip_length;
  if ((bytes[0] >> 4) == 4) {
    ip_length = (bytes[0] & 0xF) * 4u;
    bytes[1] = 0xFF;              // TOS
    bytes[8] = 0xFF;              // TTL
    bytes[10] = bytes[11] = 0xFF;  // header checksum
  } else {
    ip_length = 40;
    bytes[0] |= 0x0F;
    bytes[1] = bytes[2] = bytes[3] = 0xFF;  // traffic class, flow label
    bytes[7] = 0xFF;                        // hop limit
  }
  bytes[ip_length + 6] = bytes[ip_length + 7] = 0xFF;  // UDP checksum
  bytes[ip_length + 8 + 4] = 0xFF;                     // BTH FECN/BECN/reserved
  std::vector<std::uint8_t> input(8, 0xFF);
  input.insert(input.end(), bytes.begin(), bytes.end());
  return static_cast<std::uint32_t>(crc32(0, input.data(), static_cast<uInt>(input.size())));
}

bool icrc_ok(const std::vector<std::uint8_t>& frame) {
  auto parsed = parse_roce_frame(frame);
  EXPECT_TRUE(parsed) << to_string(parsed.error());
  return parsed && parsed->icrc_ok;
}

void refresh_ipv4_checksum(std::vector<std::uint8_t>& frame) {
  std::size_t ihl = (frame[kEthernetHeaderLength] & 0xF) * 4u;
  ByteSpan header(&frame[kEthernetHeaderLength], ihl);
  store_be16(&frame[kEthernetHeaderLength + ipv4_field::checksum], ipv4_header_checksum(header));
}

std::vector<std::uint8_t> sample_frame(int ip_version) {
  static const std::vector<std::uint8_t> payload(300, 0x5A);
  auto spec = testing::frame_spec(testing::headers_for(opcode::kRcRdmaWriteOnly, 9), payload, ip_version);
  return testing::emit(spec);
}

TEST(Crc32, BackendsGiveTheStandardCheckValue) {
  std::string_view check = "123456789";
  ByteSpan bytes(reinterpret_cast<const std::uint8_t*>(check.data()), check.size());
  EXPECT_EQ(crc32_update_isal(0, bytes), 0xCBF43926u);
  EXPECT_EQ(crc32_update_zlib(0, bytes), 0xCBF43926u);
  EXPECT_EQ(crc32_update(0, bytes), 0xCBF43926u);
}

TEST(Crc32, ContinuesAcrossAnySplit) {
  std::vector<std::uint8_t> data(777);
  std::mt19937 rng(7);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  std::uint32_t whole = crc32_update_zlib(0, data);
  for (std::size_t split = 0; split <= data.size(); split += 37) {
    ByteSpan all(data);
    EXPECT_EQ(crc32_update(crc32_update(0, all.first(split)), all.subspan(split)), whole) << split;
    EXPECT_EQ(crc32_update_isal(crc32_update_isal(0, all.first(split)), all.subspan(split)), whole);
  }
}

TEST(Icrc, EmittedFramesMatchTheReferenceForEveryOpcode) {
  std::vector<std::uint8_t> payload(1029);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i * 31);
  for (int ip_version : {4, 6}) {
    for (std::uint8_t opcode : testing::all_opcodes()) {
      const OpcodeInfo* op = find_opcode(opcode);
      for (std::size_t length : {0, 1, 2, 3, 4, 1029}) {
        if (!op->carries_payload && length > 0) continue;
        auto frame = testing::emit(testing::frame_spec(testing::headers_for(opcode), ByteSpan(payload).first(length),
                                                       ip_version, length == 3));
        std::size_t l2 = length == 3 ? 18 : 14;
        EXPECT_EQ(load_le32(&frame[frame.size() - 4]), reference_icrc(frame, l2)) << op->name;
        EXPECT_TRUE(icrc_ok(frame));
      }
    }
  }
}

TEST(Icrc, Ipv4MaskedFieldsDoNotMatter) {
  const std::size_t ip = kEthernetHeaderLength;
  const std::size_t bth = ip + kIpv4HeaderLength + kUdpHeaderLength;
  struct Change {
    const char* what;
    std::size_t offset;
    std::uint8_t value;
  };
  const Change changes[] = {
      {"ECN to CE", ip + ipv4_field::tos, 26 << 2 | 3},
      {"DSCP", ip + ipv4_field::tos, 0x00},
      {"TTL", ip + ipv4_field::ttl, 1},
      {"UDP checksum", ip + kIpv4HeaderLength + udp_field::checksum, 0x12},
      {"FECN", bth + bth_field::fecn_becn, 0x80},
      {"BECN", bth + bth_field::fecn_becn, 0x40},
      {"BTH reserved bits", bth + bth_field::fecn_becn, 0x3F},
  };
  for (const Change& change : changes) {
    auto frame = sample_frame(4);
    frame[change.offset] = change.value;
    refresh_ipv4_checksum(frame);
    EXPECT_TRUE(icrc_ok(frame)) << change.what;
  }
}

TEST(Icrc, Ipv4CoveredFieldsBreakIt) {
  const std::size_t ip = kEthernetHeaderLength;
  const std::size_t bth = ip + kIpv4HeaderLength + kUdpHeaderLength;
  struct Change {
    const char* what;
    std::size_t offset;
  };
  const Change changes[] = {
      {"IP identification", ip + ipv4_field::identification + 1},
      {"IP flags", ip + ipv4_field::flags_fragment},
      {"IP source", ip + ipv4_field::src + 3},
      {"IP destination", ip + ipv4_field::dst},
      {"UDP source port", ip + kIpv4HeaderLength + udp_field::src_port + 1},
      {"BTH P_Key", bth + bth_field::pkey},
      {"BTH dest QP", bth + bth_field::dest_qp + 2},
      {"BTH PSN", bth + bth_field::psn + 2},
      {"BTH AckReq", bth + bth_field::ack_req},
      {"RETH rkey", bth + kBthLength + RethRepr::kRkeyOffset},
      {"payload", bth + kBthLength + RethRepr::kLength + 100},
  };
  for (const Change& change : changes) {
    auto frame = sample_frame(4);
    frame[change.offset] ^= 0x40;
    refresh_ipv4_checksum(frame);
    EXPECT_FALSE(icrc_ok(frame)) << change.what;
  }
}

TEST(Icrc, Ipv6MaskedAndCoveredFields) {
  const std::size_t ip = kEthernetHeaderLength;
  for (std::size_t masked : {ip + 0, ip + 1, ip + 2, ip + 3, ip + std::size_t{ipv6_field::hop_limit}}) {
    auto frame = sample_frame(6);
    frame[masked] ^= (masked == ip) ? 0x0F : 0xFF;  // byte 0: only the traffic class nibble
    EXPECT_TRUE(icrc_ok(frame)) << masked - ip;
  }
  for (std::size_t covered : {ip + std::size_t{ipv6_field::src}, ip + std::size_t{ipv6_field::dst} + 15,
                              ip + kIpv6HeaderLength + kUdpHeaderLength + bth_field::psn}) {
    auto frame = sample_frame(6);
    frame[covered] ^= 1;
    EXPECT_FALSE(icrc_ok(frame)) << covered - ip;
  }
}

TEST(Icrc, Ipv4OptionsAreCovered) {
  auto plain = sample_frame(4);
  // Insert one word of options (NOP NOP NOP EOL) after the 20-byte header.
  std::vector<std::uint8_t> frame(plain.begin(), plain.begin() + 34);
  frame.insert(frame.end(), {0x01, 0x01, 0x01, 0x00});
  frame.insert(frame.end(), plain.begin() + 34, plain.end());
  frame[kEthernetHeaderLength] = 0x46;
  store_be16(&frame[kEthernetHeaderLength + ipv4_field::total_length],
             static_cast<std::uint16_t>(frame.size() - kEthernetHeaderLength));
  refresh_ipv4_checksum(frame);
  store_le32(&frame[frame.size() - 4], reference_icrc(frame, kEthernetHeaderLength));
  EXPECT_TRUE(icrc_ok(frame));
  frame[kEthernetHeaderLength + 21] = 0x07;  // change an option byte
  refresh_ipv4_checksum(frame);
  EXPECT_FALSE(icrc_ok(frame));
}

// A device whose engine leaves the ICRC unset seals a datagram it sends
// on the wire afterwards, from the datagram alone (the intra-host path).
TEST(Icrc, SealingAWholeDatagramGivesTheReferenceIcrc) {
  for (int ip_version : {4, 6}) {
    std::vector<std::uint8_t> frame = sample_frame(ip_version);
    std::uint32_t expected = reference_icrc(frame, kEthernetHeaderLength);
    MutableByteSpan datagram = MutableByteSpan(frame).subspan(kEthernetHeaderLength);
    std::fill_n(datagram.end() - kIcrcLength, kIcrcLength, 0);
    EXPECT_FALSE(icrc_ok(frame));
    seal_roce_datagram(datagram);
    EXPECT_EQ(load_le32(&*(datagram.end() - kIcrcLength)), expected) << "IPv" << ip_version;
    EXPECT_TRUE(icrc_ok(frame));
  }
}

}  // namespace
}  // namespace uroce::wire
