// The carriers' view of a datagram (wire/ip_datagram.h): it reads what the
// full parser reads on every frame of the public capture (frames built by an
// independent tool), respects IPv4 options, refuses what is broken, and the
// switch's CE mark keeps the checksum and the ICRC valid.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture/pcap_file.h"
#include "tests/support/frame_builder.h"
#include "wire/ethernet.h"
#include "wire/frame.h"
#include "wire/ip_datagram.h"
#include "wire/opcode.h"

namespace uroce::wire {
namespace {

// The IP datagram of an emitted frame, without its Ethernet header.
std::vector<std::uint8_t> datagram_of(const RoceFrameSpec& spec) {
  std::vector<std::uint8_t> frame = testing::emit(spec);
  return {frame.begin() + static_cast<std::ptrdiff_t>(spec.ethernet.header_length()), frame.end()};
}

std::vector<std::uint8_t> ipv4_write(Ecn ecn) {
  static const std::vector<std::uint8_t> payload(64, 0x5A);
  RoceFrameSpec spec = testing::frame_spec(testing::headers_for(opcode::kRcRdmaWriteOnly), payload, 4);
  std::get<Ipv4Repr>(spec.ip).ecn = ecn;
  return datagram_of(spec);
}

TEST(IpDatagram, ReadsWhatTheFullParserReadsOnThePublicCapture) {
  auto reader = capture::PcapReader::open(std::string(UROCE_VECTORS_DIR) + "/roce-public.pcap");
  ASSERT_TRUE(reader) << reader.error();
  int compared = 0;
  while (true) {
    auto record = reader->next();
    ASSERT_TRUE(record) << record.error();
    if (!*record) break;
    auto full = parse_roce_frame((*record)->bytes);
    if (!full) continue;  // the capture's broken frames: the full parser's business
    auto ethernet = EthernetView::new_checked((*record)->bytes);
    ASSERT_TRUE(ethernet);
    auto view = IpDatagramView::new_checked(ethernet->payload());
    ASSERT_TRUE(view);
    EXPECT_EQ(view->is_ipv4(), full->ip_version() == 4);
    EXPECT_EQ(view->source_port(), full->udp.src_port);
    EXPECT_EQ(view->destination_port(), full->udp.dst_port);
    EXPECT_EQ(view->bth_opcode(), full->packet.headers.bth.opcode);
    EXPECT_EQ(view->ip_header_length(), full->ip_header.size());
    if (view->is_ipv4()) {
      const auto& ip = std::get<Ipv4Repr>(full->ip);
      EXPECT_EQ(view->dscp(), ip.dscp);
      EXPECT_EQ(view->ecn(), ip.ecn);
      EXPECT_EQ(view->destination_gid(), gid_from_ipv4(ip.dst));
    } else {
      const auto& ip = std::get<Ipv6Repr>(full->ip);
      EXPECT_EQ(view->dscp(), ip.dscp);
      EXPECT_EQ(view->ecn(), ip.ecn);
      EXPECT_TRUE(std::equal(ip.dst.begin(), ip.dst.end(), view->destination_address().begin()));
    }
    auto transmit = describe_transmit(ethernet->payload());
    ASSERT_TRUE(transmit);
    std::uint8_t op = full->packet.headers.bth.opcode;
    EXPECT_EQ(transmit->kind, op == opcode::kRcAcknowledge ? TransmitKind::acknowledge
                              : op == opcode::kCnp         ? TransmitKind::cnp
                                                           : TransmitKind::data);
    EXPECT_EQ(transmit->udp_payload_offset, full->ip_header.size() + kUdpHeaderLength);
    ++compared;
  }
  EXPECT_GT(compared, 20);
}

// RFC 791 options lengthen the header (IHL 6 here: one 4-byte option). The
// view finds UDP after them, and the seal covers them, as the full parser's
// ICRC check does.
TEST(IpDatagram, RespectsIpv4Options) {
  std::vector<std::uint8_t> plain = ipv4_write(Ecn::ect0);
  std::vector<std::uint8_t> with_option(plain.begin(), plain.begin() + kIpv4HeaderLength);
  with_option.insert(with_option.end(), {0x01, 0x01, 0x01, 0x00});  // NOP, NOP, NOP, end of options
  with_option.insert(with_option.end(), plain.begin() + kIpv4HeaderLength, plain.end());
  with_option[0] = 0x46;
  store_be16(&with_option[2], static_cast<std::uint16_t>(with_option.size()));
  store_be16(&with_option[10], 0);
  store_be16(&with_option[10], ipv4_header_checksum(ByteSpan(with_option).first(24)));

  auto view = IpDatagramView::new_checked(with_option);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->ip_header_length(), 24u);
  EXPECT_EQ(view->destination_port(), kRoceV2Port);
  EXPECT_EQ(view->bth_opcode(), opcode::kRcRdmaWriteOnly);

  seal_roce_datagram(with_option);
  auto parsed = parse_roce_datagram(with_option);
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->icrc_ok);
}

TEST(IpDatagram, RefusesWhatIsNotAWholeIpAndUdpHeader) {
  std::vector<std::uint8_t> good = ipv4_write(Ecn::ect0);
  EXPECT_EQ(IpDatagramView::new_checked({}).error(), WireError::truncated);
  EXPECT_EQ(IpDatagramView::new_checked(ByteSpan(good).first(27)).error(), WireError::truncated);
  std::vector<std::uint8_t> bad = good;
  bad[0] = 0x55;
  EXPECT_EQ(IpDatagramView::new_checked(bad).error(), WireError::bad_version);
  bad[0] = 0x44;  // IHL 4: shorter than the fixed header
  EXPECT_EQ(IpDatagramView::new_checked(bad).error(), WireError::bad_length);
  bad = good;
  bad[9] = 6;  // TCP
  EXPECT_EQ(IpDatagramView::new_checked(bad).error(), WireError::not_roce);
  EXPECT_FALSE(describe_transmit(bad));
  EXPECT_FALSE(mark_congestion_experienced(bad));
}

TEST(IpDatagram, CongestionExperiencedKeepsTheChecksumAndTheIcrcValid) {
  for (Ecn ecn : {Ecn::ect0, Ecn::ect1}) {
    std::vector<std::uint8_t> datagram = ipv4_write(ecn);
    ASSERT_TRUE(mark_congestion_experienced(datagram));
    auto ipv4 = Ipv4View::new_checked(datagram);
    ASSERT_TRUE(ipv4);
    EXPECT_EQ(ipv4->ecn(), Ecn::ce);
    EXPECT_TRUE(ipv4->checksum_ok());
    auto parsed = parse_roce_datagram(datagram);
    ASSERT_TRUE(parsed);
    EXPECT_TRUE(parsed->icrc_ok);  // the ICRC masks the ECN bits
    EXPECT_FALSE(mark_congestion_experienced(datagram)) << "marked twice";
  }
  std::vector<std::uint8_t> not_ect = ipv4_write(Ecn::not_ect);
  std::vector<std::uint8_t> before = not_ect;
  EXPECT_FALSE(mark_congestion_experienced(not_ect));
  EXPECT_EQ(not_ect, before);

  static const std::vector<std::uint8_t> payload(64, 0x5A);
  RoceFrameSpec spec = testing::frame_spec(testing::headers_for(opcode::kRcSendOnly), payload, 6);
  std::get<Ipv6Repr>(spec.ip).ecn = Ecn::ect0;
  std::get<Ipv6Repr>(spec.ip).dscp = 26;
  std::vector<std::uint8_t> v6 = datagram_of(spec);
  ASSERT_TRUE(mark_congestion_experienced(v6));
  auto parsed = parse_roce_datagram(v6);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(std::get<Ipv6Repr>(parsed->ip).ecn, Ecn::ce);
  EXPECT_EQ(std::get<Ipv6Repr>(parsed->ip).dscp, 26);
  EXPECT_TRUE(parsed->icrc_ok);
}

// A UD receive's GRH area: RoCEv2 writes an IPv6 header there, or an IPv4
// header in its last 20 bytes.
TEST(IpDatagram, TheGrhAreaNamesTheSender) {
  std::vector<std::uint8_t> v4 = ipv4_write(Ecn::ect0);
  std::vector<std::uint8_t> area(40, 0xEE);  // the first 20 bytes are undefined
  std::copy_n(v4.begin(), kIpv4HeaderLength, area.begin() + 20);
  auto sender = parse_grh_area(area);
  ASSERT_TRUE(sender);
  auto view = IpDatagramView::new_checked(v4);
  ByteSpan source = view->source_address();
  EXPECT_EQ(sender->source, gid_from_ipv4({source[0], source[1], source[2], source[3]}));
  EXPECT_EQ(sender->traffic_class, view->traffic_class());

  static const std::vector<std::uint8_t> payload(8, 1);
  std::vector<std::uint8_t> v6 = datagram_of(testing::frame_spec(testing::headers_for(opcode::kUdSendOnly), payload, 6));
  sender = parse_grh_area(ByteSpan(v6).first(40));
  ASSERT_TRUE(sender);
  auto v6_view = IpDatagramView::new_checked(v6);
  EXPECT_TRUE(std::equal(sender->source.begin(), sender->source.end(), v6_view->source_address().begin()));

  std::vector<std::uint8_t> garbage(40, 0);
  EXPECT_FALSE(parse_grh_area(garbage));
  EXPECT_FALSE(parse_grh_area(ByteSpan(garbage).first(39)));
}

}  // namespace
}  // namespace uroce::wire
