// A soft RNIC on a real network: the engine joined to a port on one local
// address (a UDP socket, or whole Ethernet frames on an interface) and a
// monotonic clock. By default a progress thread moves packets
// and fires timers, so a remote WRITE or READ is served while the application
// sleeps, as on a hardware RNIC; with progress_thread off the application
// drives progress() itself (lowest latency, one thread). ProgressMode says
// how the thread and a polling application share the work.
//
//   auto device = uroce::Device::open({.address = "127.0.0.2"});
//   std::uint32_t pd = (*device)->call_and_wake([](uroce::Engine& e) { return *e.alloc_pd(); });
//
// Every verbs call goes through one of the calls below (call_and_wake,
// inspect, post, post_receive, poll), each of which holds the device lock:
// the engine is never touched by two threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "uroce/expected.h"
#include "uroce/monotonic_clock.h"
#include "uroce/engine.h"
#include "uroce/udp_port_policies.h"

namespace uroce {

namespace port {
struct PortCounters;
}
namespace runtime {
enum class AckRelease : std::uint8_t;
}

// How a progress thread shares the packet work with an application that
// polls (docs/design/progress-engine.md).
enum class ProgressMode : std::uint8_t {
  // The thread watches the port all the time; the application's polls help.
  // On a machine with fewer cores than busy threads, every arrival waits for
  // the thread to be scheduled beside the spinning application.
  thread,
  // While the application polls (a poll that found nothing moved packets in
  // the last handoff_ns), it alone moves them and the thread rests. When it
  // stops polling, or arms a CQ to sleep on its channel, the thread takes
  // over the port. Bare ACKs wait up to ack_hold_ns for the application's
  // next post, so a ping-pong's reply and the ACK leave in one batch, reply
  // first, and the peer polling for the ACK takes the reply along.
  adaptive,
};

// Who moved the packets (UROCE_STATS prints them): the measure of whether
// a polling application keeps its packets to itself.
struct ProgressCounters {
  std::uint64_t thread_receives = 0;       // the progress thread's rounds that received datagrams
  std::uint64_t application_receives = 0;  // the application's polling rounds that received datagrams
  std::uint64_t thread_sleeps = 0;         // times the thread slept watching the port
  std::uint64_t thread_rests = 0;          // times it slept leaving the port to the application
  std::uint64_t acks_carried = 0;          // held ACKs that left behind a posted reply
  std::uint64_t acks_expired = 0;          // held ACKs that left alone after ack_hold_ns
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
  // The intra-host path (UDP port only): datagrams for another uroce device
  // of this user in this network namespace go through shared memory
  // (port/local_port.h) instead of the kernel; other peers are unaffected.
  // Off, every datagram is on the wire, where captures and other stacks see it.
  bool local_path = false;
  bool progress_thread = true;
  ProgressMode progress_mode = ProgressMode::thread;
  // adaptive: how long after the application's last polling round the
  // thread still leaves the port to it.
  TimeNs handoff_ns = 200'000;
  // adaptive: how long a bare ACK first waits for a reply to carry it out;
  // the device adapts it between 2 us and ten times this (see device.cc).
  TimeNs ack_hold_ns = 20'000;
  // adaptive: how long the thread keeps polling the port after an arrival
  // before it sleeps.
  TimeNs spin_ns = 50'000;
  EngineConfig engine;  // its gid is replaced by the address's
  // Keep engine.seed as given (reproducible keys and QPNs, for tests); by
  // default each device mixes in fresh randomness so rkeys cannot be guessed.
  bool fixed_seed = false;
};

// What to tell a user whose device's socket got a receive buffer of
// `granted` bytes when it asked for `wanted` (net.core.rmem_max, which only
// CAP_NET_ADMIN lifts): empty when it got what it asked for.
std::string receive_buffer_warning(std::size_t granted, std::size_t wanted);

class Device {
 public:
  static Expected<std::unique_ptr<Device>, std::string> open(const DeviceConfig& config);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Runs f(engine) under the device lock (signalling completions, as
  // post_receive), then wakes the progress thread to move whatever f
  // queued: for creating, changing and destroying objects, and for posts
  // that the next progress round may send together.
  template <class F>
  decltype(auto) call_and_wake(F&& f) {
    struct Wake {  // runs after the lock is released
      Device* device;
      ~Wake() { device->wake(); }
    } wake{this};
    return post_receive(std::forward<F>(f));
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
    return locked_then<&Device::transmit_posted_locked>(std::forward<F>(f));
  }

  // For posting receive WQEs (ibv_post_recv), which give the port nothing
  // to send: runs f(engine) under the lock and signals completions (a QP in
  // error flushes what is posted to it), without a transmit or a wake.
  template <class F>
  decltype(auto) post_receive(F&& f) {
    return locked_then<&Device::signal_completions_locked>(std::forward<F>(f));
  }

  // For an application that busy-polls (ibv_poll_cq in a loop): runs
  // f(engine), which returns how many completions it took; when it took none,
  // drives a progress round from the calling thread and asks again, so a
  // polling application moves its own packets (two busy pollers and two
  // progress threads on two cores would otherwise wait for each other's
  // time slices). When the progress thread holds the lock, waits for its
  // round and takes what it found: a program that polls once per CQ event
  // must see the completion the event announced.
  // A poll that finds completions still moves packets when the last round
  // is older than kPolledRoundInterval, so that a stream whose CQ never runs
  // dry keeps taking its ACKs.
  template <class F>
  int poll(F&& f) {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
      note_application_polls(monotonic_now(), false);  // the thread, in a round now, rests after it
      lock.lock();
      return f(engine_);
    }
    int found = f(engine_);
    if (!progress_polled_locked(found != 0)) return found;
    return found != 0 ? found : f(engine_);
  }

  // The application is about to sleep (it armed a CQ to wait on its
  // completion channel): in adaptive mode the thread takes the port now
  // instead of after the handoff time.
  void hand_progress_to_thread();

  // Before a QP leaves RTS (to ERR, or destroyed) the peer must have an ACK
  // for everything that reached this device, as from a hardware RNIC, whose
  // ACK leaves on receipt. So this takes what has arrived (a program that
  // stopped polling leaves arrivals to the progress thread, which may not
  // have looked yet: a peer's last SENDs would then time out against a
  // destroyed QP), then sends every ACK, the ones held for a reply too
  // (rdma_disconnect posts its DREQ right after, and an ACK held behind it
  // could reach the peer after its QP went to ERR, flushing a WR the peer
  // would have seen complete).
  void acknowledge_arrivals();

  // Called under the device lock after every verbs call and progress round,
  // before the completion fd is signalled: a layer with its own completion
  // channels and event queues (the libibverbs library) takes the engine's CQ
  // and asynchronous events here. Set it before any object exists.
  void set_event_listener(std::function<void(Engine&)> listener);

  // Fires due timers, sends what the engine has, receives what arrived. The
  // progress thread calls it; without one the application does, whenever it
  // polls: what one call receives is answered (ACKs, READ responses) by the
  // next, so that an inline reply the application posts in between leaves in
  // the same batch.
  void progress();

  // The completion channel (ibv_comp_channel): an fd that polls readable
  // while the notification of an armed CQ waits to be taken. Arm a CQ with
  // call_and_wake([&](Engine& e) { return e.req_notify_cq(cq, false); }), sleep in
  // poll/epoll on the fd, then take the event and poll the CQ. With no
  // progress thread the fd only turns readable while progress() is driven.
  int completion_fd() const;
  // Another device on this host (another process) shares this one's
  // address now: it holds the address's socket, or this one does and the
  // other took a member's inbox beside it (port/local_port.h).
  bool address_shared() const;
  // The CQ whose notification fired, oldest first (ibv_get_cq_event), if any.
  std::optional<std::uint32_t> get_cq_event();

  // UD multicast (ibv_attach_mcast, runtime/device_multicast.cc): attaches
  // the QP in the engine, and the port joins the group with its first QP
  // here and leaves it with its last. Errors: the engine's, or the port's
  // (operation_not_supported for a group of the other address family).
  std::errc attach_multicast(std::uint32_t qpn, const Gid& group);
  std::errc detach_multicast(std::uint32_t qpn, const Gid& group);
  // Before the QP is destroyed: detaches it from every group.
  void detach_all_multicast(std::uint32_t qpn);

  const Gid& gid() const { return gid_; }
  EngineCounters counters();
  ProgressCounters progress_counters();
  port::PortCounters port_counters();
  // Empty, or a sentence for the user when the kernel granted the port's
  // socket a smaller receive buffer than it asked for (see below).
  std::string receive_buffer_warning();
  // The largest path MTU whose packets fit the port's link (as Linux
  // Soft-RoCE derives the active MTU from the interface MTU).
  PathMtu max_path_mtu();

 private:
  struct Parts;  // runtime/device_parts.h: the port, the transmit batch, the completion channel, the progress thread
  Device(const DeviceConfig& config, std::unique_ptr<Parts> parts);
  // Runs f(engine) under the device lock, then After, still under it.
  template <void (Device::*After)(), class F>
  decltype(auto) locked_then(F&& f) {
    std::lock_guard lock(mutex_);
    struct Then {  // runs before the lock is released, also after a throw
      Device* device;
      ~Then() { (device->*After)(); }
    } then{this};
    return f(engine_);
  }
  bool progress_locked(TimeNs now, bool answer_now);
  // What the engine has, to the port (runtime/transmit_batch.h: batching,
  // back-pressure and the ACK hold, which adaptive mode uses).
  void transmit_locked(TimeNs now, runtime::AckRelease release);
  void signal_completions_locked();
  void transmit_posted_locked();
  // Returns whether it ran a round.
  bool progress_polled_locked(bool found_completions);
  // adaptive: the application polls (runtime/progress_handoff.h).
  void note_application_polls(TimeNs now, bool found_nothing);
  void run_progress_thread();
  void wake();

  Gid gid_{};
  std::mutex mutex_;
  Engine engine_;
  std::unique_ptr<Parts> parts_;
  static constexpr TimeNs kPolledRoundInterval = 20'000;
};

}  // namespace uroce
