// A soft RNIC on a real network: the engine joined to a port on one local
// address (a UDP socket, or whole Ethernet frames on an interface) and a
// monotonic clock. By default a progress thread moves packets
// and fires timers, so a remote WRITE or READ is served while the application
// sleeps, as on a hardware RNIC; with progress_thread off the application
// drives progress() itself (lowest latency, one thread).
//
//   auto device = uroce::Device::open({.address = "127.0.0.2"});
//   std::uint32_t pd = (*device)->call([](uroce::Engine& e) { return *e.alloc_pd(); });
//
// Every verbs call goes through call(), which holds the device lock; the
// engine is never touched by two threads at once.
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/expected.h"
#include "uroce/engine.h"

namespace uroce {

namespace port {
class Port;
struct PortCounters;
}

// What a UDP port does with the ICRC of arrivals (DESIGN.md: a UDP socket
// cannot see the IPv4 Identification, which the ICRC covers).
enum class UdpIcrcPolicy : std::uint8_t {
  // Rebuild the IPv4 header as a DF-set, Identification-0 sender (uroce,
  // hardware RNICs) sends it and verify; a peer that sends other values
  // (Linux Soft-RoCE) fails, and its packets count as ICRC errors. IPv6 has
  // no Identification and is always verified in full.
  verify_assuming_id0,
  // Accept IPv4 arrivals without an ICRC check (counted in icrc_unchecked).
  skip_ipv4,
};

// When the UDP port may hand the kernel a run of equal-sized datagrams as one
// UDP GSO send. The kernel gives the segments after the first IPv4
// Identifications 1, 2, ..., which the ICRC covers: a uroce UDP peer rebuilds
// headers with Identification 0 and never notices, but a peer that checks
// the ICRC over the real header (a hardware RNIC, a raw port) would drop them.
enum class UdpGsoPolicy : std::uint8_t {
  // IPv6 (no Identification) anywhere, and IPv4 to loopback addresses, where
  // the peer can only be another socket: the bytes any peer checks are unchanged.
  where_bytes_unchanged,
  always,  // also IPv4 to other hosts: only when every peer is a uroce UDP port
  never,
};

struct DeviceConfig {
  // The local IPv4 or IPv6 address; the GID follows from it. With an
  // interface it may be empty: the interface's first IPv4 address.
  std::string address;
  // Empty: the UDP port (kernel UDP sockets, no privileges). An interface
  // name: the raw Ethernet port on it (AF_PACKET, needs CAP_NET_RAW), which
  // verifies every ICRC and talks to any RoCEv2 peer on the link (IPv4).
  std::string interface;
  std::uint16_t udp_port = 4791;
  UdpIcrcPolicy icrc = UdpIcrcPolicy::verify_assuming_id0;
  UdpGsoPolicy gso = UdpGsoPolicy::where_bytes_unchanged;
  bool progress_thread = true;
  EngineConfig engine;  // its gid is replaced by the address's
  // Keep engine.seed as given (reproducible keys and QPNs, for tests); by
  // default each device mixes in fresh randomness so rkeys cannot be guessed.
  bool fixed_seed = false;
};

class Device {
 public:
  static Expected<std::unique_ptr<Device>, std::string> open(const DeviceConfig& config);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Runs f(engine) under the device lock, then lets the progress thread see
  // what it posted.
  template <class F>
  decltype(auto) call(F&& f) {
    struct Wake {
      Device* device;
      ~Wake() { device->wake(); }
    } wake{this};
    std::lock_guard lock(mutex_);
    struct Signal {  // runs before the lock is released
      Device* device;
      ~Signal() { device->signal_completions_locked(); }
    } signal{this};
    return f(engine_);
  }

  // Runs f(engine) under the device lock without waking the progress thread:
  // for calls that post nothing (polling a CQ, queries), which an
  // application may make in a tight loop.
  template <class F>
  decltype(auto) inspect(F&& f) {
    std::lock_guard lock(mutex_);
    return f(engine_);
  }

  // For an application that posts work (ibv_post_send): runs f(engine)
  // under the lock and hands what it queued to the port at once, from the
  // calling thread, instead of waking the progress thread for it.
  template <class F>
  decltype(auto) post(F&& f) {
    std::lock_guard lock(mutex_);
    struct Flush {  // runs before the lock is released
      Device* device;
      ~Flush() { device->transmit_posted_locked(); }
    } flush{this};
    return f(engine_);
  }

  // For an application that busy-polls (ibv_poll_cq in a loop): runs
  // f(engine), which returns how many completions it took; when it took none,
  // drives a progress round from the calling thread and asks again, so a
  // polling application moves its own packets (two busy pollers and two
  // progress threads on two cores would otherwise wait for each other's
  // time slices). When the progress thread holds the lock, waits for its
  // round and takes what it found: a program that polls once per CQ event
  // must see the completion the event announced.
  template <class F>
  int poll(F&& f) {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
      lock.lock();
      return f(engine_);
    }
    int found = f(engine_);
    if (found != 0) return found;
    progress_polled_locked();
    return f(engine_);
  }

  // Called under the device lock after every verbs call and progress round,
  // before the completion fd is signalled: a layer with its own completion
  // channels and event queues (the libibverbs library) takes the engine's CQ
  // and asynchronous events here. Set it before any object exists.
  void set_event_listener(std::function<void(Engine&)> listener) {
    std::lock_guard lock(mutex_);
    event_listener_ = std::move(listener);
  }

  // Fires due timers, sends what the engine has, receives what arrived. The
  // progress thread calls it; without one the application does, whenever it
  // polls: what one call receives is answered (ACKs, READ responses) by the
  // next, so that an inline reply the application posts in between leaves in
  // the same batch.
  void progress();

  // The completion channel (ibv_comp_channel): an fd that polls readable
  // while the notification of an armed CQ waits to be taken. Arm a CQ with
  // call([&](Engine& e) { return e.req_notify_cq(cq, false); }), sleep in
  // poll/epoll on the fd, then take the event and poll the CQ. With no
  // progress thread the fd only turns readable while progress() is driven.
  int completion_fd() const { return completion_fd_; }
  // The CQ whose notification fired, oldest first (ibv_get_cq_event), if any.
  std::optional<std::uint32_t> get_cq_event();

  const Gid& gid() const { return gid_; }
  EngineCounters counters();
  port::PortCounters port_counters();
  // The largest path MTU whose packets fit the port's link (as Linux
  // Soft-RoCE derives the active MTU from the interface MTU).
  PathMtu max_path_mtu();

 private:
  explicit Device(const DeviceConfig& config);
  bool progress_locked(TimeNs now, bool answer_now);
  void transmit(TimeNs now);
  void keep_unsent(std::size_t taken);
  void signal_completions_locked();
  void transmit_posted_locked();
  void progress_polled_locked();
  void run_progress_thread();
  void wake();

  Gid gid_{};
  std::mutex mutex_;
  Engine engine_;
  std::unique_ptr<port::Port> port_;
  // Datagrams from the engine wait here for one batched send; those the port
  // refused (back-pressure) stay at the front and go first next time.
  std::vector<std::uint8_t> transmit_slots_;
  std::vector<std::span<const std::uint8_t>> transmit_queue_;
  int wake_fd_ = -1;
  int completion_fd_ = -1;
  bool completion_signalled_ = false;
  std::function<void(Engine&)> event_listener_;  // completion_fd_ holds a count not yet read
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
  std::thread thread_;
};

}  // namespace uroce
