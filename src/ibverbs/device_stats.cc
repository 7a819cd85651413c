// UROCE_STATS: the counters of each open device, printed once.
#include "ibverbs/device_stats.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "port/port.h"
#include "transport/registered_copy.h"

namespace uroce::ibverbs {
namespace {

// Made before the exit handler is registered, so destroyed after it runs.
std::mutex& stats_lock() {
  static std::mutex lock;
  return lock;
}

std::map<const Device*, std::string>& open_devices() {
  static std::map<const Device*, std::string> devices;
  return devices;
}

void print(const std::string& name, Device& device) {
  EngineCounters counters = device.counters();
  ProgressCounters progress = device.progress_counters();
  port::PortCounters port = device.port_counters();
  std::fprintf(stderr,
               "uroce: %s: packets sent %llu received %llu, icrc errors %llu, retransmitted %llu "
               "(loss probes %llu, timeouts %llu), duplicates %llu, out of sequence %llu, NAKs sent %llu, "
               "malformed %llu; receiving rounds: thread %llu application %llu; thread sleeps %llu rests %llu; "
               "held ACKs carried %llu expired %llu; intra-host sent %llu received %llu dropped %llu; "
               "extent packets sent %llu received %llu unreadable %llu; GSO sends %llu; loopback waits %llu; "
               "copies that met unmapped memory (this process) %llu\n",
               name.c_str(), static_cast<unsigned long long>(counters.packets_sent),
               static_cast<unsigned long long>(counters.packets_received),
               static_cast<unsigned long long>(counters.icrc_errors),
               static_cast<unsigned long long>(counters.retransmitted_packets),
               static_cast<unsigned long long>(counters.loss_probes),
               static_cast<unsigned long long>(counters.timeouts),
               static_cast<unsigned long long>(counters.duplicate_requests),
               static_cast<unsigned long long>(counters.out_of_sequence),
               static_cast<unsigned long long>(counters.naks_sent),
               static_cast<unsigned long long>(counters.malformed_packets),
               static_cast<unsigned long long>(progress.thread_receives),
               static_cast<unsigned long long>(progress.application_receives),
               static_cast<unsigned long long>(progress.thread_sleeps),
               static_cast<unsigned long long>(progress.thread_rests),
               static_cast<unsigned long long>(progress.acks_carried),
               static_cast<unsigned long long>(progress.acks_expired),
               static_cast<unsigned long long>(port.local_sends),
               static_cast<unsigned long long>(port.local_receives),
               static_cast<unsigned long long>(port.local_drops),
               static_cast<unsigned long long>(counters.extent_packets_sent),
               static_cast<unsigned long long>(counters.extent_packets_received),
               static_cast<unsigned long long>(counters.extents_unreadable),
               static_cast<unsigned long long>(port.gso_sends),
               static_cast<unsigned long long>(port.loopback_waits),
               static_cast<unsigned long long>(transport::registered_copy_faults()));
}

void print_open_devices_at_exit() {
  std::lock_guard lock(stats_lock());
  for (auto& [device, name] : open_devices()) print(name, *const_cast<Device*>(device));
  open_devices().clear();
}

}  // namespace

bool device_stats_wanted() {
  const char* stats = std::getenv("UROCE_STATS");
  return stats != nullptr && *stats != '\0' && *stats != '0';
}

void register_device_stats(const std::string& name, Device& device) {
  if (!device_stats_wanted()) return;
  static bool exit_hook = (stats_lock(), open_devices(), std::atexit(print_open_devices_at_exit), true);
  (void)exit_hook;
  std::lock_guard lock(stats_lock());
  open_devices()[&device] = name;
}

void print_and_forget_device_stats(const Device& device) {
  if (!device_stats_wanted()) return;
  std::lock_guard lock(stats_lock());
  auto found = open_devices().find(&device);
  if (found == open_devices().end()) return;
  print(found->second, const_cast<Device&>(device));
  open_devices().erase(found);
}

}  // namespace uroce::ibverbs
