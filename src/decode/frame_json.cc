// JSON rendering of decoded frames.
#include "decode/frame_json.h"

#include "decode/cm_text.h"

namespace uroce::decode {

using nlohmann::ordered_json;

ordered_json frame_to_json(ByteSpan bytes) {
  auto frame = wire::parse_roce_frame(bytes);
  if (!frame) return ordered_json{{"error", wire::to_string(frame.error())}};
  return frame_to_json(*frame);
}

ordered_json frame_to_json(const wire::RoceFrame& frame) {
  const wire::RocePacket& packet = frame.packet;
  const wire::TransportHeaders& h = packet.headers;
  const wire::BthRepr& bth = h.bth;
  ordered_json out;
  out["opcode"] = bth.opcode;
  out["name"] = packet.op->name;
  out["transport"] = wire::to_string(packet.op->transport);

  if (packet.op->transport == wire::Transport::cnp) {
    // A CNP carries only its destination QP and BECN; the rest is reserved.
    out["dest_qp"] = bth.dest_qp;
    out["becn"] = bth.becn ? 1 : 0;
  } else {
    out["psn"] = bth.psn;
    out["dest_qp"] = bth.dest_qp;
    out["se"] = bth.solicited_event ? 1 : 0;
    out["ack_req"] = bth.ack_req ? 1 : 0;
    if (bth.place_early) out["place_early"] = 1;
    out["pad"] = bth.pad_count;
    out["pkey"] = bth.pkey;
    out["tver"] = 0;  // parse rejects any other version
    out["becn"] = bth.becn ? 1 : 0;
    out["fecn"] = bth.fecn ? 1 : 0;
    if (h.reth) out["reth"] = {{"va", h.reth->va}, {"rkey", h.reth->rkey}, {"len", h.reth->dma_length}};
    if (h.aeth) out["aeth"] = {{"syndrome", h.aeth->syndrome}, {"msn", h.aeth->msn}};
    if (h.atomic_eth) {
      out["atomic"] = {{"va", h.atomic_eth->va},
                       {"rkey", h.atomic_eth->rkey},
                       {"swap_add", h.atomic_eth->swap_add},
                       {"compare", h.atomic_eth->compare}};
    }
    if (h.atomic_ack_eth) out["atomic_ack"] = {{"orig", h.atomic_ack_eth->original}};
    if (h.deth) out["deth"] = {{"qkey", h.deth->qkey}, {"src_qp", h.deth->src_qp}};
    if (h.xrceth) out["xrceth"] = {{"srqn", h.xrceth->srqn}};
    if (h.imm_dt) out["imm"] = h.imm_dt->imm;
    if (h.ieth) out["ieth"] = {{"rkey", h.ieth->rkey}};
    out["payload_len"] = packet.payload.size();
    if (is_gsi_mad(packet)) out["cm"] = gsi_mad_to_json(packet.payload);
  }
  out["ip"] = frame.ip_version();
  out["icrc"] = packet.icrc;
  out["icrc_ok"] = frame.icrc_ok;
  return out;
}

}  // namespace uroce::decode
