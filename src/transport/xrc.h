// XRC (IBTA Annex A14) in the engine: which QP type a packet is for, and the
// domains and SRQs behind Engine's XRC calls (xrc.cc).
#pragma once

#include "uroce/verbs_types.h"
#include "wire/opcode.h"

namespace uroce::transport {

// The type of QP a packet of this opcode is addressed to: XRC requests go to
// an xrc_recv QP, XRC responses to the xrc_send QP that asked. (Every
// arriving packet asks: inline.)
inline QpType receiving_qp_type(const wire::OpcodeInfo& op) {
  switch (op.transport) {
    case wire::Transport::rc: return QpType::rc;
    case wire::Transport::uc: return QpType::uc;
    case wire::Transport::xrc: {
      bool response = op.kind == wire::OpKind::acknowledge || op.kind == wire::OpKind::atomic_acknowledge ||
                      op.kind == wire::OpKind::rdma_read_response;
      return response ? QpType::xrc_send : QpType::xrc_recv;
    }
    default: return QpType::ud;
  }
}

}  // namespace uroce::transport
