// Device: the progress loop that joins an engine, a port and the monotonic
// clock, on its own thread or driven by the application. Its other jobs are
// classes of their own (runtime/device_parts.h): opening the port, the
// transmit batch, the completion channel and the progress handoff.
#include "uroce/device.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <random>

#include "port/extent_mappings.h"
#include "runtime/device_parts.h"
#include "runtime/port_opening.h"
#include "transport/registered_copy.h"
#include "uroce/monotonic_clock.h"

namespace uroce {
namespace {

constexpr TimeNs kBackPressureRetryNs = 20'000;
constexpr TimeNs kLongestRest = 2'000'000;

}  // namespace

Expected<std::unique_ptr<Device>, std::string> Device::open(const DeviceConfig& config) {
  auto port = runtime::open_port(config);
  if (!port) return unexpected(port.error());
  DeviceConfig resolved = config;
  resolved.engine.gid = (*port)->gid();
  resolved.engine.port_mtu = std::min(config.engine.port_mtu, runtime::largest_path_mtu(**port));
  // Datagrams for local devices skip the ICRC (nobody checks it there): the
  // port seals those it puts on the wire.
  resolved.engine.seal_icrc = !(*port)->seals_icrc();
  // A device that may share its address draws its QPNs from its member's sixteenth.
  if (auto member = (*port)->qpn_member()) resolved.engine.qpn_member = member;
  // Keys and QPNs derive from the seed: on a real network they must be
  // unpredictable, so every device draws its own.
  if (!config.fixed_seed) resolved.engine.seed ^= (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  // A program may unmap registered memory before it deregisters it: the
  // engine's copies then skip those pages instead of ending the process.
  transport::guard_registered_copies();
  auto parts = std::make_unique<Parts>(resolved, std::move(*port));
  parts->extents = std::make_unique<port::ExtentMappings>();
  if (parts->handoff.wake_fd() < 0 || parts->completions.fd() < 0) return unexpected(std::string("eventfd failed"));
  std::unique_ptr<Device> device(new Device(resolved, std::move(parts)));
  if (config.progress_thread) device->parts_->thread = std::thread([d = device.get()] { d->run_progress_thread(); });
  return device;
}

Device::Device(const DeviceConfig& config, std::unique_ptr<Parts> parts)
    : gid_(config.engine.gid), engine_(config.engine), parts_(std::move(parts)) {}

Device::~Device() {
  parts_->handoff.stop();
  if (parts_->thread.joinable()) parts_->thread.join();
  // Held ACKs leave, so that the peer does not resend what was received.
  // Only what is already built: the engine may hold WQEs whose buffers the
  // application has freed by now, and must not be asked for new packets.
  parts_->batch.send_what_is_built(*parts_->port);
}

void Device::wake() { parts_->handoff.wake(); }

void Device::note_application_polls(TimeNs now, bool found_nothing) {
  parts_->handoff.note_application_polls(now, found_nothing);
}

void Device::hand_progress_to_thread() { parts_->handoff.application_sleeps(); }

void Device::acknowledge_arrivals() {
  std::lock_guard lock(mutex_);
  TimeNs now = monotonic_now();
  // A few rounds at most: a peer that keeps sending must not hold the caller here.
  for (int round = 0; round < 8 && progress_locked(now, /*answer_now=*/true); ++round) {
  }
  transmit_locked(now, runtime::AckRelease::now);
  if (parts_->batch.back_pressured()) wake();
}

void Device::signal_completions_locked() { parts_->completions.signal(engine_); }

int Device::completion_fd() const { return parts_->completions.fd(); }

bool Device::address_shared() const { return parts_->port->address_shared(); }

void Device::set_event_listener(std::function<void(Engine&)> listener) {
  std::lock_guard lock(mutex_);
  parts_->completions.set_listener(std::move(listener));
}

void Device::transmit_posted_locked() {
  TimeNs now = monotonic_now();
  note_application_polls(now, false);  // adaptive: an application that posts polls for the completions next
  parts_->batch.clear_sent_requests();
  transmit_locked(now, parts_->handoff.may_hold_acks() ? runtime::AckRelease::behind_a_request : runtime::AckRelease::now);
  if (parts_->batch.sent_requests()) parts_->batch.note_reply_posted(now);
  // Back-pressure (the thread retries), or a timer armed before the thread
  // meant to look again (a retransmission deadline of the posted work).
  if (parts_->batch.back_pressured() || engine_.next_deadline() < parts_->thread_wakes_at) wake();
  signal_completions_locked();
}

bool Device::progress_polled_locked(bool found_completions) {
  TimeNs now = monotonic_now();
  note_application_polls(now, !found_completions);  // adaptive: the application moves the packets now
  if (found_completions && now - parts_->last_polled_round < kPolledRoundInterval) return false;
  parts_->last_polled_round = now;
  // The interval counts from a busy round's end: a round that placed many
  // long messages (each a copy of its bytes) leaves the application time to
  // take their completions and post new receives before the next one.
  // Counted from its start, every poll after such a round started another,
  // taking up to a batch of receives per poll while the application gave
  // back a poll's worth (perftest: 16): the receive queue ran dry, and RNR
  // NAKs cost ib_send_bw about a third of its bandwidth.
  if (progress_locked(now, /*answer_now=*/true)) parts_->last_polled_round = monotonic_now();
  if (parts_->batch.back_pressured()) wake();
  return true;
}

std::optional<std::uint32_t> Device::get_cq_event() {
  std::lock_guard lock(mutex_);
  return parts_->completions.take_event(engine_);
}

EngineCounters Device::counters() {
  std::lock_guard lock(mutex_);
  return engine_.counters();
}

ProgressCounters Device::progress_counters() {
  std::lock_guard lock(mutex_);
  ProgressCounters counters = parts_->progress_counters;
  counters.acks_carried = parts_->batch.counters().acks_carried;
  counters.acks_expired = parts_->batch.counters().acks_expired;
  counters.thread_rests = parts_->handoff.rests();
  return counters;
}

port::PortCounters Device::port_counters() {
  std::lock_guard lock(mutex_);
  return parts_->port->counters();
}

PathMtu Device::max_path_mtu() { return runtime::largest_path_mtu(*parts_->port); }

std::string Device::receive_buffer_warning() {
  std::lock_guard lock(mutex_);
  port::Port::ReceiveBuffer buffer = parts_->port->receive_buffer();
  return uroce::receive_buffer_warning(buffer.granted, buffer.wanted);
}

std::string receive_buffer_warning(std::size_t granted, std::size_t wanted) {
  if (granted == 0 || granted >= wanted) return {};
  return "its socket's receive buffer is " + std::to_string(granted / 1024) + " KiB, capped by net.core.rmem_max (" +
         std::to_string(wanted / 1024) + " KiB wanted): a burst beyond it is dropped (RC resends it, " +
         "UC and UD lose it); run with CAP_NET_ADMIN or raise the cap (sysctl -w net.core.rmem_max=" +
         std::to_string(wanted) + ")";
}

void Device::progress() {
  std::lock_guard lock(mutex_);
  progress_locked(monotonic_now(), /*answer_now=*/false);
}

// One round: due timers, then what the engine has to send, then what has
// arrived. Returns whether anything arrived, i.e. whether answers (ACKs, READ
// responses) are waiting. With answer_now they leave in this round, before
// the completions are signalled: an application that takes its last
// completion and closes at once must not take the ACK for it along. Without
// (the application drives progress() itself and polls inline), they leave at
// the start of the next round, so that a reply the application posts in
// between (a ping-pong's pong) leaves in the same batch: one system call
// instead of two.
bool Device::progress_locked(TimeNs now, bool answer_now) {
  if (engine_.next_deadline() <= now) engine_.on_timer(now);
  runtime::AckRelease release = parts_->handoff.may_hold_acks() ? runtime::AckRelease::after_hold : runtime::AckRelease::now;
  transmit_locked(now, release);
  std::span<const port::ReceivedDatagram> received = parts_->port->receive(now);
  if (!received.empty()) {
    bool by_thread = std::this_thread::get_id() == parts_->thread.get_id();
    ++(by_thread ? parts_->progress_counters.thread_receives : parts_->progress_counters.application_receives);
  }
  for (const port::ReceivedDatagram& datagram : received) {
    engine_.on_datagram(datagram.bytes, now, datagram.icrc_checkable, datagram.local ? parts_->extents.get() : nullptr);
  }
  if (answer_now && !received.empty()) transmit_locked(now, release);
  signal_completions_locked();
  return !received.empty();
}

void Device::transmit_locked(TimeNs now, runtime::AckRelease release) { parts_->batch.transmit(engine_, *parts_->port, now, release); }

void Device::run_progress_thread() {
  TimeNs last_arrival = 0;
  // adaptive: how long the thread rests before it looks whether the
  // application still polls. Each look costs a wakeup (tens of microseconds
  // of a vCPU), so while the application keeps polling the rests grow, to
  // kLongestRest; the first after the thread had the port lasts the handoff time.
  runtime::ProgressHandoff& handoff = parts_->handoff;
  TimeNs rest = handoff.handoff_ns();
  while (!handoff.stopping()) {
    if (handoff.adaptive()) {
      TimeNs now = monotonic_now();
      TimeNs until = handoff.application_polls_until();
      if (now < until) {
        handoff.rest_until(std::max(until, now + rest));
        rest = std::min(2 * rest, std::max(handoff.handoff_ns(), kLongestRest));
        continue;
      }
      rest = handoff.handoff_ns();
    }
    // Announce the sleep before the last look at the engine: a verbs call
    // after this look finds it and wakes the ppoll below.
    handoff.announce_sleep();
    TimeNs deadline;
    bool spin = false;
    {
      std::lock_guard lock(mutex_);
      TimeNs now = monotonic_now();
      // adaptive: keep looking for spin_ns after the last arrival before
      // sleeping; waking a thread (an idle core) costs more than a round trip.
      spin = now - last_arrival < handoff.spin_ns();
      // Before the last look: the port's senders, too, wake the sleep below.
      // A spinning round says it is awake (it may have slept last round).
      parts_->port->announce_sleep(!spin);
      if (progress_locked(now, /*answer_now=*/true)) {
        handoff.awake();
        last_arrival = now;  // the next round spins, and says so
        continue;  // answers to what just arrived are waiting
      }
      if (spin) handoff.awake();
      deadline = parts_->batch.back_pressured() ? monotonic_now() + kBackPressureRetryNs : engine_.next_deadline();
      deadline = std::min(deadline, parts_->batch.hold_deadline());
      if (!spin) {
        parts_->thread_wakes_at = std::min(deadline, monotonic_now() + 100'000'000);
        ++parts_->progress_counters.thread_sleeps;
      }
    }
    if (spin) {  // a thread of the application that shares this core goes first
      ::sched_yield();
      continue;
    }
    // Sleep until a datagram arrives, a verbs call posts work, or a timer is
    // due. (A polling application may take the datagram first; the round
    // then finds nothing, which costs less than leaving the port unwatched
    // while the application spins on memory, as ib_write_lat does.)
    std::array<pollfd, 2> fds{pollfd{parts_->port->receive_fd(), POLLIN, 0}, pollfd{handoff.wake_fd(), POLLIN, 0}};
    TimeNs wait = deadline == kNever ? 100'000'000 : std::max<TimeNs>(0, deadline - monotonic_now());
    wait = std::min<TimeNs>(wait, 100'000'000);  // stopping() is checked at least this often
    runtime::ProgressHandoff::sleep_on(fds, wait);
    handoff.awake();
  }
}


}  // namespace uroce
