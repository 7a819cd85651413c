// Text rendering of decoded frames.
#include "decode/frame_text.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include "decode/cm_text.h"

namespace uroce::decode {
namespace {

std::string format_address(const wire::IpHeader& ip, bool source) {
  char text[INET6_ADDRSTRLEN] = {};
  if (const auto* v4 = std::get_if<wire::Ipv4Repr>(&ip)) {
    inet_ntop(AF_INET, source ? v4->src.data() : v4->dst.data(), text, sizeof text);
  } else {
    const auto& v6 = std::get<wire::Ipv6Repr>(ip);
    inet_ntop(AF_INET6, source ? v6.src.data() : v6.dst.data(), text, sizeof text);
  }
  return text;
}

std::string describe_syndrome(std::uint8_t syndrome) {
  std::uint8_t value = wire::aeth_value(syndrome);
  switch (wire::aeth_ack_type(syndrome)) {
    case wire::AckType::ack: return value == wire::kCreditNoLimit ? "ACK" : fmt::format("ACK credits={}", value);
    case wire::AckType::rnr_nak: return fmt::format("RNR_NAK timer={}", value);
    case wire::AckType::nak:
      switch (static_cast<wire::NakCode>(value)) {
        case wire::NakCode::psn_sequence_error: return "NAK PSN_SEQUENCE_ERROR";
        case wire::NakCode::invalid_request: return "NAK INVALID_REQUEST";
        case wire::NakCode::remote_access_error: return "NAK REMOTE_ACCESS_ERROR";
        case wire::NakCode::remote_operational_error: return "NAK REMOTE_OPERATIONAL_ERROR";
        case wire::NakCode::invalid_rd_request: return "NAK INVALID_RD_REQUEST";
        case wire::NakCode::trimmed: return "NAK TRIMMED (uroce)";
      }
      return fmt::format("NAK code={}", value);
    case wire::AckType::reserved: break;
  }
  return fmt::format("syndrome=0x{:02x}", syndrome);
}

}  // namespace

std::string describe_packet(const wire::RocePacket& packet) {
  const wire::TransportHeaders& h = packet.headers;
  const wire::BthRepr& bth = h.bth;
  std::string text = fmt::format("{} {} QP=0x{:06x}", wire::to_string(packet.op->transport), packet.op->name,
                                 bth.dest_qp);
  if (packet.op->transport == wire::Transport::cnp) return text;
  text += fmt::format(" PSN={}", bth.psn);
  if (bth.ack_req) text += " AckReq";
  if (bth.place_early) text += " PlaceEarly";
  if (bth.solicited_event) text += " SE";
  if (bth.fecn) text += " FECN";
  if (bth.becn) text += " BECN";
  if (bth.pkey != wire::kDefaultPkey) text += fmt::format(" PKey=0x{:04x}", bth.pkey);
  if (h.deth) text += fmt::format(" QKey=0x{:08x} SrcQP=0x{:06x}", h.deth->qkey, h.deth->src_qp);
  if (h.xrceth) text += fmt::format(" XRCSRQ=0x{:06x}", h.xrceth->srqn);
  if (h.reth) text += fmt::format(" VA=0x{:x} RKey=0x{:08x} DMALen={}", h.reth->va, h.reth->rkey, h.reth->dma_length);
  if (h.atomic_eth) {
    text += fmt::format(" VA=0x{:x} RKey=0x{:08x} SwapAdd=0x{:x} Compare=0x{:x}", h.atomic_eth->va,
                        h.atomic_eth->rkey, h.atomic_eth->swap_add, h.atomic_eth->compare);
  }
  if (h.aeth) text += fmt::format(" {} MSN={}", describe_syndrome(h.aeth->syndrome), h.aeth->msn);
  if (h.atomic_ack_eth) text += fmt::format(" Orig=0x{:x}", h.atomic_ack_eth->original);
  if (h.imm_dt) text += fmt::format(" Imm=0x{:08x}", h.imm_dt->imm);
  if (h.ieth) text += fmt::format(" InvRKey=0x{:08x}", h.ieth->rkey);
  if (bth.pad_count != 0) text += fmt::format(" pad={}", bth.pad_count);
  text += fmt::format(" len={}", packet.payload.size());
  if (is_gsi_mad(packet)) text += " | " + describe_gsi_mad(packet.payload);
  return text;
}

std::string frame_to_text(std::size_t number, double seconds, ByteSpan bytes) {
  std::string prefix = fmt::format("{:5} {:11.6f}", number, seconds);
  auto frame = wire::parse_roce_frame(bytes);
  if (!frame) return fmt::format("{} [{} bytes: {}]", prefix, bytes.size(), wire::to_string(frame.error()));
  return fmt::format("{} {} → {} {} ICRC=0x{:08x} {}", prefix, format_address(frame->ip, true),
                     format_address(frame->ip, false), describe_packet(frame->packet), frame->packet.icrc,
                     frame->icrc_ok ? "ok" : "BAD");
}

}  // namespace uroce::decode
