// Round trips and bounds checks for each header: repr -> bytes -> repr.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "wire/arp.h"
#include "wire/bth.h"
#include "wire/ethernet.h"
#include "wire/ext_headers.h"
#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/udp.h"

namespace uroce::wire {
namespace {

TEST(Ethernet, RoundTripsWithAndWithoutVlan) {
  for (bool tagged : {false, true}) {
    EthernetRepr repr{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}, std::nullopt, kEthertypeIpv6};
    if (tagged) repr.vlan = VlanTag{5, true, 0xABC};
    std::vector<std::uint8_t> bytes(repr.header_length());
    repr.emit(bytes);
    auto view = EthernetView::new_checked(bytes);
    ASSERT_TRUE(view);
    EXPECT_EQ(view->header_length(), repr.header_length());
    EXPECT_EQ(EthernetRepr::parse(*view), repr);
  }
}

TEST(Ethernet, RejectsShortHeaderAndShortVlanTag) {
  std::vector<std::uint8_t> bytes(13, 0);
  EXPECT_EQ(EthernetView::new_checked(bytes).error(), WireError::truncated);
  bytes = std::vector<std::uint8_t>(16, 0);
  bytes[12] = 0x81;  // 802.1Q tag announced, but the inner ethertype is cut off
  bytes[13] = 0x00;
  EXPECT_EQ(EthernetView::new_checked(bytes).error(), WireError::truncated);
}

TEST(Arp, RoundTripsRequestAndReply) {
  ArpRepr request{ArpOperation::request, {2, 0, 0, 0, 0, 7}, {10, 0, 0, 7}, {}, {10, 0, 0, 9}};
  std::array<std::uint8_t, kArpLength> bytes{};
  request.emit(bytes);
  EXPECT_EQ(bytes[7], 1);  // operation 1: request
  auto parsed = ArpRepr::parse(bytes);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, request);
  ArpRepr reply{ArpOperation::reply, {2, 0, 0, 0, 0, 9}, {10, 0, 0, 9}, {2, 0, 0, 0, 0, 7}, {10, 0, 0, 7}};
  reply.emit(bytes);
  EXPECT_EQ(*ArpRepr::parse(bytes), reply);
}

TEST(Arp, RejectsShortOtherProtocolsAndUnknownOperations) {
  std::array<std::uint8_t, kArpLength> bytes{};
  ArpRepr{}.emit(bytes);
  EXPECT_EQ(ArpRepr::parse(ByteSpan(bytes).first(kArpLength - 1)).error(), WireError::truncated);
  auto other = bytes;
  other[3] = 0xDD;  // protocol 0x86DD
  EXPECT_EQ(ArpRepr::parse(other).error(), WireError::bad_header);
  auto operation = bytes;
  operation[7] = 3;  // RARP request
  EXPECT_EQ(ArpRepr::parse(operation).error(), WireError::bad_header);
}

TEST(Ipv4, RoundTripsAndComputesChecksum) {
  Ipv4Repr repr;
  repr.dscp = 46;
  repr.ecn = Ecn::ce;
  repr.identification = 0x1234;
  repr.ttl = 17;
  repr.src = {192, 0, 2, 1};
  repr.dst = {198, 51, 100, 7};
  repr.payload_length = 100;
  std::vector<std::uint8_t> bytes(kIpv4HeaderLength + 100);
  repr.emit(bytes);
  auto view = Ipv4View::new_checked(bytes);
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->checksum_ok());
  EXPECT_TRUE(view->dont_fragment());
  auto parsed = Ipv4Repr::parse(*view);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, repr);
  bytes[ipv4_field::ttl] ^= 1;
  EXPECT_FALSE(Ipv4View::new_checked(bytes)->checksum_ok());
}

TEST(Ipv4, RejectsBadVersionLengthsAndFragments) {
  Ipv4Repr repr;
  repr.payload_length = 8;
  std::vector<std::uint8_t> bytes(28);
  repr.emit(bytes);
  std::vector<std::uint8_t> broken = bytes;
  broken[0] = 0x65;
  EXPECT_EQ(Ipv4View::new_checked(broken).error(), WireError::bad_version);
  broken = bytes;
  broken[0] = 0x44;  // IHL 4 words
  EXPECT_EQ(Ipv4View::new_checked(broken).error(), WireError::bad_header);
  broken = bytes;
  broken[0] = 0x4F;  // IHL 60 bytes, only 28 present
  EXPECT_EQ(Ipv4View::new_checked(broken).error(), WireError::truncated);
  broken = bytes;
  store_be16(&broken[ipv4_field::total_length], 29);
  EXPECT_EQ(Ipv4View::new_checked(broken).error(), WireError::truncated);
  store_be16(&broken[ipv4_field::total_length], 19);
  EXPECT_EQ(Ipv4View::new_checked(broken).error(), WireError::bad_length);
  broken = bytes;
  broken[ipv4_field::flags_fragment] |= 0x20;  // more fragments
  EXPECT_EQ(Ipv4Repr::parse(*Ipv4View::new_checked(broken)).error(), WireError::fragmented);
  broken = bytes;
  broken[ipv4_field::flags_fragment + 1] = 1;  // offset 8
  EXPECT_EQ(Ipv4Repr::parse(*Ipv4View::new_checked(broken)).error(), WireError::fragmented);
  EXPECT_EQ(Ipv4View::new_checked(ByteSpan(bytes).first(19)).error(), WireError::truncated);
}

TEST(Ipv4, PayloadStopsAtTotalLength) {
  Ipv4Repr repr;
  repr.payload_length = 4;
  std::vector<std::uint8_t> bytes(kIpv4HeaderLength + 4 + 10, 0xEE);  // Ethernet padding after
  repr.emit(bytes);
  EXPECT_EQ(Ipv4View::new_checked(bytes)->payload().size(), 4u);
}

TEST(Ipv6, RoundTrips) {
  Ipv6Repr repr;
  repr.dscp = 63;
  repr.ecn = Ecn::ect1;
  repr.flow_label = 0xFFFFF;
  repr.hop_limit = 3;
  repr.src[15] = 1;
  repr.dst[0] = 0xfe;
  repr.payload_length = 12;
  std::vector<std::uint8_t> bytes(kIpv6HeaderLength + 12);
  repr.emit(bytes);
  auto view = Ipv6View::new_checked(bytes);
  ASSERT_TRUE(view);
  EXPECT_EQ(Ipv6Repr::parse(*view), repr);
  EXPECT_EQ(Ipv6View::new_checked(ByteSpan(bytes).first(kIpv6HeaderLength + 11)).error(), WireError::truncated);
  bytes[0] = 0x45;
  EXPECT_EQ(Ipv6View::new_checked(bytes).error(), WireError::bad_version);
}

TEST(Udp, RoundTripsAndChecksLength) {
  UdpRepr repr{0xC123, kRoceV2Port, 0, 16};
  std::vector<std::uint8_t> bytes(kUdpHeaderLength + 16);
  repr.emit(bytes);
  auto view = UdpView::new_checked(bytes);
  ASSERT_TRUE(view);
  EXPECT_EQ(UdpRepr::parse(*view), repr);
  EXPECT_EQ(view->payload().size(), 16u);
  EXPECT_EQ(UdpView::new_checked(ByteSpan(bytes).first(20)).error(), WireError::truncated);
  store_be16(&bytes[udp_field::length], 7);
  EXPECT_EQ(UdpView::new_checked(bytes).error(), WireError::bad_length);
}

TEST(Udp, SourcePortsStayInRoceRangeAndSpreadQps) {
  // ECMP entropy: consecutive QPNs (as engines hand them out) must land on
  // many different ports, all in 0xC000..0xFFFF.
  std::set<std::uint16_t> ports;
  for (std::uint32_t qpn = 0x1000; qpn < 0x1000 + 1000; ++qpn) {
    std::uint16_t port = roce_source_port(qpn);
    EXPECT_GE(port, kRoceSourcePortMin);
    ports.insert(port);
  }
  EXPECT_GT(ports.size(), 950u);
  EXPECT_GE(roce_source_port(0xFFFFFF), kRoceSourcePortMin);
}

TEST(Bth, RoundTripsEveryField) {
  BthRepr repr{0x0B, true, true, 3, 0x8001, true, true, 0xABCDEF, true, 0xFFFFFF, true};
  std::vector<std::uint8_t> bytes(kBthLength);
  repr.emit(bytes);
  auto view = BthView::new_checked(bytes);
  ASSERT_TRUE(view);
  EXPECT_EQ(BthRepr::parse(*view).value(), repr);
  EXPECT_EQ(bytes[bth_field::flags], 0xF0);
  EXPECT_EQ(bytes[bth_field::ack_req], 0xC0);  // AckReq, then uroce's place-early bit
}

TEST(Bth, RejectsShortHeaderAndNonZeroTransportVersion) {
  std::vector<std::uint8_t> bytes(kBthLength, 0);
  EXPECT_EQ(BthView::new_checked(ByteSpan(bytes).first(11)).error(), WireError::truncated);
  bytes[bth_field::flags] = 0x01;
  EXPECT_EQ(BthRepr::parse(*BthView::new_checked(bytes)).error(), WireError::bad_version);
}

template <typename Repr>
void expect_round_trip(const Repr& repr) {
  std::vector<std::uint8_t> bytes(Repr::kLength, 0xAA);
  repr.emit(bytes);
  EXPECT_EQ(Repr::parse(bytes), repr);
}

TEST(ExtensionHeaders, RoundTripWithFullWidthValues) {
  expect_round_trip(RethRepr{0xFEDCBA9876543210ull, 0xFFFFFFFF, 0x80000001});
  expect_round_trip(AethRepr{0xFF, 0xFFFFFF});
  expect_round_trip(AtomicEthRepr{0xFFFFFFFFFFFFFFF8ull, 0x01020304, 0xFFFFFFFFFFFFFFFFull, 1});
  expect_round_trip(AtomicAckEthRepr{0x8000000000000000ull});
  expect_round_trip(ImmDtRepr{0x01020304});
  expect_round_trip(IethRepr{0xA5A5A5A5});
  expect_round_trip(DethRepr{0x80010000, 0xFFFFFF});
  expect_round_trip(XrcethRepr{0xFFFFFF});
}

// The XRCETH: a reserved byte, then the 24-bit XRC SRQ number, big-endian.
TEST(ExtensionHeaders, XrcethIsAReservedByteAndTheSrqNumber) {
  std::vector<std::uint8_t> bytes(XrcethRepr::kLength, 0xAA);
  XrcethRepr{0x123456}.emit(bytes);
  EXPECT_EQ(bytes, (std::vector<std::uint8_t>{0x00, 0x12, 0x34, 0x56}));
  bytes[0] = 0xFF;  // the reserved byte is ignored on receipt
  EXPECT_EQ(XrcethRepr::parse(bytes).srqn, 0x123456u);
}

TEST(ExtensionHeaders, DethReservedByteIsZeroOnEmit) {
  std::vector<std::uint8_t> bytes(DethRepr::kLength, 0xAA);
  DethRepr{1, 2}.emit(bytes);
  EXPECT_EQ(bytes[4], 0);
}

TEST(Aeth, SyndromeFieldsSplitAndJoin) {
  std::uint8_t nak = make_syndrome(AckType::nak, static_cast<std::uint8_t>(NakCode::remote_access_error));
  EXPECT_EQ(nak, 0x62);
  EXPECT_EQ(aeth_ack_type(nak), AckType::nak);
  EXPECT_EQ(aeth_value(nak), 2);
  EXPECT_EQ(aeth_ack_type(0x3F), AckType::rnr_nak);
  EXPECT_EQ(aeth_ack_type(kCreditNoLimit), AckType::ack);
}

}  // namespace
}  // namespace uroce::wire
