// The Communication Manager's messages (IBTA Vol 1, chapter 12): what two
// ports exchange to connect a pair of QPs (REQ, REP, RTU, REJ, MRA), to
// disconnect it (DREQ, DREP), and to look up a UD service (SIDR_REQ,
// SIDR_REP). Each is the 232 bytes after a MAD header (mad.h). Field
// offsets are the spec's tables, checked against the kernel's REQ and REJ
// in tests/vectors/kernel-cm.pcap. parse_cm_mad refuses what is not a CM
// Send of a known attribute; every field is read within the 256 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <variant>

#include "cm/mad.h"
#include "common/bytes.h"
#include "uroce/expected.h"

namespace uroce::cm {

enum class Attribute : std::uint16_t {
  connect_request = 0x10,   // REQ
  receipt_ack = 0x11,       // MRA: message receipt acknowledged, answer later
  connect_reject = 0x12,    // REJ
  connect_reply = 0x13,     // REP
  ready_to_use = 0x14,      // RTU
  disconnect_request = 0x15,  // DREQ
  disconnect_reply = 0x16,    // DREP
  sidr_request = 0x17,
  sidr_reply = 0x18,
};

// REJ's reason field (Table 109), the ones a RoCE CM meets.
enum class RejectReason : std::uint16_t {
  no_qp = 1,
  no_resources = 3,
  timeout = 4,
  unsupported_request = 5,
  invalid_comm_id = 6,
  invalid_service_id = 8,
  invalid_transport_type = 9,
  stale_connection = 10,
  invalid_gid = 12,
  invalid_mtu = 26,
  consumer_reject = 28,
  invalid_class_version = 31,
  vendor_option_not_supported = 35,  // rdma_reject_ece: the peer's ECE is refused
};

// The transport service type of a REQ (2 bits).
enum class TransportType : std::uint8_t { rc = 0, uc = 1, rd = 2, extended = 3 };

// Which message an MRA or REJ is about (2 bits).
enum class MessageKind : std::uint8_t { request = 0, reply = 1, other = 2 };

using Gid = std::array<std::uint8_t, 16>;

// A path as the REQ describes it (primary and alternate have one layout).
struct CmPath {
  static constexpr std::size_t kLength = 44;
  std::uint16_t local_lid = 0xFFFF;  // RoCE: the permissive LID
  std::uint16_t remote_lid = 0xFFFF;
  Gid local_gid{};
  Gid remote_gid{};
  std::uint32_t flow_label = 0;  // 20 bits
  std::uint8_t packet_rate = 0;  // 6 bits
  std::uint8_t traffic_class = 0;
  std::uint8_t hop_limit = 0;
  std::uint8_t service_level = 0;  // 4 bits
  bool subnet_local = false;
  std::uint8_t local_ack_timeout = 0;  // 5 bits: 4.096 us * 2^value

  bool operator==(const CmPath&) const = default;
};

struct ConnectRequest {
  std::uint32_t local_comm_id = 0;
  std::uint64_t service_id = 0;
  std::uint64_t local_ca_guid = 0;
  std::uint32_t local_qkey = 0;
  std::uint32_t local_qpn = 0;  // 24 bits
  std::uint8_t responder_resources = 0;
  std::uint32_t local_eecn = 0;  // 24 bits
  std::uint8_t initiator_depth = 0;
  std::uint32_t remote_eecn = 0;  // 24 bits
  std::uint8_t remote_cm_response_timeout = 0;  // 5 bits: 4.096 us * 2^value
  TransportType transport = TransportType::rc;
  bool end_to_end_flow_control = false;
  std::uint32_t starting_psn = 0;  // 24 bits
  std::uint8_t local_cm_response_timeout = 0;  // 5 bits
  std::uint8_t retry_count = 0;    // 3 bits
  std::uint16_t pkey = 0xFFFF;
  std::uint8_t path_mtu = 0;  // 4 bits, IBA encoding (3: 1024)
  bool rdc_exists = false;
  std::uint8_t rnr_retry_count = 0;  // 3 bits
  std::uint8_t max_cm_retries = 0;   // 4 bits
  bool srq = false;
  std::uint8_t extended_transport = 0;  // 3 bits
  CmPath primary;
  CmPath alternate{0, 0};
  std::array<std::uint8_t, 92> private_data{};

  bool operator==(const ConnectRequest&) const = default;
};

struct ReceiptAck {  // MRA
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  MessageKind message = MessageKind::request;
  std::uint8_t service_timeout = 0;  // 5 bits
  std::array<std::uint8_t, 222> private_data{};

  bool operator==(const ReceiptAck&) const = default;
};

struct ConnectReject {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  MessageKind message = MessageKind::request;
  std::uint8_t reject_info_length = 0;  // 7 bits: the bytes of ari that count
  std::uint16_t reason = 0;
  std::array<std::uint8_t, 72> ari{};  // additional reject information
  std::array<std::uint8_t, 148> private_data{};

  bool operator==(const ConnectReject&) const = default;
};

struct ConnectReply {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  std::uint32_t local_qkey = 0;
  std::uint32_t local_qpn = 0;   // 24 bits
  std::uint32_t local_eecn = 0;  // 24 bits
  std::uint32_t starting_psn = 0;  // 24 bits
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t target_ack_delay = 0;   // 5 bits
  std::uint8_t failover_accepted = 0;  // 2 bits
  bool end_to_end_flow_control = false;
  std::uint8_t rnr_retry_count = 0;  // 3 bits
  bool srq = false;
  std::uint64_t local_ca_guid = 0;
  std::array<std::uint8_t, 196> private_data{};

  bool operator==(const ConnectReply&) const = default;
};

struct ReadyToUse {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  std::array<std::uint8_t, 224> private_data{};

  bool operator==(const ReadyToUse&) const = default;
};

struct DisconnectRequest {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  std::uint32_t remote_qpn = 0;  // 24 bits
  std::array<std::uint8_t, 220> private_data{};

  bool operator==(const DisconnectRequest&) const = default;
};

struct DisconnectReply {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  std::array<std::uint8_t, 224> private_data{};

  bool operator==(const DisconnectReply&) const = default;
};

struct SidrRequest {
  std::uint32_t request_id = 0;
  std::uint16_t pkey = 0xFFFF;
  std::uint64_t service_id = 0;
  std::array<std::uint8_t, 216> private_data{};

  bool operator==(const SidrRequest&) const = default;
};

// SIDR_REP status (Table 121).
enum class SidrStatus : std::uint8_t { valid = 0, service_id_not_supported = 1, rejected = 2, no_qp = 3 };

struct SidrReply {
  std::uint32_t request_id = 0;
  SidrStatus status = SidrStatus::valid;
  std::uint8_t additional_info_length = 0;
  std::uint32_t qpn = 0;  // 24 bits
  std::uint64_t service_id = 0;
  std::uint32_t qkey = 0;
  std::array<std::uint8_t, 72> additional_info{};
  std::array<std::uint8_t, 136> private_data{};

  bool operator==(const SidrReply&) const = default;
};

using CmMessage = std::variant<ConnectRequest, ReceiptAck, ConnectReject, ConnectReply, ReadyToUse,
                               DisconnectRequest, DisconnectReply, SidrRequest, SidrReply>;

struct CmMad {
  std::uint64_t transaction_id = 0;
  CmMessage message;

  bool operator==(const CmMad&) const = default;
};

enum class CmError {
  wrong_length,         // a MAD is exactly 256 bytes
  not_cm,               // base version or class is not the CM's
  bad_class_version,    // the CM's class version is 2
  bad_method,           // CM messages are Sends
  unknown_attribute,    // not one of Attribute (LAP, APR, ClassPortInfo included)
};

std::string_view to_string(CmError error);
// The short name the spec gives the message: "REQ", "REP", ...
std::string_view message_name(const CmMessage& message);
Attribute attribute_of(const CmMessage& message);

// payload: a UD SEND's payload to QP 1.
Expected<CmMad, CmError> parse_cm_mad(ByteSpan payload);
std::array<std::uint8_t, kMadLength> emit_cm_mad(const CmMad& mad);

}  // namespace uroce::cm
