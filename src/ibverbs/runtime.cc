// DeviceRuntime: opening the device on first use, and routing the engine's
// CQ notifications and asynchronous events to channels and contexts.
#include "ibverbs/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "ibverbs/configuration.h"
#include "ibverbs/device_stats.h"
#include "ibverbs/objects.h"
#include "runtime/peer_reads.h"

namespace uroce::ibverbs {
namespace {

void count_one(int eventfd) {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(eventfd, &one, sizeof one);
}

bool event_names(const ibv_async_event& event, const void* object) {
  switch (event.event_type) {
    case IBV_EVENT_CQ_ERR: return event.element.cq == object;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: return event.element.srq == object;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR: return false;
    default: return event.element.qp == object;
  }
}

}  // namespace

Expected<std::shared_ptr<DeviceRuntime>, std::string> DeviceRuntime::open(UroceDevice& device) {
  auto progress = configured_progress();
  if (!progress) return unexpected(progress.error());
  auto local_path = configured_local_path();
  if (!local_path) return unexpected(local_path.error());
  auto shared_regions = configured_shared_regions();
  if (!shared_regions) return unexpected(shared_regions.error());
  auto loss_probe = configured_loss_probe();
  if (!loss_probe) return unexpected(loss_probe.error());
  auto gso = configured_gso();
  if (!gso) return unexpected(gso.error());
  auto peer_reads = configured_peer_reads();
  if (!peer_reads) return unexpected(peer_reads.error());
  DeviceConfig config;
  config.address = device.spec.address;
  config.interface = device.spec.interface;
  config.progress_thread = progress->progress_thread;
  config.progress_mode = progress->mode;
  config.local_path = *local_path;
  if (!*gso) config.gso = UdpGsoPolicy::never;
  auto running = Device::open(config);
  if (!running) return unexpected(running.error());
  std::shared_ptr<DeviceRuntime> runtime(new DeviceRuntime(device, std::move(*running)));
  runtime->shares_regions_ = *shared_regions && *local_path;
  runtime->lends_memory_ = *peer_reads && *local_path && runtime::let_local_peers_read_memory();
  runtime->loss_probe_ns_ = *loss_probe;
  register_device_stats(device.spec.name, *runtime->device_);
  if (std::string warning = runtime->device_->receive_buffer_warning(); !warning.empty()) {
    std::fprintf(stderr, "uroce: %s: %s\n", device.spec.name.c_str(), warning.c_str());
  }
  runtime->device_->set_event_listener([raw = runtime.get()](Engine& engine) { raw->route_events(engine); });
  return runtime;
}

DeviceRuntime::DeviceRuntime(UroceDevice& device, std::unique_ptr<Device> running)
    : ibv_device_(device), device_(std::move(running)) {}

DeviceRuntime::~DeviceRuntime() {
  print_and_forget_device_stats(*device_);
  device_->set_event_listener(nullptr);
  device_.reset();  // stops the progress thread before the registries go
}

void DeviceRuntime::route_events(Engine& engine) {
  while (std::optional<std::uint32_t> handle = engine.poll_cq_event()) {
    auto found = cqs.find(*handle);
    if (found == cqs.end() || found->second->cq.channel == nullptr) continue;
    ibv_cq* cq = &found->second->cq;
    UroceCompChannel& channel = channel_of(cq->channel);
    {
      std::lock_guard lock(channel.mutex);
      channel.events.push_back(cq);
    }
    count_one(channel.channel.fd);
  }
  while (std::optional<AsyncEvent> event = engine.poll_async_event()) {
    ibv_async_event delivered{};
    delivered.event_type = static_cast<ibv_event_type>(event->type);
    switch (event->type) {
      case AsyncEventType::port_active:
        delivered.element.port_num = static_cast<int>(event->element);
        for (UroceContext* context : contexts) deliver(*context, delivered);
        break;
      case AsyncEventType::cq_err:
        if (auto found = cqs.find(event->element); found != cqs.end()) {
          delivered.element.cq = &found->second->cq;
          deliver(*context_of(found->second->cq.context), delivered);
        }
        break;
      case AsyncEventType::srq_limit_reached:
        if (auto found = srqs.find(event->element); found != srqs.end()) {
          delivered.element.srq = &found->second->srq;
          deliver(*context_of(found->second->srq.context), delivered);
        }
        break;
      default:  // the QP events
        if (auto found = qps.find(event->element); found != qps.end()) {
          delivered.element.qp = &found->second->qpx.qp_base;
          deliver(*context_of(found->second->qpx.qp_base.context), delivered);
        }
        break;
    }
  }
}

void DeviceRuntime::deliver(UroceContext& context, const ibv_async_event& event) {
  {
    std::lock_guard lock(context.async_mutex);
    context.async_events.push_back(event);
  }
  count_one(context.verbs.context.async_fd);
}

void DeviceRuntime::forget_events_of(const void* object) {
  device_->inspect([&](Engine&) {
    for (UroceContext* context : contexts) {
      std::lock_guard lock(context->async_mutex);
      std::erase_if(context->async_events, [&](const ibv_async_event& event) { return event_names(event, object); });
    }
  });
}

DeviceRuntime* runtime_of(UroceContext& context) {
  std::lock_guard context_lock(context.runtime_mutex);
  if (context.runtime) return context.runtime.get();
  UroceDevice& device = *context.device;
  std::lock_guard device_lock(device.runtime_mutex);
  std::shared_ptr<DeviceRuntime> runtime = device.runtime.lock();
  if (!runtime) {
    auto opened = DeviceRuntime::open(device);
    if (!opened) {
      std::fprintf(stderr, "uroce: cannot open %s on %s: %s\n", device.spec.name.c_str(), device.spec.address.c_str(),
                   opened.error().c_str());
      errno = ENODEV;
      return nullptr;
    }
    runtime = std::move(*opened);
    device.runtime = runtime;
  }
  runtime->device().call_and_wake([&](Engine&) { runtime->contexts.push_back(&context); });
  context.runtime = std::move(runtime);
  return context.runtime.get();
}

void release_runtime(UroceContext& context) {
  std::lock_guard context_lock(context.runtime_mutex);
  if (!context.runtime) return;
  DeviceRuntime& runtime = *context.runtime;
  runtime.device().call_and_wake([&](Engine&) { std::erase(runtime.contexts, &context); });
  std::lock_guard device_lock(context.device->runtime_mutex);
  context.runtime.reset();  // the last context closes the device
}

}  // namespace uroce::ibverbs
