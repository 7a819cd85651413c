// Completion queues and completion channels. A channel's fd is a semaphore
// eventfd: one count per fired notification, so ibv_get_cq_event blocks (or
// fails with EAGAIN on a non-blocking fd) exactly as with a kernel channel,
// and the fd polls readable while an event waits.
#include <fcntl.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <new>

#include "ibverbs/async_event_acks.h"
#include "ibverbs/objects.h"
#include "ibverbs/symbol_versions.h"
#include "ibverbs/verbs_ops.h"
#include "ibverbs/verbs_support.h"

namespace uroce::ibverbs {
namespace {

constexpr std::size_t kPollBatch = 32;

void to_ibv_wc(const WorkCompletion& from, ibv_wc& to) {
  to.wr_id = from.wr_id;
  to.status = static_cast<ibv_wc_status>(from.status);
  to.opcode = static_cast<ibv_wc_opcode>(from.opcode);
  to.vendor_err = from.vendor_err;
  to.byte_len = from.byte_len;
  // imm_data in network order (as it was on the wire), or invalidated_rkey, a value: the same union.
  to.imm_data = (from.wc_flags & IBV_WC_WITH_IMM) != 0 ? htonl(from.imm_data) : from.imm_data;
  to.qp_num = from.qp_num;
  to.src_qp = from.src_qp;
  to.wc_flags = from.wc_flags;
  to.pkey_index = from.pkey_index;
  to.slid = 0;
  to.sl = from.network_header_type;  // RoCE has no SL; ConnectX reports the L3 type here
  to.dlid_path_bits = 0;
}

}  // namespace

int poll_cq(ibv_cq* ibv, int entries, ibv_wc* wc) {
  if (entries < 0) return -1;
  UroceCq& cq = cq_of(ibv);
  std::array<WorkCompletion, kPollBatch> taken;
  return cq.runtime->device().poll([&](Engine& engine) {
    int total = 0;
    while (total < entries) {
      std::size_t wanted = std::min<std::size_t>(kPollBatch, static_cast<std::size_t>(entries - total));
      auto got = engine.poll_cq(cq.handle, std::span(taken.data(), wanted));
      if (!got) return total == 0 ? -1 : total;
      for (std::size_t i = 0; i < *got; ++i) to_ibv_wc(taken[i], wc[total++]);
      if (*got < wanted) break;
    }
    return total;
  });
}

int req_notify_cq(ibv_cq* ibv, int solicited_only) {
  UroceCq& cq = cq_of(ibv);
  // The application will sleep on the channel: the progress thread watches the port.
  cq.runtime->device().hand_progress_to_thread();
  return errno_of(cq.runtime->device().inspect(
      [&](Engine& engine) { return engine.req_notify_cq(cq.handle, solicited_only != 0); }));
}

}  // namespace uroce::ibverbs

using namespace uroce::ibverbs;

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  auto* channel = new (std::nothrow) UroceCompChannel{};
  if (channel == nullptr) return fail_with<ibv_comp_channel>(ENOMEM);
  channel->channel.context = context;
  channel->channel.fd = ::eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (channel->channel.fd < 0) {
    int error = errno;
    delete channel;
    return fail_with<ibv_comp_channel>(error);
  }
  return &channel->channel;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (channel->refcnt != 0) return EBUSY;  // a CQ still reports to it
  ::close(channel->fd);
  delete &channel_of(channel);
  return 0;
}

}  // extern "C"

namespace uroce::ibverbs {

ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  if (cqe <= 0 || comp_vector < 0 || comp_vector >= context->num_comp_vectors) return fail_with<ibv_cq>(EINVAL);
  DeviceRuntime* runtime = runtime_for(context);
  if (runtime == nullptr) return nullptr;
  auto* cq = new (std::nothrow) UroceCq{};
  if (cq == nullptr) return fail_with<ibv_cq>(ENOMEM);
  cq->runtime = runtime;
  cq->cq.context = context;
  cq->cq.channel = channel;
  cq->cq.cq_context = cq_context;
  cq->cq.cqe = cqe;
  pthread_mutex_init(&cq->cq.mutex, nullptr);
  pthread_cond_init(&cq->cq.cond, nullptr);
  auto handle = runtime->device().call_and_wake([&](uroce::Engine& engine) {
    auto created = engine.create_cq(static_cast<std::uint32_t>(cqe));
    if (created) runtime->cqs.emplace(*created, cq);
    return created;
  });
  if (!handle) {
    delete cq;
    return fail_with<ibv_cq>(errno_of(handle.error()));
  }
  cq->handle = *handle;
  cq->cq.handle = *handle;
  if (channel != nullptr) {
    std::lock_guard lock(channel_of(channel).mutex);
    ++channel->refcnt;
  }
  return &cq->cq;
}

}  // namespace uroce::ibverbs

extern "C" {

ibv_cq* UROCE_V11(ibv_create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                                 int comp_vector) {
  return create_cq(context, cqe, cq_context, channel, comp_vector);
}
UROCE_BIND_V11(ibv_create_cq);

// Up or down, keeping the completions that wait; EINVAL below their number
// (as Soft-RoCE answers).
int UROCE_V11(ibv_resize_cq)(ibv_cq* ibv, int cqe) {
  if (cqe <= 0) return EINVAL;
  UroceCq& cq = cq_of(ibv);
  std::errc resized = cq.runtime->device().inspect(  // sends nothing: no need to wake the progress thread
      [&](uroce::Engine& engine) { return engine.resize_cq(cq.handle, static_cast<std::uint32_t>(cqe)); });
  if (resized != std::errc{}) return errno_of(resized);
  ibv->cqe = cqe;
  return 0;
}
UROCE_BIND_V11(ibv_resize_cq);

int UROCE_V11(ibv_destroy_cq)(ibv_cq* ibv) {
  UroceCq& cq = cq_of(ibv);
  DeviceRuntime& runtime = *cq.runtime;
  std::errc result = runtime.device().call_and_wake([&](uroce::Engine& engine) {
    std::errc destroyed = engine.destroy_cq(cq.handle);
    if (destroyed == std::errc{}) runtime.cqs.erase(cq.handle);
    return destroyed;
  });
  if (result != std::errc{}) return errno_of(result);
  if (ibv->channel != nullptr) {
    UroceCompChannel& channel = channel_of(ibv->channel);
    std::lock_guard lock(channel.mutex);
    std::erase(channel.events, ibv);  // their counts stay: ibv_get_cq_event skips them
    --ibv->channel->refcnt;
  }
  runtime.forget_events_of(ibv);
  wait_for_async_acks(ibv->mutex, ibv->cond, ibv->async_events_completed, cq.async_events_reported);
  pthread_cond_destroy(&ibv->cond);
  pthread_mutex_destroy(&ibv->mutex);
  delete &cq;
  return 0;
}
UROCE_BIND_V11(ibv_destroy_cq);

int UROCE_V11(ibv_get_cq_event)(ibv_comp_channel* ibv, ibv_cq** cq, void** cq_context) {
  UroceCompChannel& channel = channel_of(ibv);
  while (true) {
    std::uint64_t one;
    if (::read(ibv->fd, &one, sizeof one) != sizeof one) return -1;  // errno: EAGAIN on a non-blocking fd
    std::lock_guard lock(channel.mutex);
    if (channel.events.empty()) continue;  // the count of an event its CQ's destruction dropped
    *cq = channel.events.front();
    channel.events.pop_front();
    *cq_context = (*cq)->cq_context;
    return 0;
  }
}
UROCE_BIND_V11(ibv_get_cq_event);

void UROCE_V11(ibv_ack_cq_events)(ibv_cq* cq, unsigned int count) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += count;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}
UROCE_BIND_V11(ibv_ack_cq_events);

}  // extern "C"
