// The CM codec against the kernel: Linux's REQ and REJ (captured from kernel
// Soft-RoCE, tests/vectors/kernel-cm.pcap) parse to the fields the capture
// shows and emit back to the very bytes the kernel sent. Every message kind
// survives emit then parse with every field at its widest value and at a
// random one; what is not a CM MAD is refused with its reason.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "capture/pcap_file.h"
#include "cm/cm_messages.h"
#include "cm/cma_header.h"
#include "wire/frame.h"

namespace uroce::cm {
namespace {

std::vector<std::vector<std::uint8_t>> kernel_mads() {
  std::vector<std::vector<std::uint8_t>> mads;
  auto reader = capture::PcapReader::open(std::string(UROCE_VECTORS_DIR) + "/kernel-cm.pcap");
  if (!reader) return mads;
  while (true) {
    auto record = reader->next();
    if (!record || !record->has_value()) break;
    auto frame = wire::parse_roce_frame((*record)->bytes);
    if (frame) mads.emplace_back(frame->packet.payload.begin(), frame->packet.payload.end());
  }
  return mads;
}

Gid ipv4_gid(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  return Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a, b, c, d};
}

TEST(CmMessages, TheKernelsRequestParsesToWhatItSaysAndEmitsToItsBytes) {
  auto mads = kernel_mads();
  ASSERT_EQ(mads.size(), 2u);
  auto parsed = parse_cm_mad(mads[0]);
  ASSERT_TRUE(parsed) << to_string(parsed.error());
  ASSERT_TRUE(std::holds_alternative<ConnectRequest>(parsed->message));
  EXPECT_EQ(message_name(parsed->message), "REQ");
  const auto& req = std::get<ConnectRequest>(parsed->message);
  EXPECT_EQ(req.service_id, service_id(PortSpace::tcp, 7174));
  EXPECT_EQ(parse_service_id(req.service_id), (ServiceAddress{PortSpace::tcp, 7174}));
  EXPECT_EQ(req.local_qpn, 0x11u);
  EXPECT_EQ(req.transport, TransportType::rc);
  EXPECT_EQ(req.remote_cm_response_timeout, 20);
  EXPECT_EQ(req.local_cm_response_timeout, 20);
  EXPECT_EQ(req.retry_count, 7);
  EXPECT_EQ(req.rnr_retry_count, 7);
  EXPECT_EQ(req.max_cm_retries, 15);
  EXPECT_EQ(req.path_mtu, 3);
  EXPECT_EQ(req.pkey, 0xFFFF);
  EXPECT_EQ(req.primary.local_lid, 0xFFFF);
  EXPECT_EQ(req.primary.local_gid, ipv4_gid(10, 79, 40, 2));
  EXPECT_EQ(req.primary.remote_gid, ipv4_gid(10, 79, 40, 1));
  EXPECT_EQ(req.alternate, (CmPath{0, 0}));  // no alternate path over RoCE

  auto header = CmaHeader::parse(req.private_data);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->ip_version, 4);
  // rdma_cm's IPv4 address: 12 zero bytes first, not the GID's ::ffff: mapping
  EXPECT_EQ(header->source, (Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 79, 40, 2}));
  EXPECT_EQ(header->destination, (Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 79, 40, 1}));
  EXPECT_NE(header->source_port, 0);

  auto bytes = emit_cm_mad(*parsed);
  EXPECT_EQ(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), mads[0]);
}

TEST(CmMessages, TheKernelsTimeoutRejectParsesAndEmitsToItsBytes) {
  auto mads = kernel_mads();
  ASSERT_EQ(mads.size(), 2u);
  auto request = parse_cm_mad(mads[0]);
  auto parsed = parse_cm_mad(mads[1]);
  ASSERT_TRUE(request && parsed);
  ASSERT_TRUE(std::holds_alternative<ConnectReject>(parsed->message));
  const auto& rej = std::get<ConnectReject>(parsed->message);
  const auto& req = std::get<ConnectRequest>(request->message);
  EXPECT_EQ(rej.local_comm_id, req.local_comm_id);
  EXPECT_EQ(rej.reason, static_cast<std::uint16_t>(RejectReason::timeout));
  EXPECT_EQ(rej.message, MessageKind::other);  // what Linux says of a timed-out REQ
  EXPECT_EQ(parsed->transaction_id, request->transaction_id);  // one transaction
  EXPECT_EQ(load_be64(rej.ari.data()), req.local_ca_guid);  // timeout's ARI: the CA GUID
  auto bytes = emit_cm_mad(*parsed);
  EXPECT_EQ(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), mads[1]);
}

// A field's value, of whatever integer (or enum) type the field has.
struct Bits {
  std::uint64_t value;
  template <typename T>
  operator T() const {
    return static_cast<T>(value);
  }
};

// A message of the kind-th alternative, each field filled by fill(width).
template <typename Fill>
CmMessage random_message(int kind, Fill&& fill) {
  auto bytes = [&](auto& array) {
    for (auto& b : array) b = static_cast<std::uint8_t>(fill(8));
  };
  auto path = [&](CmPath& p) {
    p.local_lid = fill(16), p.remote_lid = fill(16), p.flow_label = fill(20), p.packet_rate = fill(6);
    p.traffic_class = fill(8), p.hop_limit = fill(8), p.service_level = fill(4), p.subnet_local = fill(1);
    p.local_ack_timeout = fill(5);
    bytes(p.local_gid), bytes(p.remote_gid);
  };
  switch (kind) {
    case 0: {
      ConnectRequest m;
      m.local_comm_id = fill(32), m.service_id = fill(64);
      m.local_ca_guid = fill(64), m.local_qkey = fill(32);
      m.local_qpn = fill(24), m.responder_resources = fill(8), m.local_eecn = fill(24), m.initiator_depth = fill(8);
      m.remote_eecn = fill(24), m.remote_cm_response_timeout = fill(5);
      m.transport = static_cast<TransportType>(fill(2)), m.end_to_end_flow_control = fill(1);
      m.starting_psn = fill(24), m.local_cm_response_timeout = fill(5), m.retry_count = fill(3);
      m.pkey = fill(16), m.path_mtu = fill(4), m.rdc_exists = fill(1), m.rnr_retry_count = fill(3);
      m.max_cm_retries = fill(4), m.srq = fill(1), m.extended_transport = fill(3);
      path(m.primary), path(m.alternate), bytes(m.private_data);
      return m;
    }
    case 1: {
      ReceiptAck m;
      m.local_comm_id = fill(32), m.remote_comm_id = fill(32);
      m.message = static_cast<MessageKind>(fill(2)), m.service_timeout = fill(5), bytes(m.private_data);
      return m;
    }
    case 2: {
      ConnectReject m;
      m.local_comm_id = fill(32), m.remote_comm_id = fill(32), m.message = static_cast<MessageKind>(fill(2));
      m.reject_info_length = fill(7), m.reason = fill(16), bytes(m.ari), bytes(m.private_data);
      return m;
    }
    case 3: {
      ConnectReply m;
      m.local_comm_id = fill(32), m.remote_comm_id = fill(32), m.local_qkey = fill(32), m.local_qpn = fill(24);
      m.local_eecn = fill(24), m.starting_psn = fill(24), m.responder_resources = fill(8);
      m.initiator_depth = fill(8), m.target_ack_delay = fill(5), m.failover_accepted = fill(2);
      m.end_to_end_flow_control = fill(1), m.rnr_retry_count = fill(3), m.srq = fill(1);
      m.local_ca_guid = fill(64), bytes(m.private_data);
      return m;
    }
    case 4: {
      ReadyToUse m;
      m.local_comm_id = fill(32), m.remote_comm_id = fill(32), bytes(m.private_data);
      return m;
    }
    case 5: {
      DisconnectRequest m;
      m.local_comm_id = fill(32), m.remote_comm_id = fill(32), m.remote_qpn = fill(24), bytes(m.private_data);
      return m;
    }
    case 6: {
      DisconnectReply m;
      m.local_comm_id = fill(32), m.remote_comm_id = fill(32), bytes(m.private_data);
      return m;
    }
    case 7: {
      SidrRequest m;
      m.request_id = fill(32), m.pkey = fill(16), m.service_id = fill(64);
      bytes(m.private_data);
      return m;
    }
    default: {
      SidrReply m;
      m.request_id = fill(32), m.status = static_cast<SidrStatus>(fill(8)), m.additional_info_length = fill(8);
      m.qpn = fill(24), m.service_id = fill(64), m.qkey = fill(32);
      bytes(m.additional_info), bytes(m.private_data);
      return m;
    }
  }
}

TEST(CmMessages, EveryKindSurvivesEmitThenParseAtItsWidestAndRandomValues) {
  std::mt19937_64 random(7);
  auto mask = [](int width) { return width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1; };
  auto widest = [&](int width) { return Bits{mask(width)}; };
  auto any = [&](int width) { return Bits{random() & mask(width)}; };
  for (int kind = 0; kind < 9; ++kind) {
    for (int round = 0; round < 50; ++round) {
      CmMad mad{random(), round == 0 ? random_message(kind, widest) : random_message(kind, any)};
      auto bytes = emit_cm_mad(mad);
      auto parsed = parse_cm_mad(bytes);
      ASSERT_TRUE(parsed) << to_string(parsed.error());
      EXPECT_EQ(parsed->message.index(), static_cast<std::size_t>(kind));
      EXPECT_TRUE(*parsed == mad) << message_name(mad.message) << " round " << round;
      EXPECT_EQ(static_cast<std::uint16_t>(attribute_of(mad.message)), load_be16(bytes.data() + 16));
    }
  }
}

TEST(CmMessages, WhatIsNotACmSendIsRefusedWithItsReason) {
  auto good = emit_cm_mad(CmMad{1, ReadyToUse{}});
  ASSERT_TRUE(parse_cm_mad(good));
  auto with = [&](std::size_t offset, std::uint8_t value) {
    auto bytes = good;
    bytes[offset] = value;
    auto parsed = parse_cm_mad(bytes);
    return parsed ? std::string("parsed") : std::string(to_string(parsed.error()));
  };
  EXPECT_EQ(with(0, 2), "not_cm");             // base version
  EXPECT_EQ(with(1, 0x04), "not_cm");          // the SA's class
  EXPECT_EQ(with(2, 1), "bad_class_version");
  EXPECT_EQ(with(3, 0x01), "bad_method");      // Get
  EXPECT_EQ(with(17, 0x19), "unknown_attribute");  // LAP
  EXPECT_EQ(with(17, 0x01), "unknown_attribute");  // ClassPortInfo
  EXPECT_EQ(to_string(parse_cm_mad(ByteSpan(good.data(), 255)).error()), "wrong_length");
  EXPECT_EQ(to_string(parse_cm_mad(ByteSpan()).error()), "wrong_length");
}

TEST(CmaHeader, RefusesUnknownVersionsAndShortDataAndRoundTrips) {
  CmaHeader header;
  header.ip_version = 6;
  header.source_port = 40000;
  header.source[0] = 0xFE;
  header.destination[15] = 1;
  std::array<std::uint8_t, 56> data{};
  header.emit(data);
  EXPECT_EQ(CmaHeader::parse(data), header);
  EXPECT_FALSE(CmaHeader::parse(ByteSpan(data.data(), 35)));
  data[1] = 0x50;  // IP version 5
  EXPECT_FALSE(CmaHeader::parse(data));
  data[1] = 0x40, data[0] = 1;  // header version 1
  EXPECT_FALSE(CmaHeader::parse(data));
  EXPECT_EQ(parse_service_id(service_id(PortSpace::udp, 7175)), (ServiceAddress{PortSpace::udp, 7175}));
  EXPECT_FALSE(parse_service_id(0x0000000002061C06));  // not rdma_cm's prefix
  EXPECT_FALSE(parse_service_id(0x0000000001991C06));  // no such port space
}

}  // namespace
}  // namespace uroce::cm
