// Asynchronous events (QP fatal, port active, SRQ limit ...): the runtime
// queues them on the context they concern and counts them on the context's
// async_fd, a semaphore eventfd, so ibv_get_async_event blocks until one
// comes (or fails with EAGAIN on a non-blocking fd), as with rdma-core.
#include <infiniband/verbs.h>
#include <unistd.h>

#include "ibverbs/ibverbs_device.h"
#include "ibverbs/symbol_versions.h"

using uroce::ibverbs::UroceContext;

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
    return 0;
  }
}
UROCE_BIND_V11(ibv_get_async_event);

void UROCE_V11(ibv_ack_async_event)(ibv_async_event* event) {
  auto count = [](pthread_mutex_t& mutex, pthread_cond_t& cond, std::uint32_t& completed) {
    pthread_mutex_lock(&mutex);
    ++completed;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&mutex);
  };
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      count(event->element.cq->mutex, event->element.cq->cond, event->element.cq->async_events_completed);
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      count(event->element.srq->mutex, event->element.srq->cond, event->element.srq->events_completed);
      break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_DEVICE_FATAL: break;
    default: count(event->element.qp->mutex, event->element.qp->cond, event->element.qp->events_completed); break;
  }
}
UROCE_BIND_V11(ibv_ack_async_event);

}  // extern "C"
