// XRC: domains, XRC SRQs, and the xrc_recv QP's adoption of the SRQ each
// request names (uroce/engine.h).
#include "transport/xrc.h"

#include "transport/engine_core.h"
#include "uroce/engine.h"

namespace uroce {

Expected<std::uint32_t, std::errc> Engine::open_xrcd() {
  std::uint32_t xrcd = core_->next_xrcd++;
  core_->xrcds.emplace(xrcd, 0);
  return xrcd;
}

std::errc Engine::close_xrcd(std::uint32_t xrcd) {
  auto it = core_->xrcds.find(xrcd);
  if (it == core_->xrcds.end()) return std::errc::invalid_argument;
  if (it->second > 0) return std::errc::device_or_resource_busy;  // SRQs or QPs of it remain
  core_->xrcds.erase(it);
  return std::errc{};
}

Expected<std::uint32_t, std::errc> Engine::create_xrc_srq(std::uint32_t pd, std::uint32_t xrcd, std::uint32_t cq,
                                                          std::uint32_t max_wr, std::uint32_t max_sge) {
  auto domain = core_->xrcds.find(xrcd);
  if (domain == core_->xrcds.end() || !core_->cqs.contains(cq)) return unexpected(std::errc::invalid_argument);
  auto srq = create_srq(pd, max_wr, max_sge);
  if (!srq) return srq;
  transport::SharedReceiveQueue& created = core_->srqs.at(*srq);
  created.xrcd = xrcd;
  created.cq = cq;
  ++domain->second;
  return srq;
}

bool transport::Responder::adopt_xrc_srq(transport::QueuePair& qp, const wire::RocePacket& packet) {
  std::uint32_t srqn = packet.headers.xrceth ? packet.headers.xrceth->srqn : 0;
  auto srq = context_.srqs.find(srqn);
  bool mid_message = qp.resp.receiving_send || qp.resp.receiving_write;
  if (srq == context_.srqs.end() || srq->second.xrcd == 0 || srq->second.xrcd != qp.xrcd ||
      (mid_message && srqn != qp.srq)) {
    // Only the packet the responder expects may fail the QP (a stale duplicate is ignored, as RC's are).
    std::uint32_t psn = packet.headers.bth.psn;
    if (psn == qp.resp.expected_psn) fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  qp.srq = srqn;
  qp.pd = srq->second.pd;
  qp.recv_cq = srq->second.cq;
  return true;
}

}  // namespace uroce
