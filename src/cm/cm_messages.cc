// parse_cm_mad and emit_cm_mad: the CM messages' fields at the offsets of
// IBTA Vol 1 Tables 106-120, counted from the end of the MAD header. A
// field narrower than its byte sits in the byte's high bits unless the
// table puts it lower (bit offsets count from the most significant bit).
#include "cm/cm_messages.h"

#include <algorithm>
#include <type_traits>

namespace uroce::cm {
namespace {

// A field of `width` bits starting `offset` bits from a byte's top.
std::uint8_t bits(std::uint8_t byte, int offset, int width) {
  return static_cast<std::uint8_t>((byte >> (8 - offset - width)) & ((1u << width) - 1));
}
std::uint8_t place(std::uint8_t value, int offset, int width) {
  return static_cast<std::uint8_t>((value & ((1u << width) - 1)) << (8 - offset - width));
}

template <std::size_t N>
void copy_in(std::array<std::uint8_t, N>& field, const std::uint8_t* from) {
  std::copy(from, from + N, field.begin());
}
template <std::size_t N>
void copy_out(const std::array<std::uint8_t, N>& field, std::uint8_t* to) {
  std::copy(field.begin(), field.end(), to);
}

// d: the 232 bytes after the MAD header; each parser reads within them.
CmPath parse_path(const std::uint8_t* p) {
  CmPath path;
  path.local_lid = load_be16(p);
  path.remote_lid = load_be16(p + 2);
  copy_in(path.local_gid, p + 4);
  copy_in(path.remote_gid, p + 20);
  path.flow_label = load_be32(p + 36) >> 12;
  path.packet_rate = bits(p[39], 2, 6);
  path.traffic_class = p[40];
  path.hop_limit = p[41];
  path.service_level = bits(p[42], 0, 4);
  path.subnet_local = bits(p[42], 4, 1);
  path.local_ack_timeout = bits(p[43], 0, 5);
  return path;
}

void emit_path(const CmPath& path, std::uint8_t* p) {
  store_be16(p, path.local_lid);
  store_be16(p + 2, path.remote_lid);
  copy_out(path.local_gid, p + 4);
  copy_out(path.remote_gid, p + 20);
  store_be32(p + 36, (path.flow_label & 0xFFFFF) << 12);
  p[39] |= place(path.packet_rate, 2, 6);
  p[40] = path.traffic_class;
  p[41] = path.hop_limit;
  p[42] = place(path.service_level, 0, 4) | place(path.subnet_local, 4, 1);
  p[43] = place(path.local_ack_timeout, 0, 5);
}

ConnectRequest parse_request(const std::uint8_t* d) {
  ConnectRequest m;
  m.local_comm_id = load_be32(d);
  m.service_id = load_be64(d + 8);
  m.local_ca_guid = load_be64(d + 16);
  m.local_qkey = load_be32(d + 28);
  m.local_qpn = load_be24(d + 32);
  m.responder_resources = d[35];
  m.local_eecn = load_be24(d + 36);
  m.initiator_depth = d[39];
  m.remote_eecn = load_be24(d + 40);
  m.remote_cm_response_timeout = bits(d[43], 0, 5);
  m.transport = static_cast<TransportType>(bits(d[43], 5, 2));
  m.end_to_end_flow_control = bits(d[43], 7, 1);
  m.starting_psn = load_be24(d + 44);
  m.local_cm_response_timeout = bits(d[47], 0, 5);
  m.retry_count = bits(d[47], 5, 3);
  m.pkey = load_be16(d + 48);
  m.path_mtu = bits(d[50], 0, 4);
  m.rdc_exists = bits(d[50], 4, 1);
  m.rnr_retry_count = bits(d[50], 5, 3);
  m.max_cm_retries = bits(d[51], 0, 4);
  m.srq = bits(d[51], 4, 1);
  m.extended_transport = bits(d[51], 5, 3);
  m.primary = parse_path(d + 52);
  m.alternate = parse_path(d + 96);
  copy_in(m.private_data, d + 140);
  return m;
}

void emit_request(const ConnectRequest& m, std::uint8_t* d) {
  store_be32(d, m.local_comm_id);
  store_be64(d + 8, m.service_id);
  store_be64(d + 16, m.local_ca_guid);
  store_be32(d + 28, m.local_qkey);
  store_be24(d + 32, m.local_qpn);
  d[35] = m.responder_resources;
  store_be24(d + 36, m.local_eecn);
  d[39] = m.initiator_depth;
  store_be24(d + 40, m.remote_eecn);
  d[43] = place(m.remote_cm_response_timeout, 0, 5) | place(static_cast<std::uint8_t>(m.transport), 5, 2) |
          place(m.end_to_end_flow_control, 7, 1);
  store_be24(d + 44, m.starting_psn);
  d[47] = place(m.local_cm_response_timeout, 0, 5) | place(m.retry_count, 5, 3);
  store_be16(d + 48, m.pkey);
  d[50] = place(m.path_mtu, 0, 4) | place(m.rdc_exists, 4, 1) | place(m.rnr_retry_count, 5, 3);
  d[51] = place(m.max_cm_retries, 0, 4) | place(m.srq, 4, 1) | place(m.extended_transport, 5, 3);
  emit_path(m.primary, d + 52);
  emit_path(m.alternate, d + 96);
  copy_out(m.private_data, d + 140);
}

ReceiptAck parse_receipt_ack(const std::uint8_t* d) {
  ReceiptAck m;
  m.local_comm_id = load_be32(d);
  m.remote_comm_id = load_be32(d + 4);
  m.message = static_cast<MessageKind>(bits(d[8], 0, 2));
  m.service_timeout = bits(d[9], 0, 5);
  copy_in(m.private_data, d + 10);
  return m;
}

void emit_receipt_ack(const ReceiptAck& m, std::uint8_t* d) {
  store_be32(d, m.local_comm_id);
  store_be32(d + 4, m.remote_comm_id);
  d[8] = place(static_cast<std::uint8_t>(m.message), 0, 2);
  d[9] = place(m.service_timeout, 0, 5);
  copy_out(m.private_data, d + 10);
}

ConnectReject parse_reject(const std::uint8_t* d) {
  ConnectReject m;
  m.local_comm_id = load_be32(d);
  m.remote_comm_id = load_be32(d + 4);
  m.message = static_cast<MessageKind>(bits(d[8], 0, 2));
  m.reject_info_length = bits(d[9], 0, 7);
  m.reason = load_be16(d + 10);
  copy_in(m.ari, d + 12);
  copy_in(m.private_data, d + 84);
  return m;
}

void emit_reject(const ConnectReject& m, std::uint8_t* d) {
  store_be32(d, m.local_comm_id);
  store_be32(d + 4, m.remote_comm_id);
  d[8] = place(static_cast<std::uint8_t>(m.message), 0, 2);
  d[9] = place(m.reject_info_length, 0, 7);
  store_be16(d + 10, m.reason);
  copy_out(m.ari, d + 12);
  copy_out(m.private_data, d + 84);
}

ConnectReply parse_reply(const std::uint8_t* d) {
  ConnectReply m;
  m.local_comm_id = load_be32(d);
  m.remote_comm_id = load_be32(d + 4);
  m.local_qkey = load_be32(d + 8);
  m.local_qpn = load_be24(d + 12);
  m.local_eecn = load_be24(d + 16);
  m.starting_psn = load_be24(d + 20);
  m.responder_resources = d[24];
  m.initiator_depth = d[25];
  m.target_ack_delay = bits(d[26], 0, 5);
  m.failover_accepted = bits(d[26], 5, 2);
  m.end_to_end_flow_control = bits(d[26], 7, 1);
  m.rnr_retry_count = bits(d[27], 0, 3);
  m.srq = bits(d[27], 3, 1);
  m.local_ca_guid = load_be64(d + 28);
  copy_in(m.private_data, d + 36);
  return m;
}

void emit_reply(const ConnectReply& m, std::uint8_t* d) {
  store_be32(d, m.local_comm_id);
  store_be32(d + 4, m.remote_comm_id);
  store_be32(d + 8, m.local_qkey);
  store_be24(d + 12, m.local_qpn);
  store_be24(d + 16, m.local_eecn);
  store_be24(d + 20, m.starting_psn);
  d[24] = m.responder_resources;
  d[25] = m.initiator_depth;
  d[26] = place(m.target_ack_delay, 0, 5) | place(m.failover_accepted, 5, 2) | place(m.end_to_end_flow_control, 7, 1);
  d[27] = place(m.rnr_retry_count, 0, 3) | place(m.srq, 3, 1);
  store_be64(d + 28, m.local_ca_guid);
  copy_out(m.private_data, d + 36);
}

template <typename Message>
Message parse_ids_and_data(const std::uint8_t* d) {  // RTU, DREP
  Message m;
  m.local_comm_id = load_be32(d);
  m.remote_comm_id = load_be32(d + 4);
  copy_in(m.private_data, d + 8);
  return m;
}

template <typename Message>
void emit_ids_and_data(const Message& m, std::uint8_t* d) {
  store_be32(d, m.local_comm_id);
  store_be32(d + 4, m.remote_comm_id);
  copy_out(m.private_data, d + 8);
}

DisconnectRequest parse_disconnect_request(const std::uint8_t* d) {
  DisconnectRequest m;
  m.local_comm_id = load_be32(d);
  m.remote_comm_id = load_be32(d + 4);
  m.remote_qpn = load_be24(d + 8);
  copy_in(m.private_data, d + 12);
  return m;
}

void emit_disconnect_request(const DisconnectRequest& m, std::uint8_t* d) {
  store_be32(d, m.local_comm_id);
  store_be32(d + 4, m.remote_comm_id);
  store_be24(d + 8, m.remote_qpn);
  copy_out(m.private_data, d + 12);
}

SidrRequest parse_sidr_request(const std::uint8_t* d) {
  SidrRequest m;
  m.request_id = load_be32(d);
  m.pkey = load_be16(d + 4);
  m.service_id = load_be64(d + 8);
  copy_in(m.private_data, d + 16);
  return m;
}

void emit_sidr_request(const SidrRequest& m, std::uint8_t* d) {
  store_be32(d, m.request_id);
  store_be16(d + 4, m.pkey);
  store_be64(d + 8, m.service_id);
  copy_out(m.private_data, d + 16);
}

SidrReply parse_sidr_reply(const std::uint8_t* d) {
  SidrReply m;
  m.request_id = load_be32(d);
  m.status = static_cast<SidrStatus>(d[4]);
  m.additional_info_length = d[5];
  m.qpn = load_be24(d + 8);
  m.service_id = load_be64(d + 12);
  m.qkey = load_be32(d + 20);
  copy_in(m.additional_info, d + 24);
  copy_in(m.private_data, d + 96);
  return m;
}

void emit_sidr_reply(const SidrReply& m, std::uint8_t* d) {
  store_be32(d, m.request_id);
  d[4] = static_cast<std::uint8_t>(m.status);
  d[5] = m.additional_info_length;
  store_be24(d + 8, m.qpn);
  store_be64(d + 12, m.service_id);
  store_be32(d + 20, m.qkey);
  copy_out(m.additional_info, d + 24);
  copy_out(m.private_data, d + 96);
}

}  // namespace

std::string_view to_string(CmError error) {
  switch (error) {
    case CmError::wrong_length: return "wrong_length";
    case CmError::not_cm: return "not_cm";
    case CmError::bad_class_version: return "bad_class_version";
    case CmError::bad_method: return "bad_method";
    case CmError::unknown_attribute: return "unknown_attribute";
  }
  return "unknown";
}

Attribute attribute_of(const CmMessage& message) {
  return std::visit(
      [](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, ConnectRequest>) return Attribute::connect_request;
        if constexpr (std::is_same_v<M, ReceiptAck>) return Attribute::receipt_ack;
        if constexpr (std::is_same_v<M, ConnectReject>) return Attribute::connect_reject;
        if constexpr (std::is_same_v<M, ConnectReply>) return Attribute::connect_reply;
        if constexpr (std::is_same_v<M, ReadyToUse>) return Attribute::ready_to_use;
        if constexpr (std::is_same_v<M, DisconnectRequest>) return Attribute::disconnect_request;
        if constexpr (std::is_same_v<M, DisconnectReply>) return Attribute::disconnect_reply;
        if constexpr (std::is_same_v<M, SidrRequest>) return Attribute::sidr_request;
        if constexpr (std::is_same_v<M, SidrReply>) return Attribute::sidr_reply;
      },
      message);
}

std::string_view message_name(const CmMessage& message) {
  static constexpr std::string_view kNames[] = {"REQ",  "MRA",  "REJ",      "REP",     "RTU",
                                                "DREQ", "DREP", "SIDR_REQ", "SIDR_REP"};
  return kNames[message.index()];
}

Expected<CmMad, CmError> parse_cm_mad(ByteSpan payload) {
  if (payload.size() != kMadLength) return unexpected(CmError::wrong_length);
  MadHeader header = MadHeader::parse(payload);
  if (header.base_version != kMadBaseVersion || header.management_class != kCmClass) {
    return unexpected(CmError::not_cm);
  }
  if (header.class_version != kCmClassVersion) return unexpected(CmError::bad_class_version);
  if (header.method != kMethodSend) return unexpected(CmError::bad_method);
  const std::uint8_t* d = payload.data() + kMadHeaderLength;
  CmMad mad{header.transaction_id, ConnectRequest{}};
  switch (static_cast<Attribute>(header.attribute_id)) {
    case Attribute::connect_request: mad.message = parse_request(d); break;
    case Attribute::receipt_ack: mad.message = parse_receipt_ack(d); break;
    case Attribute::connect_reject: mad.message = parse_reject(d); break;
    case Attribute::connect_reply: mad.message = parse_reply(d); break;
    case Attribute::ready_to_use: mad.message = parse_ids_and_data<ReadyToUse>(d); break;
    case Attribute::disconnect_request: mad.message = parse_disconnect_request(d); break;
    case Attribute::disconnect_reply: mad.message = parse_ids_and_data<DisconnectReply>(d); break;
    case Attribute::sidr_request: mad.message = parse_sidr_request(d); break;
    case Attribute::sidr_reply: mad.message = parse_sidr_reply(d); break;
    default: return unexpected(CmError::unknown_attribute);
  }
  return mad;
}

std::array<std::uint8_t, kMadLength> emit_cm_mad(const CmMad& mad) {
  std::array<std::uint8_t, kMadLength> out{};
  MadHeader header;
  header.transaction_id = mad.transaction_id;
  header.attribute_id = static_cast<std::uint16_t>(attribute_of(mad.message));
  header.emit(out);
  std::uint8_t* d = out.data() + kMadHeaderLength;
  std::visit(
      [d](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, ConnectRequest>) emit_request(m, d);
        if constexpr (std::is_same_v<M, ReceiptAck>) emit_receipt_ack(m, d);
        if constexpr (std::is_same_v<M, ConnectReject>) emit_reject(m, d);
        if constexpr (std::is_same_v<M, ConnectReply>) emit_reply(m, d);
        if constexpr (std::is_same_v<M, ReadyToUse> || std::is_same_v<M, DisconnectReply>) emit_ids_and_data(m, d);
        if constexpr (std::is_same_v<M, DisconnectRequest>) emit_disconnect_request(m, d);
        if constexpr (std::is_same_v<M, SidrRequest>) emit_sidr_request(m, d);
        if constexpr (std::is_same_v<M, SidrReply>) emit_sidr_reply(m, d);
      },
      mad.message);
  return out;
}

}  // namespace uroce::cm
