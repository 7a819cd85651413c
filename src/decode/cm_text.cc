// Text and JSON for the CM messages (cm/cm_messages.h).
#include "decode/cm_text.h"

#include <fmt/format.h>

#include <type_traits>

#include "cm/cm_messages.h"
#include "cm/cma_header.h"
#include "wire/opcode.h"

namespace uroce::decode {
namespace {

std::string service_text(std::uint64_t id) {
  auto address = cm::parse_service_id(id);
  if (!address) return fmt::format("0x{:016x}", id);
  switch (address->space) {
    case cm::PortSpace::tcp: return fmt::format("TCP:{}", address->port);
    case cm::PortSpace::udp: return fmt::format("UDP:{}", address->port);
    case cm::PortSpace::ib: return fmt::format("IB:{}", address->port);
    case cm::PortSpace::ipoib: return fmt::format("IPoIB:{}", address->port);
  }
  return fmt::format("0x{:016x}", id);
}

std::string reason_text(std::uint16_t reason) {
  switch (static_cast<cm::RejectReason>(reason)) {
    case cm::RejectReason::no_qp: return "no_qp(1)";
    case cm::RejectReason::no_resources: return "no_resources(3)";
    case cm::RejectReason::timeout: return "timeout(4)";
    case cm::RejectReason::unsupported_request: return "unsupported(5)";
    case cm::RejectReason::invalid_comm_id: return "invalid_comm_id(6)";
    case cm::RejectReason::invalid_service_id: return "invalid_service_id(8)";
    case cm::RejectReason::invalid_transport_type: return "invalid_transport(9)";
    case cm::RejectReason::stale_connection: return "stale_connection(10)";
    case cm::RejectReason::invalid_gid: return "invalid_gid(12)";
    case cm::RejectReason::invalid_mtu: return "invalid_mtu(26)";
    case cm::RejectReason::consumer_reject: return "consumer(28)";
    case cm::RejectReason::invalid_class_version: return "invalid_class_version(31)";
    case cm::RejectReason::vendor_option_not_supported: return "vendor_option_not_supported(35)";
  }
  return fmt::format("{}", reason);
}

// The fields after the message's name, as text.
std::string fields_text(const cm::CmMessage& message) {
  return std::visit(
      [](const auto& m) -> std::string {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, cm::ConnectRequest>) {
          return fmt::format("comm=0x{:08x} service={} QPN=0x{:06x} PSN={} MTU={} retry={} rnr_retry={}",
                             m.local_comm_id, service_text(m.service_id), m.local_qpn, m.starting_psn,
                             128 << m.path_mtu, m.retry_count, m.rnr_retry_count);
        } else if constexpr (std::is_same_v<M, cm::ConnectReply>) {
          return fmt::format("comm=0x{:08x} remote=0x{:08x} QPN=0x{:06x} PSN={}", m.local_comm_id,
                             m.remote_comm_id, m.local_qpn, m.starting_psn);
        } else if constexpr (std::is_same_v<M, cm::ConnectReject>) {
          return fmt::format("comm=0x{:08x} remote=0x{:08x} reason={}", m.local_comm_id, m.remote_comm_id,
                             reason_text(m.reason));
        } else if constexpr (std::is_same_v<M, cm::DisconnectRequest>) {
          return fmt::format("comm=0x{:08x} remote=0x{:08x} QPN=0x{:06x}", m.local_comm_id, m.remote_comm_id,
                             m.remote_qpn);
        } else if constexpr (std::is_same_v<M, cm::ReceiptAck>) {
          return fmt::format("comm=0x{:08x} remote=0x{:08x} timeout={}", m.local_comm_id, m.remote_comm_id,
                             m.service_timeout);
        } else if constexpr (std::is_same_v<M, cm::SidrRequest>) {
          return fmt::format("request=0x{:08x} service={}", m.request_id, service_text(m.service_id));
        } else if constexpr (std::is_same_v<M, cm::SidrReply>) {
          return fmt::format("request=0x{:08x} status={} QPN=0x{:06x} QKey=0x{:08x}", m.request_id,
                             static_cast<int>(m.status), m.qpn, m.qkey);
        } else {  // RTU, DREP
          return fmt::format("comm=0x{:08x} remote=0x{:08x}", m.local_comm_id, m.remote_comm_id);
        }
      },
      message);
}

}  // namespace

bool is_gsi_mad(const wire::RocePacket& packet) {
  return packet.headers.bth.dest_qp == cm::kGsiQpn && packet.headers.bth.opcode == wire::opcode::kUdSendOnly;
}

std::string describe_gsi_mad(ByteSpan payload) {
  auto mad = cm::parse_cm_mad(payload);
  if (!mad) return fmt::format("MAD ({})", cm::to_string(mad.error()));
  return fmt::format("CM {} TID=0x{:x} {}", cm::message_name(mad->message), mad->transaction_id,
                     fields_text(mad->message));
}

nlohmann::ordered_json gsi_mad_to_json(ByteSpan payload) {
  auto mad = cm::parse_cm_mad(payload);
  if (!mad) return nlohmann::ordered_json{{"error", cm::to_string(mad.error())}};
  return nlohmann::ordered_json{{"message", cm::message_name(mad->message)},
                               {"transaction_id", mad->transaction_id},
                               {"fields", fields_text(mad->message)}};
}

}  // namespace uroce::decode
