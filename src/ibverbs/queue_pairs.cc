// Queue pairs: creation (classic and extended), state changes, queries and
// destruction. Every QP is an extended one, so ibv_qp_to_qp_ex always gives
// the ibv_wr_* interface (qp_ex_ops.cc).
#include <algorithm>
#include <infiniband/verbs.h>

#include <new>

#include "ibverbs/address_vector.h"
#include "ibverbs/async_event_acks.h"
#include "ibverbs/objects.h"
#include "ibverbs/uroce_private.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

// The QP attributes the engine takes; the rest (alternate paths, rate
// limits, out-of-order placement ...) are not served.
constexpr int kServedAttributes = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
                                  IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU |
                                  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP | IBV_QP_DEST_QPN;

constexpr std::uint64_t kServedSendOps =
    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
    IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW |
    IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_ATOMIC_WRITE;

// Inline data up to the size of the send SGEs is granted even when none is
// asked for, as kernel Soft-RoCE does (16 bytes an SGE): programs such as
// rdma_xclient send a small inline message on a QP made with no inline size.
constexpr std::uint32_t kInlineBytesPerSge = 16;

QpCap to_cap(const ibv_qp_cap& cap) {
  std::uint32_t inline_data = std::max(cap.max_inline_data, cap.max_send_sge * kInlineBytesPerSge);
  return QpCap{cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge, cap.max_recv_sge, inline_data};
}

ibv_qp_cap to_ibv_cap(const QpCap& cap) {
  return ibv_qp_cap{cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge, cap.max_recv_sge, cap.max_inline_data};
}

// xrcd: an XRC_RECV QP's domain, which it has instead of a PD and CQs.
// block_self_multicast: IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (UD only).
ibv_qp* create(ibv_context* context, ibv_pd* pd, const ibv_qp_init_attr& requested, std::uint32_t xrcd = 0,
               bool gsi = false, bool block_self_multicast = false) {
  ibv_qp_type type = requested.qp_type;
  if (type != IBV_QPT_RC && type != IBV_QPT_UC && type != IBV_QPT_UD && type != IBV_QPT_XRC_SEND &&
      type != IBV_QPT_XRC_RECV) {
    return fail_with<ibv_qp>(EOPNOTSUPP);  // raw packet and driver QPs
  }
  bool xrc_recv = type == IBV_QPT_XRC_RECV;
  bool needs_recv_cq = type != IBV_QPT_XRC_SEND && !xrc_recv;
  if (xrc_recv ? xrcd == 0
               : pd == nullptr || requested.send_cq == nullptr || (needs_recv_cq && requested.recv_cq == nullptr)) {
    return fail_with<ibv_qp>(EINVAL);
  }
  DeviceRuntime* found = xrc_recv ? runtime_for(context) : pd_of(pd).runtime;
  if (found == nullptr) return nullptr;
  DeviceRuntime& runtime = *found;
  QpInitAttr init;
  init.qp_type = static_cast<QpType>(type);
  init.pd = pd != nullptr ? pd_of(pd).handle : 0;
  init.send_cq = requested.send_cq != nullptr ? cq_of(requested.send_cq).handle : 0;
  init.recv_cq = requested.recv_cq != nullptr ? cq_of(requested.recv_cq).handle : 0;
  init.xrcd = xrcd;
  init.cap = to_cap(requested.cap);
  init.sq_sig_all = requested.sq_sig_all != 0;
  init.srq = requested.srq != nullptr ? srq_of(requested.srq).handle : 0;
  init.gsi = gsi;
  init.block_self_multicast = block_self_multicast;
  if (type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND) init.loss_probe_ns = runtime.loss_probe_ns();
  auto* qp = new (std::nothrow) UroceQp{};
  if (qp == nullptr) return fail_with<ibv_qp>(ENOMEM);
  auto qpn = runtime.device().call_and_wake([&](Engine& engine) -> Expected<std::uint32_t, std::errc> {
    auto created = engine.create_qp(init);
    if (!created) return created;
    auto granted = engine.query_qp(*created);
    if (granted) init.cap = granted->cap;
    runtime.qps.emplace(*created, qp);
    return created;
  });
  if (!qpn) {
    delete qp;
    return fail_with<ibv_qp>(errno_of(qpn.error()));
  }
  qp->runtime = &runtime;
  qp->init = requested;
  qp->init.cap = to_ibv_cap(init.cap);
  ibv_qp& base = qp->qpx.qp_base;
  base.context = context;
  base.qp_context = requested.qp_context;
  base.pd = pd;
  base.send_cq = requested.send_cq;
  base.recv_cq = requested.recv_cq;
  base.srq = requested.srq;
  base.handle = *qpn;
  base.qp_num = *qpn;
  base.state = IBV_QPS_RESET;
  base.qp_type = requested.qp_type;
  pthread_mutex_init(&base.mutex, nullptr);
  pthread_cond_init(&base.cond, nullptr);
  install_qp_ex_ops(qp->qpx);
  return &base;
}

ibv_qp* create_qp_extended(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  constexpr std::uint32_t kServedMask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                                        IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD;
  if ((attr->comp_mask & ~kServedMask) != 0) return fail_with<ibv_qp>(EOPNOTSUPP);
  std::uint32_t xrcd = 0;
  if (attr->qp_type == IBV_QPT_XRC_RECV) {  // a domain, not a PD
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || attr->xrcd == nullptr || attr->xrcd->context != context) {
      return fail_with<ibv_qp>(EINVAL);
    }
    xrcd = xrcd_handle(attr->xrcd);
  } else if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr || attr->pd->context != context) {
    return fail_with<ibv_qp>(EINVAL);
  }
  std::uint32_t flags = (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) ? attr->create_flags : 0;
  if ((flags & ~std::uint32_t{IBV_QP_CREATE_BLOCK_SELF_MCAST_LB}) != 0) return fail_with<ibv_qp>(EOPNOTSUPP);
  bool block_self_multicast = (flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) != 0;
  if (block_self_multicast && attr->qp_type != IBV_QPT_UD) return fail_with<ibv_qp>(EINVAL);
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (attr->send_ops_flags & ~kServedSendOps) != 0) {
    return fail_with<ibv_qp>(EOPNOTSUPP);
  }
  ibv_qp_init_attr classic{};
  classic.qp_context = attr->qp_context;
  classic.send_cq = attr->send_cq;
  classic.recv_cq = attr->recv_cq;
  classic.srq = attr->srq;
  classic.cap = attr->cap;
  classic.qp_type = attr->qp_type;
  classic.sq_sig_all = attr->sq_sig_all;
  ibv_qp* qp = create(context, attr->qp_type == IBV_QPT_XRC_RECV ? nullptr : attr->pd, classic, xrcd,
                      /*gsi=*/false, block_self_multicast);
  if (qp != nullptr) attr->cap = qp_of(qp).init.cap;
  return qp;
}

}  // namespace

void install_qp_create_ops(verbs_context& context) { context.create_qp_ex = create_qp_extended; }

}  // namespace uroce::ibverbs

using namespace uroce::ibverbs;

extern "C" {

ibv_qp* UROCE_V11(ibv_create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (pd == nullptr || attr == nullptr) return fail_with<ibv_qp>(EINVAL);
  ibv_qp* qp = create(pd->context, pd, *attr);
  if (qp != nullptr) attr->cap = qp_of(qp).init.cap;
  return qp;
}
UROCE_BIND_V11(ibv_create_qp);

// For uroce's librdmacm, at version UROCE_PRIVATE_1 (no program binds it):
// the device's General Services QP, QP 1, a UD QP that carries the
// connection manager's MADs. rdma-core keeps QP 1 in the kernel; here the
// connection manager runs in the process, so its library asks for it.
ibv_qp* uroce_create_gsi_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (attr == nullptr || attr->qp_type != IBV_QPT_UD) return fail_with<ibv_qp>(EINVAL);
  if (pd == nullptr) return fail_with<ibv_qp>(EINVAL);
  ibv_qp* qp = create(pd->context, pd, *attr, 0, /*gsi=*/true);
  if (qp != nullptr) attr->cap = qp_of(qp).init.cap;
  return qp;
}

// For uroce's librdmacm: a peer's DREQ is reported once the program has
// polled the completions that came before it (cm_service.h). By number: a
// program may destroy the QP (ibv_destroy_qp) without telling its ID.
int uroce_qp_has_completions_waiting(ibv_context* context, std::uint32_t qp_num) {
  DeviceRuntime* runtime = runtime_for(context);
  if (runtime == nullptr) return 0;
  return runtime->device().inspect([&](uroce::Engine& engine) { return engine.has_completions_waiting(qp_num); });
}

// For uroce's librdmacm: whether another process's device shares this one's
// address, so that a MAD for a service not listened on here is left to the
// member it is for instead of refused (cm/connection_manager.h).
int uroce_address_shared(ibv_context* context) {
  DeviceRuntime* runtime = runtime_for(context);
  return runtime != nullptr && runtime->device().address_shared() ? 1 : 0;
}

int UROCE_V11(ibv_modify_qp)(ibv_qp* ibv, ibv_qp_attr* attr, int mask) {
  if ((mask & ~kServedAttributes) != 0) return EOPNOTSUPP;
  UroceQp& qp = qp_of(ibv);
  uroce::QpAttr converted;
  converted.qp_state = static_cast<uroce::QpState>(attr->qp_state);
  converted.cur_qp_state = static_cast<uroce::QpState>(attr->cur_qp_state);
  converted.path_mtu = static_cast<uroce::PathMtu>(attr->path_mtu);
  converted.qkey = attr->qkey;
  converted.rq_psn = attr->rq_psn;
  converted.sq_psn = attr->sq_psn;
  converted.dest_qp_num = attr->dest_qp_num;
  // ON_DEMAND names how the QP's regions are paged, which changes nothing here (every region is on demand).
  converted.qp_access_flags = attr->qp_access_flags & ~static_cast<unsigned>(IBV_ACCESS_ON_DEMAND);
  converted.cap = to_cap(attr->cap);
  converted.pkey_index = attr->pkey_index;
  converted.max_rd_atomic = attr->max_rd_atomic;
  converted.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  converted.min_rnr_timer = attr->min_rnr_timer;
  converted.port_num = attr->port_num;
  converted.timeout = attr->timeout;
  converted.retry_cnt = attr->retry_cnt;
  converted.rnr_retry = attr->rnr_retry;
  converted.en_sqd_async_notify = attr->en_sqd_async_notify != 0;
  if (mask & IBV_QP_AV) {
    int error = to_address_vector(qp.runtime->ibv_device(), attr->ah_attr, converted.ah_attr);
    if (error != 0) return error;
  }
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR) qp.runtime->device().acknowledge_arrivals();
  std::errc result = qp.runtime->device().call_and_wake([&](uroce::Engine& engine) {
    return engine.modify_qp(ibv->qp_num, converted, static_cast<std::uint32_t>(mask));
  });
  if (result != std::errc{}) return errno_of(result);
  if (mask & IBV_QP_STATE) ibv->state = attr->qp_state;
  return 0;
}
UROCE_BIND_V11(ibv_modify_qp);

int UROCE_V11(ibv_query_qp)(ibv_qp* ibv, ibv_qp_attr* attr, int, ibv_qp_init_attr* init_attr) {
  UroceQp& qp = qp_of(ibv);
  auto queried = qp.runtime->device().inspect([&](uroce::Engine& engine) { return engine.query_qp(ibv->qp_num); });
  if (!queried) return errno_of(queried.error());
  const uroce::QpAttr& from = *queried;
  *attr = ibv_qp_attr{};
  attr->qp_state = static_cast<ibv_qp_state>(from.qp_state);
  attr->cur_qp_state = static_cast<ibv_qp_state>(from.cur_qp_state);
  attr->path_mtu = static_cast<ibv_mtu>(from.path_mtu);
  attr->path_mig_state = IBV_MIG_MIGRATED;
  attr->qkey = from.qkey;
  attr->rq_psn = from.rq_psn;
  attr->sq_psn = from.sq_psn;
  attr->dest_qp_num = from.dest_qp_num;
  attr->qp_access_flags = static_cast<unsigned>(from.qp_access_flags);
  attr->cap = qp.init.cap;
  to_ah_attr(qp.runtime->ibv_device(), from.ah_attr, attr->ah_attr);
  attr->pkey_index = from.pkey_index;
  attr->en_sqd_async_notify = from.en_sqd_async_notify;
  attr->sq_draining = from.sq_draining;
  attr->max_rd_atomic = from.max_rd_atomic;
  attr->max_dest_rd_atomic = from.max_dest_rd_atomic;
  attr->min_rnr_timer = from.min_rnr_timer;
  attr->port_num = from.port_num;
  attr->timeout = from.timeout;
  attr->retry_cnt = from.retry_cnt;
  attr->rnr_retry = from.rnr_retry;
  *init_attr = qp.init;
  ibv->state = attr->qp_state;
  return 0;
}
UROCE_BIND_V11(ibv_query_qp);

int UROCE_V11(ibv_destroy_qp)(ibv_qp* ibv) {
  UroceQp& qp = qp_of(ibv);
  DeviceRuntime& runtime = *qp.runtime;
  runtime.device().acknowledge_arrivals();
  runtime.device().detach_all_multicast(ibv->qp_num);
  std::errc result = runtime.device().call_and_wake([&](uroce::Engine& engine) {
    std::errc destroyed = engine.destroy_qp(ibv->qp_num);
    if (destroyed == std::errc{}) runtime.qps.erase(ibv->qp_num);
    return destroyed;
  });
  if (result != std::errc{}) return errno_of(result);
  runtime.forget_events_of(ibv);
  wait_for_async_acks(ibv->mutex, ibv->cond, ibv->events_completed, qp.async_events_reported);
  pthread_cond_destroy(&ibv->cond);
  pthread_mutex_destroy(&ibv->mutex);
  delete &qp;
  return 0;
}
UROCE_BIND_V11(ibv_destroy_qp);

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) { return &qp_of(qp).qpx; }

}  // extern "C"
