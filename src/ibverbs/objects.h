// The verbs objects of uroce's libibverbs: each rdma-core structure a program
// holds is the first member of a uroce one, which adds the engine's handle
// for it and the runtime that serves it. The casts below go from what the
// program passes back to the uroce object.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "ibverbs/wr_builder.h"
#include "uroce/verbs_types.h"

namespace uroce::ibverbs {

class DeviceRuntime;

struct UrocePd {
  ibv_pd pd;
  std::uint32_t handle = 0;
  DeviceRuntime* runtime = nullptr;
  ibv_pd* protection_domain = nullptr;  // a parent domain's PD (parent_domains.cc), whose handle it carries
};

struct UroceMr {
  ibv_mr mr;
  DeviceRuntime* runtime = nullptr;
  unsigned access = 0;  // the engine's access flags (what ibv_rereg_mr keeps unless told)
  bool shared = false;  // runtime::SharedRegions holds a reference for it
};

// A completion channel: the CQs whose notification fired, oldest first;
// channel.fd is a semaphore eventfd counting them.
struct UroceCompChannel {
  ibv_comp_channel channel;
  std::mutex mutex;
  std::deque<ibv_cq*> events;
};

struct UroceCq {
  union {
    ibv_cq cq;
    ibv_cq_ex cq_ex;  // from ibv_create_cq_ex: cq's fields, then the polling ops (extended_cqs.cc)
  };
  std::uint32_t handle = 0;
  DeviceRuntime* runtime = nullptr;
  std::uint32_t async_events_reported = 0;  // under cq.mutex (async_event_acks.h)
  // An extended CQ's completion between start_poll and end_poll, and when
  // the library took it from the engine (CLOCK_MONOTONIC and CLOCK_REALTIME, ns).
  WorkCompletion current{};
  std::uint64_t current_monotonic_ns = 0;
  std::uint64_t current_wallclock_ns = 0;
};

struct UroceSrq {
  ibv_srq srq;
  std::uint32_t handle = 0;
  DeviceRuntime* runtime = nullptr;
  ibv_srq_attr attr{};  // as created, with the limit last set
  std::uint32_t async_events_reported = 0;  // under srq.mutex (async_event_acks.h)
};

struct UroceAh {
  ibv_ah ah;
  std::uint32_t handle = 0;
  DeviceRuntime* runtime = nullptr;
};

struct UroceQp {
  ibv_qp_ex qpx;  // qpx.qp_base is the ibv_qp; every QP is extended
  DeviceRuntime* runtime = nullptr;
  ibv_qp_init_attr init{};  // as granted, for ibv_query_qp
  WrBuilder builder;        // the ibv_wr_* requests between wr_start and wr_complete
  std::uint32_t async_events_reported = 0;  // under the ibv_qp's mutex (async_event_acks.h)
};

template <class Uroce, class Ibv>
Uroce* uroce_of(Ibv* object) {
  return reinterpret_cast<Uroce*>(object);
}

inline UrocePd& pd_of(ibv_pd* pd) { return *uroce_of<UrocePd>(pd); }
inline UroceMr& mr_of(ibv_mr* mr) { return *uroce_of<UroceMr>(mr); }
inline UroceCompChannel& channel_of(ibv_comp_channel* channel) { return *uroce_of<UroceCompChannel>(channel); }
inline UroceCq& cq_of(ibv_cq* cq) { return *uroce_of<UroceCq>(cq); }
inline UroceSrq& srq_of(ibv_srq* srq) { return *uroce_of<UroceSrq>(srq); }
inline UroceAh& ah_of(ibv_ah* ah) { return *uroce_of<UroceAh>(ah); }
inline UroceQp& qp_of(ibv_qp* qp) { return *uroce_of<UroceQp>(qp); }
inline UroceQp& qp_of(ibv_qp_ex* qpx) { return *uroce_of<UroceQp>(qpx); }

}  // namespace uroce::ibverbs
