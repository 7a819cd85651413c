// Asynchronous events (QP fatal, port active, SRQ limit ...): the runtime
// queues them on the context they concern and counts them on the context's
// async_fd, a semaphore eventfd, so ibv_get_async_event blocks until one
// comes (or fails with EAGAIN on a non-blocking fd), as with rdma-core.
#include <infiniband/verbs.h>
#include <unistd.h>

#include "ibverbs/async_event_acks.h"
#include "ibverbs/ibverbs_device.h"
#include "ibverbs/objects.h"
#include "ibverbs/symbol_versions.h"

using uroce::ibverbs::async_event_counts;
using uroce::ibverbs::AsyncEventCounts;
using uroce::ibverbs::UroceContext;

namespace uroce::ibverbs {

AsyncEventCounts async_event_counts(const ibv_async_event& event) {
  switch (event.event_type) {
    case IBV_EVENT_CQ_ERR: {
      ibv_cq* cq = event.element.cq;
      return {&cq->mutex, &cq->cond, &cq->async_events_completed, &cq_of(cq).async_events_reported};
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
      ibv_srq* srq = event.element.srq;
      return {&srq->mutex, &srq->cond, &srq->events_completed, &srq_of(srq).async_events_reported};
    }
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_DEVICE_FATAL: return {};
    default: {
      ibv_qp* qp = event.element.qp;
      return {&qp->mutex, &qp->cond, &qp->events_completed, &qp_of(qp).async_events_reported};
    }
  }
}

void wait_for_async_acks(pthread_mutex_t& mutex, pthread_cond_t& cond, const std::uint32_t& completed,
                         const std::uint32_t& reported) {
  pthread_mutex_lock(&mutex);
  while (completed != reported) pthread_cond_wait(&cond, &mutex);
  pthread_mutex_unlock(&mutex);
}

}  // namespace uroce::ibverbs

extern "C" {

int UROCE_V11(ibv_get_async_event)(ibv_context* context, ibv_async_event* event) {
  UroceContext& uroce = *uroce::ibverbs::context_of(context);
  while (true) {
    std::uint64_t one;
    if (::read(context->async_fd, &one, sizeof one) != sizeof one) return -1;  // errno: EAGAIN when non-blocking
    std::lock_guard lock(uroce.async_mutex);
    if (uroce.async_events.empty()) continue;  // the count of an event its object's destruction dropped
    *event = uroce.async_events.front();
    uroce.async_events.pop_front();
    // Counted before async_mutex is let go: a destroy that has dropped the
    // object's queued events then sees every event handed out.
    AsyncEventCounts counts = async_event_counts(*event);
    if (counts.mutex != nullptr) {
      pthread_mutex_lock(counts.mutex);
      ++*counts.reported;
      pthread_mutex_unlock(counts.mutex);
    }
    return 0;
  }
}
UROCE_BIND_V11(ibv_get_async_event);

void UROCE_V11(ibv_ack_async_event)(ibv_async_event* event) {
  AsyncEventCounts counts = async_event_counts(*event);
  if (counts.mutex == nullptr) return;
  pthread_mutex_lock(counts.mutex);
  ++*counts.completed;
  pthread_cond_signal(counts.cond);
  pthread_mutex_unlock(counts.mutex);
}
UROCE_BIND_V11(ibv_ack_async_event);

}  // extern "C"
