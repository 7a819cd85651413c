// DeviceRuntime: the uroce::Device behind one libibverbs device. It is opened
// when a context first needs it (a PD, a CQ), not by ibv_open_device, so that
// ibv_devinfo runs beside a program that holds the address; all contexts of
// the process on that device share it, and it closes with the last one.
// It routes the engine's events: CQ notifications to their completion
// channels, asynchronous events to the contexts they concern.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ibverbs/ibverbs_device.h"
#include "uroce/device.h"

namespace uroce::ibverbs {

struct UroceCq;
struct UroceMr;
struct UrocePd;
struct UroceQp;
struct UroceSrq;

class DeviceRuntime {
 public:
  static Expected<std::shared_ptr<DeviceRuntime>, std::string> open(UroceDevice& device);
  ~DeviceRuntime();

  Device& device() { return *device_; }
  // Whether ibv_reg_mr shares regions with local peers (UROCE_SHARED_MR=1 on the intra-host path).
  bool shares_regions() const { return shares_regions_; }
  // Whether local peers read registered memory themselves (UROCE_PEER_READS,
  // on the intra-host path, where the kernel lets them: runtime/peer_reads.h).
  bool lends_memory() const { return lends_memory_; }
  // Each RC and XRC QP's loss probe interval (UROCE_LOSS_PROBE_US), 0: off.
  TimeNs loss_probe_ns() const { return loss_probe_ns_; }
  UroceDevice& ibv_device() { return ibv_device_; }

  // Engine handle -> library object, for the event routing. Change them only
  // inside device().call_and_wake() (under the device lock), where the routing runs.
  std::unordered_map<std::uint32_t, UroceCq*> cqs;
  std::unordered_map<std::uint32_t, UroceQp*> qps;
  std::unordered_map<std::uint32_t, UroceSrq*> srqs;
  // Engine handle / lkey -> the PD or MR made with it, for ibv_import_pd and ibv_import_mr.
  std::unordered_map<std::uint32_t, UrocePd*> pds;
  std::unordered_map<std::uint32_t, UroceMr*> mrs;
  std::vector<UroceContext*> contexts;  // port events go to each

  // Drops queued events that name an object about to be freed.
  void forget_events_of(const void* object);

 private:
  DeviceRuntime(UroceDevice& device, std::unique_ptr<Device> running);
  void route_events(Engine& engine);
  void deliver(UroceContext& context, const ibv_async_event& event);

  UroceDevice& ibv_device_;
  std::unique_ptr<Device> device_;
  bool shares_regions_ = false;
  bool lends_memory_ = false;
  TimeNs loss_probe_ns_ = 0;
};

// The context's runtime, opened on first use; nullptr with errno set (and the
// reason on stderr) when the device cannot be opened.
DeviceRuntime* runtime_of(UroceContext& context);

// Detaches a closing context from its runtime.
void release_runtime(UroceContext& context);

}  // namespace uroce::ibverbs
