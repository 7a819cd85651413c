// Event channels and events: rdma_create_event_channel, rdma_get_cm_event
// (blocks on the channel's eventfd unless the program made it
// non-blocking), rdma_ack_cm_event, rdma_event_str; queue_event.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <cerrno>
#include <new>

#include "rdmacm/cm_objects.h"

namespace uroce::rdmacm {

std::condition_variable& events_acked() {
  static auto* condition = new std::condition_variable;
  return *condition;
}

namespace {

// Channels the program destroyed. A thread of the program may still call
// rdma_get_cm_event on one: rping's event thread does, racing its main
// thread's teardown. So a destroyed channel's memory stays, and its eventfd,
// which nothing writes any more, keeps such a call waiting until the
// process exits (with rdma-core, a read on the channel's closed fd waits or
// fails). Only the newest kKeptOpen keep their fd; a call on an older one
// fails with EBADF.
constexpr std::size_t kKeptOpen = 64;

std::deque<CmChannel*>& retired_channels() {
  static auto* channels = new std::deque<CmChannel*>;
  return *channels;
}

}  // namespace

EventQueue::~EventQueue() {
  for (CmEventRecord* record : records) delete record;
  if (fd >= 0) ::close(fd);
}

rdma_cm_event* queue_event(CmId& id, rdma_cm_event_type type, int status, ByteSpan data, CmId* listener) {
  CmChannel* channel = id.channel;
  if (channel == nullptr || channel->events == nullptr) return nullptr;
  auto* record = new (std::nothrow) CmEventRecord;
  if (record == nullptr) return nullptr;
  record->event.id = &id.id;
  record->event.listen_id = listener != nullptr ? &listener->id : nullptr;
  record->event.event = type;
  record->event.status = status;
  std::size_t length = std::min(data.size(), record->private_data.size());
  std::copy_n(data.begin(), length, record->private_data.begin());
  record->event.param.conn.private_data = length != 0 ? record->private_data.data() : nullptr;
  record->event.param.conn.private_data_len = static_cast<std::uint8_t>(std::min<std::size_t>(length, 255));
  channel->events->records.push_back(record);
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(channel->events->fd, &one, sizeof one);
  return &record->event;
}

std::uint16_t source_port(const CmId& id) {
  const sockaddr& address = id.id.route.addr.src_addr;
  if (address.sa_family == AF_INET) return ntohs(id.id.route.addr.src_sin.sin_port);
  if (address.sa_family == AF_INET6) return ntohs(id.id.route.addr.src_sin6.sin6_port);
  return 0;
}

std::uint16_t destination_port(const CmId& id) {
  const sockaddr& address = id.id.route.addr.dst_addr;
  if (address.sa_family == AF_INET) return ntohs(id.id.route.addr.dst_sin.sin_port);
  if (address.sa_family == AF_INET6) return ntohs(id.id.route.addr.dst_sin6.sin6_port);
  return 0;
}

}  // namespace uroce::rdmacm

using namespace uroce::rdmacm;

extern "C" {

rdma_event_channel* rdma_create_event_channel() {
  auto* channel = new (std::nothrow) CmChannel;
  if (channel != nullptr) channel->events = std::shared_ptr<EventQueue>(new (std::nothrow) EventQueue);
  if (channel == nullptr || channel->events == nullptr) {
    delete channel;
    errno = ENOMEM;
    return nullptr;
  }
  channel->events->fd = channel->channel.fd = ::eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (channel->channel.fd < 0) {
    int error = errno;
    delete channel;
    errno = error;
    return nullptr;
  }
  return &channel->channel;
}

void rdma_destroy_event_channel(rdma_event_channel* channel) {
  if (channel == nullptr) return;
  std::lock_guard lock(cm_lock());
  CmChannel* retired = channel_of(channel);
  for (CmEventRecord* record : retired->events->records) delete record;
  retired->events->records.clear();
  auto& retired_list = retired_channels();
  retired_list.push_back(retired);
  if (retired_list.size() > kKeptOpen) {
    // Its events and fd go with the last waiter; the memory stays.
    retired_list[retired_list.size() - kKeptOpen - 1]->events.reset();
  }
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (channel == nullptr || event == nullptr) {
    errno = EINVAL;
    return -1;
  }
  std::shared_ptr<EventQueue> events;
  {
    std::lock_guard lock(cm_lock());
    events = channel_of(channel)->events;
  }
  if (events == nullptr) {  // destroyed long ago (see retired_channels)
    errno = EBADF;
    return -1;
  }
  // A count may outlive its event (an ID destroyed, or moved to another
  // channel, with events queued): then wait for the next one.
  while (true) {
    std::uint64_t count = 0;
    if (::read(events->fd, &count, sizeof count) < 0) {
      if (errno == EINTR) continue;
      return -1;  // EAGAIN on a non-blocking channel with nothing queued
    }
    std::lock_guard lock(cm_lock());
    if (events->records.empty()) continue;
    *event = &events->records.front()->event;
    events->records.pop_front();
    ++cm_id_of((*event)->id)->events_taken;
    on_event_taken(*cm_id_of((*event)->id), **event);
    return 0;
  }
}

int rdma_ack_cm_event(rdma_cm_event* event) {
  if (event == nullptr) {
    errno = EINVAL;
    return -1;
  }
  std::lock_guard lock(cm_lock());
  --cm_id_of(event->id)->events_taken;
  delete reinterpret_cast<CmEventRecord*>(event);
  events_acked().notify_all();
  return 0;
}

const char* rdma_event_str(rdma_cm_event_type event) {
  static constexpr const char* kNames[] = {
      "RDMA_CM_EVENT_ADDR_RESOLVED",    "RDMA_CM_EVENT_ADDR_ERROR",       "RDMA_CM_EVENT_ROUTE_RESOLVED",
      "RDMA_CM_EVENT_ROUTE_ERROR",      "RDMA_CM_EVENT_CONNECT_REQUEST",  "RDMA_CM_EVENT_CONNECT_RESPONSE",
      "RDMA_CM_EVENT_CONNECT_ERROR",    "RDMA_CM_EVENT_UNREACHABLE",      "RDMA_CM_EVENT_REJECTED",
      "RDMA_CM_EVENT_ESTABLISHED",      "RDMA_CM_EVENT_DISCONNECTED",     "RDMA_CM_EVENT_DEVICE_REMOVAL",
      "RDMA_CM_EVENT_MULTICAST_JOIN",   "RDMA_CM_EVENT_MULTICAST_ERROR",  "RDMA_CM_EVENT_ADDR_CHANGE",
      "RDMA_CM_EVENT_TIMEWAIT_EXIT"};
  auto index = static_cast<std::size_t>(event);
  return index < std::size(kNames) ? kNames[index] : "UNKNOWN EVENT";
}

}  // extern "C"

namespace uroce::rdmacm {

int complete_if_synchronous(rdma_cm_id* id, rdma_cm_event_type expected) {
  {
    std::lock_guard lock(cm_lock());
    if (!cm_id_of(id)->synchronous) return 0;
  }
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(id->channel, &event) != 0) return -1;
  rdma_cm_event_type type = event->event;
  int status = event->status;
  rdma_ack_cm_event(event);
  if (type == expected) return 0;
  errno = status < 0 ? -status : (type == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED : EIO);
  return -1;
}

}  // namespace uroce::rdmacm
