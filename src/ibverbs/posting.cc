// Posting work requests: ibv_post_send, ibv_post_recv and ibv_post_srq_recv
// (the header's inline verbs call these through the context ops). A chain is
// posted under one device lock; the first request the engine refuses is
// returned in bad_wr with its errno, and the ones after it are not posted.
#include <infiniband/verbs.h>

#include <arpa/inet.h>

#include <cstddef>

#include "ibverbs/memory_windows.h"
#include "ibverbs/objects.h"
#include "ibverbs/runtime.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

// ibv_sge and the engine's Sge share a layout, so scatter lists pass as they are.
static_assert(sizeof(ibv_sge) == sizeof(Sge));
static_assert(offsetof(ibv_sge, addr) == offsetof(Sge, addr));
static_assert(offsetof(ibv_sge, length) == offsetof(Sge, length));
static_assert(offsetof(ibv_sge, lkey) == offsetof(Sge, lkey));
// The engine's opcodes are libibverbs' numbers, and so are its completions'.
static_assert(static_cast<int>(WrOpcode::send_with_inv) == IBV_WR_SEND_WITH_INV);
static_assert(static_cast<int>(WrOpcode::atomic_write) == IBV_WR_ATOMIC_WRITE);
static_assert(static_cast<int>(WcOpcode::atomic_write) == IBV_WC_ATOMIC_WRITE);

bool served_opcode(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_WRITE:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV: return true;
    default: return false;  // TSO, driver opcodes ...
  }
}

std::span<const Sge> scatter_list(const ibv_sge* sg_list, int num_sge) {
  return {reinterpret_cast<const Sge*>(sg_list), static_cast<std::size_t>(num_sge)};
}

// 0, or the errno for a request the library itself refuses.
int convert(const ibv_send_wr& from, SendWr& to) {
  if (!served_opcode(from.opcode)) return EOPNOTSUPP;
  if (from.num_sge < 0 || (from.num_sge > 0 && from.sg_list == nullptr)) return EINVAL;
  to.wr_id = from.wr_id;
  to.opcode = static_cast<WrOpcode>(from.opcode);
  to.send_flags = from.send_flags & kServedSendFlags;
  to.sg_list = scatter_list(from.sg_list, from.num_sge);
  to.imm_data = ntohl(from.imm_data);  // the program gives it in network order; the engine holds values
  bool invalidates = from.opcode == IBV_WR_SEND_WITH_INV || from.opcode == IBV_WR_LOCAL_INV;
  to.invalidate_rkey = invalidates ? from.invalidate_rkey : 0;
  if (from.opcode == IBV_WR_BIND_MW) {
    to.sg_list = {};
    return to_mw_bind(from.bind_mw.mw, from.bind_mw.rkey, from.bind_mw.bind_info, to.bind);
  }
  to.rdma.remote_addr = from.wr.rdma.remote_addr;
  to.rdma.rkey = from.wr.rdma.rkey;
  to.atomic.remote_addr = from.wr.atomic.remote_addr;
  to.atomic.compare_add = from.wr.atomic.compare_add;
  to.atomic.swap = from.wr.atomic.swap;
  to.atomic.rkey = from.wr.atomic.rkey;
  return 0;
}

int post_send(ibv_qp* ibv, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  UroceQp& qp = qp_of(ibv);
  bool ud = ibv->qp_type == IBV_QPT_UD;
  return qp.runtime->device().post([&](Engine& engine) {
    for (; wr != nullptr; wr = wr->next) {
      SendWr converted;
      int error = convert(*wr, converted);
      if (error == 0 && ud) {
        if (wr->wr.ud.ah == nullptr) {
          error = EINVAL;
        } else {
          converted.ud = {ah_of(wr->wr.ud.ah).handle, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey};
        }
      }
      if (ibv->qp_type == IBV_QPT_XRC_SEND) converted.xrc_remote_srqn = wr->qp_type.xrc.remote_srqn;
      if (error == 0) error = errno_of(engine.post_send(ibv->qp_num, converted));
      if (error != 0) {
        *bad_wr = wr;
        return error;
      }
    }
    return 0;
  });
}

template <class PostOne>
int post_receives(DeviceRuntime& runtime, ibv_recv_wr* wr, ibv_recv_wr** bad_wr, PostOne post_one) {
  return runtime.device().post_receive([&](Engine& engine) {
    for (; wr != nullptr; wr = wr->next) {
      int error = EINVAL;
      if (wr->num_sge >= 0 && (wr->num_sge == 0 || wr->sg_list != nullptr)) {
        error = errno_of(post_one(engine, RecvWr{wr->wr_id, scatter_list(wr->sg_list, wr->num_sge)}));
      }
      if (error != 0) {
        *bad_wr = wr;
        return error;
      }
    }
    return 0;
  });
}

int post_recv(ibv_qp* ibv, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  return post_receives(*qp_of(ibv).runtime, wr, bad_wr,
                       [&](Engine& engine, const RecvWr& recv) { return engine.post_recv(ibv->qp_num, recv); });
}

int post_srq_recv(ibv_srq* ibv, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  UroceSrq& srq = srq_of(ibv);
  return post_receives(*srq.runtime, wr, bad_wr,
                       [&](Engine& engine, const RecvWr& recv) { return engine.post_srq_recv(srq.handle, recv); });
}

}  // namespace

void install_posting_ops(ibv_context_ops& ops) {
  ops.post_send = post_send;
  ops.post_recv = post_recv;
  ops.post_srq_recv = post_srq_recv;
}

}  // namespace uroce::ibverbs
