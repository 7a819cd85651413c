// The rule rdma-core keeps for asynchronous events: destroying a QP, CQ or
// SRQ waits until every event that ibv_get_async_event handed out for it
// has been acknowledged, since the program's event thread still holds a
// pointer to it (UCX's async thread acks while its main thread destroys).
#pragma once

#include <infiniband/verbs.h>
#include <pthread.h>

#include <cstdint>

namespace uroce::ibverbs {

// The counters of the object an event names (none for port and device events).
struct AsyncEventCounts {
  pthread_mutex_t* mutex = nullptr;
  pthread_cond_t* cond = nullptr;
  std::uint32_t* completed = nullptr;  // rdma-core's own field, counted by ibv_ack_async_event
  std::uint32_t* reported = nullptr;   // handed out by ibv_get_async_event
};
AsyncEventCounts async_event_counts(const ibv_async_event& event);

// Blocks until completed == reported, under the object's mutex.
void wait_for_async_acks(pthread_mutex_t& mutex, pthread_cond_t& cond, const std::uint32_t& completed,
                         const std::uint32_t& reported);

}  // namespace uroce::ibverbs
