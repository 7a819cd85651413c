// XRC (IBTA Annex A14) in the engine: which QP type a packet is for, and the
// domains and SRQs behind Engine's XRC calls (xrc.cc).
#pragma once

#include "uroce/verbs_types.h"
#include "wire/opcode.h"

namespace uroce::transport {

// The type of QP a packet of this opcode is addressed to: XRC requests go to
// an xrc_recv QP, XRC responses to the xrc_send QP that asked.
QpType receiving_qp_type(const wire::OpcodeInfo& op);

}  // namespace uroce::transport
