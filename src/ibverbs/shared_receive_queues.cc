// Shared receive queues: created in a PD (or, for XRC, also in an XRC domain
// with a CQ of their own: xrc.cc), filled with ibv_post_srq_recv
// (posting.cc), armed with a limit through ibv_modify_srq.
#include <infiniband/verbs.h>

#include <new>

#include "ibverbs/async_event_acks.h"
#include "ibverbs/objects.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* init, std::uint32_t xrcd, std::uint32_t cq) {
  if (pd == nullptr || init == nullptr || init->attr.max_wr == 0) return fail_with<ibv_srq>(EINVAL);
  UrocePd& owner = pd_of(pd);
  DeviceRuntime& runtime = *owner.runtime;
  auto* srq = new (std::nothrow) UroceSrq{};
  if (srq == nullptr) return fail_with<ibv_srq>(ENOMEM);
  auto handle = runtime.device().call_and_wake([&](uroce::Engine& engine) -> uroce::Expected<std::uint32_t, std::errc> {
    auto created = xrcd != 0 ? engine.create_xrc_srq(owner.handle, xrcd, cq, init->attr.max_wr, init->attr.max_sge)
                             : engine.create_srq(owner.handle, init->attr.max_wr, init->attr.max_sge);
    if (!created) return created;
    if (init->attr.srq_limit != 0) {
      std::errc armed = engine.arm_srq_limit(*created, init->attr.srq_limit);
      if (armed != std::errc{}) {
        engine.destroy_srq(*created);
        return uroce::unexpected(armed);
      }
    }
    runtime.srqs.emplace(*created, srq);
    return created;
  });
  if (!handle) {
    delete srq;
    return fail_with<ibv_srq>(errno_of(handle.error()));
  }
  srq->handle = *handle;
  srq->runtime = &runtime;
  srq->attr = init->attr;
  srq->srq.context = pd->context;
  srq->srq.srq_context = init->srq_context;
  srq->srq.pd = pd;
  srq->srq.handle = *handle;
  pthread_mutex_init(&srq->srq.mutex, nullptr);
  pthread_cond_init(&srq->srq.cond, nullptr);
  return &srq->srq;
}

}  // namespace uroce::ibverbs

using namespace uroce::ibverbs;

extern "C" {

ibv_srq* UROCE_V11(ibv_create_srq)(ibv_pd* pd, ibv_srq_init_attr* init) { return create_srq(pd, init, 0, 0); }
UROCE_BIND_V11(ibv_create_srq);

// IBV_SRQ_LIMIT arms the limit event; the engine does not resize an SRQ.
int UROCE_V11(ibv_modify_srq)(ibv_srq* ibv, ibv_srq_attr* attr, int mask) {
  if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
  if (mask & IBV_SRQ_MAX_WR) return EOPNOTSUPP;
  UroceSrq& srq = srq_of(ibv);
  if (!(mask & IBV_SRQ_LIMIT)) return 0;
  std::errc result = srq.runtime->device().call_and_wake(
      [&](uroce::Engine& engine) { return engine.arm_srq_limit(srq.handle, attr->srq_limit); });
  if (result != std::errc{}) return errno_of(result);
  srq.attr.srq_limit = attr->srq_limit;
  return 0;
}
UROCE_BIND_V11(ibv_modify_srq);

int UROCE_V11(ibv_query_srq)(ibv_srq* srq, ibv_srq_attr* attr) {
  *attr = srq_of(srq).attr;
  return 0;
}
UROCE_BIND_V11(ibv_query_srq);

int UROCE_V11(ibv_destroy_srq)(ibv_srq* ibv) {
  UroceSrq& srq = srq_of(ibv);
  DeviceRuntime& runtime = *srq.runtime;
  std::errc result = runtime.device().call_and_wake([&](uroce::Engine& engine) {
    std::errc destroyed = engine.destroy_srq(srq.handle);
    if (destroyed == std::errc{}) runtime.srqs.erase(srq.handle);
    return destroyed;
  });
  if (result != std::errc{}) return errno_of(result);
  runtime.forget_events_of(ibv);
  wait_for_async_acks(ibv->mutex, ibv->cond, ibv->events_completed, srq.async_events_reported);
  pthread_cond_destroy(&ibv->cond);
  pthread_mutex_destroy(&ibv->mutex);
  delete &srq;
  return 0;
}
UROCE_BIND_V11(ibv_destroy_srq);

}  // extern "C"
