// Device: the progress loop that joins an engine, a UDP port and the
// monotonic clock, on its own thread or driven by the application.
#include "uroce/device.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <cstring>
#include <random>

#include "uroce/monotonic_clock.h"
#include "port/extent_mappings.h"
#include "port/interface_info.h"
#include "port/local_port.h"
#include "port/raw_port.h"
#include "port/udp_port.h"
#include "runtime/completion_signal.h"
#include "runtime/transmit_batch.h"

namespace uroce {
namespace {

constexpr TimeNs kBackPressureRetryNs = 20'000;
constexpr TimeNs kLongestRest = 2'000'000;


// Sleeps in ppoll on fds, the wake eventfd last, for at most wait
// nanoseconds, and takes the wake's count if it fired.
void sleep_on(std::span<pollfd> fds, TimeNs wait) {
  timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
  ::ppoll(fds.data(), fds.size(), &timeout, nullptr);
  if (fds.back().revents & POLLIN) {
    std::uint64_t drained;
    [[maybe_unused]] ssize_t got = ::read(fds.back().fd, &drained, sizeof drained);
  }
}

PathMtu largest_path_mtu(const port::Port& port) {
  return port::largest_path_mtu(port.max_datagram_length(), gid_is_ipv4(port.gid()));
}

Expected<std::unique_ptr<port::Port>, std::string> open_port(const DeviceConfig& config) {
  if (!config.interface.empty()) {
    port::RawPortOptions options;
    options.udp_port = config.udp_port;
    auto raw = port::RawPort::open(config.interface, config.address, options);
    if (!raw) return unexpected(raw.error());
    return std::unique_ptr<port::Port>(std::move(*raw));
  }
  port::UdpPortOptions options;
  options.port = config.udp_port;
  options.icrc = config.icrc;
  options.gso = config.gso;
  auto udp = port::UdpPort::open(config.address, options);
  if (!udp) return unexpected(udp.error());
  std::unique_ptr<port::Port> wire = std::make_unique<port::UdpPort>(std::move(*udp));
  if (!config.local_path) return wire;
  // Without a usable /dev/shm the device still works, over the wire only.
  auto local = port::LocalPort::wrap(wire, config.udp_port);
  if (!local) return wire;
  return std::unique_ptr<port::Port>(std::move(*local));
}

}  // namespace

Expected<std::unique_ptr<Device>, std::string> Device::open(const DeviceConfig& config) {
  auto port = open_port(config);
  if (!port) return unexpected(port.error());
  DeviceConfig resolved = config;
  resolved.engine.gid = (*port)->gid();
  resolved.engine.port_mtu = std::min(config.engine.port_mtu, largest_path_mtu(**port));
  // Datagrams for local devices skip the ICRC (nobody checks it there): the
  // port seals those it puts on the wire.
  resolved.engine.seal_icrc = !(*port)->seals_icrc();
  // Keys and QPNs derive from the seed: on a real network they must be
  // unpredictable, so every device draws its own.
  if (!config.fixed_seed) resolved.engine.seed ^= (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  std::unique_ptr<Device> device(new Device(resolved));
  device->port_ = std::move(*port);
  device->extents_ = std::make_unique<port::ExtentMappings>();
  device->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (device->wake_fd_ < 0 || device->completions_->fd() < 0) return unexpected(std::string("eventfd failed"));
  if (config.progress_thread) device->thread_ = std::thread([d = device.get()] { d->run_progress_thread(); });
  return device;
}

Device::Device(const DeviceConfig& config)
    : gid_(config.engine.gid),
      engine_(config.engine),
      batch_(std::make_unique<runtime::TransmitBatch>(config.ack_hold_ns)),
      completions_(std::make_unique<runtime::CompletionSignal>()),
      progress_mode_(config.progress_thread ? config.progress_mode : ProgressMode::thread),
      handoff_ns_(config.handoff_ns),
      spin_ns_(progress_mode_ == ProgressMode::adaptive ? config.spin_ns : 0) {}

Device::~Device() {
  stop_ = true;
  sleeping_ = true;  // wake it from either sleep
  wake();
  wake_resting();
  if (thread_.joinable()) thread_.join();
  // Held ACKs leave, so that the peer does not resend what was received.
  // Only what is already built: the engine may hold WQEs whose buffers the
  // application has freed by now, and must not be asked for new packets.
  if (port_) batch_->send_what_is_built(*port_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Device::wake() {
  // One eventfd write per sleep, however many verbs calls come in.
  if (wake_fd_ < 0 || !sleeping_.exchange(false, std::memory_order_seq_cst)) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
}

void Device::wake_resting() {
  if (wake_fd_ < 0 || !resting_.exchange(false, std::memory_order_seq_cst)) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
}

void Device::hand_progress_to_thread() {
  if (progress_mode_ != ProgressMode::adaptive) return;
  empty_polls_after_arming_.store(0, std::memory_order_relaxed);
  application_sleeps_.store(true, std::memory_order_relaxed);
  application_polls_until_.store(0, std::memory_order_seq_cst);
  wake_resting();
}

void Device::acknowledge_arrivals() {
  std::lock_guard lock(mutex_);
  TimeNs now = monotonic_now();
  // A few rounds at most: a peer that keeps sending must not hold the caller here.
  for (int round = 0; round < 8 && progress_locked(now, /*answer_now=*/true); ++round) {
  }
  transmit_locked(now, runtime::AckRelease::now);
  if (batch_->back_pressured()) wake();
}

void Device::signal_completions_locked() { completions_->signal(engine_); }

int Device::completion_fd() const { return completions_->fd(); }

void Device::set_event_listener(std::function<void(Engine&)> listener) {
  std::lock_guard lock(mutex_);
  completions_->set_listener(std::move(listener));
}

void Device::transmit_posted_locked() {
  TimeNs now = monotonic_now();
  note_application_polls(now, false);  // adaptive: an application that posts polls for the completions next
  batch_->clear_sent_requests();
  transmit_locked(now, may_hold_acks() ? runtime::AckRelease::behind_a_request : runtime::AckRelease::now);
  if (batch_->sent_requests()) batch_->note_reply_posted(now);
  // Back-pressure (the thread retries), or a timer armed before the thread
  // meant to look again (a retransmission deadline of the posted work).
  if (batch_->back_pressured() || engine_.next_deadline() < thread_wakes_at_) wake();
  signal_completions_locked();
}

bool Device::progress_polled_locked(bool found_completions) {
  TimeNs now = monotonic_now();
  note_application_polls(now, !found_completions);  // adaptive: the application moves the packets now
  if (found_completions && now - last_polled_round_ < kPolledRoundInterval) return false;
  last_polled_round_ = now;
  // The interval counts from a busy round's end: a round that placed many
  // long messages (each a copy of its bytes) leaves the application time to
  // take their completions and post new receives before the next one.
  // Counted from its start, every poll after such a round started another,
  // taking up to a batch of receives per poll while the application gave
  // back a poll's worth (perftest: 16): the receive queue ran dry, and RNR
  // NAKs cost ib_send_bw about a third of its bandwidth.
  if (progress_locked(now, /*answer_now=*/true)) last_polled_round_ = monotonic_now();
  if (batch_->back_pressured()) wake();
  return true;
}

std::optional<std::uint32_t> Device::get_cq_event() {
  std::lock_guard lock(mutex_);
  return completions_->take_event(engine_);
}

EngineCounters Device::counters() {
  std::lock_guard lock(mutex_);
  return engine_.counters();
}

ProgressCounters Device::progress_counters() {
  std::lock_guard lock(mutex_);
  ProgressCounters counters = progress_counters_;
  counters.acks_carried = batch_->counters().acks_carried;
  counters.acks_expired = batch_->counters().acks_expired;
  counters.thread_rests = thread_rests_.load(std::memory_order_relaxed);
  return counters;
}

port::PortCounters Device::port_counters() {
  std::lock_guard lock(mutex_);
  return port_->counters();
}

PathMtu Device::max_path_mtu() { return largest_path_mtu(*port_); }

std::string Device::receive_buffer_warning() {
  std::lock_guard lock(mutex_);
  port::Port::ReceiveBuffer buffer = port_->receive_buffer();
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
  runtime::AckRelease release = may_hold_acks() ? runtime::AckRelease::after_hold : runtime::AckRelease::now;
  transmit_locked(now, release);
  std::span<const port::ReceivedDatagram> received = port_->receive(now);
  if (!received.empty()) {
    bool by_thread = std::this_thread::get_id() == thread_.get_id();
    ++(by_thread ? progress_counters_.thread_receives : progress_counters_.application_receives);
  }
  for (const port::ReceivedDatagram& datagram : received) {
    engine_.on_datagram(datagram.bytes, now, datagram.icrc_checkable, datagram.local ? extents_.get() : nullptr);
  }
  if (answer_now && !received.empty()) transmit_locked(now, release);
  signal_completions_locked();
  return !received.empty();
}

void Device::transmit_locked(TimeNs now, runtime::AckRelease release) { batch_->transmit(engine_, *port_, now, release); }

void Device::run_progress_thread() {
  TimeNs last_arrival = 0;
  // adaptive: how long the thread rests before it looks whether the
  // application still polls. Each look costs a wakeup (tens of microseconds
  // of a vCPU), so while the application keeps polling the rests grow, to
  // kLongestRest; the first after the thread had the port lasts the handoff time.
  TimeNs rest = handoff_ns_;
  while (!stop_.load(std::memory_order_acquire)) {
    if (progress_mode_ == ProgressMode::adaptive) {
      TimeNs now = monotonic_now();
      TimeNs until = application_polls_until_.load(std::memory_order_relaxed);
      if (now < until) {
        rest_while_application_polls(std::max(until, now + rest));
        rest = std::min(2 * rest, std::max(handoff_ns_, kLongestRest));
        continue;
      }
      rest = handoff_ns_;
    }
    // Announce the sleep before the last look at the engine: a verbs call
    // after this look finds sleeping_ set and wakes the ppoll below.
    sleeping_.store(true, std::memory_order_seq_cst);
    TimeNs deadline;
    bool spin = false;
    {
      std::lock_guard lock(mutex_);
      TimeNs now = monotonic_now();
      // adaptive: keep looking for spin_ns after the last arrival before
      // sleeping; waking a thread (an idle core) costs more than a round trip.
      spin = now - last_arrival < spin_ns_;
      // Before the last look: the port's senders, too, wake the sleep below.
      // A spinning round says it is awake (it may have slept last round).
      port_->announce_sleep(!spin);
      if (progress_locked(now, /*answer_now=*/true)) {
        sleeping_.store(false, std::memory_order_relaxed);
        last_arrival = now;  // the next round spins, and says so
        continue;  // answers to what just arrived are waiting
      }
      if (spin) sleeping_.store(false, std::memory_order_relaxed);
      deadline = batch_->back_pressured() ? monotonic_now() + kBackPressureRetryNs : engine_.next_deadline();
      deadline = std::min(deadline, batch_->hold_deadline());
      if (!spin) {
        thread_wakes_at_ = std::min(deadline, monotonic_now() + 100'000'000);
        ++progress_counters_.thread_sleeps;
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
    std::array<pollfd, 2> fds{pollfd{port_->receive_fd(), POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
    TimeNs wait = deadline == kNever ? 100'000'000 : std::max<TimeNs>(0, deadline - monotonic_now());
    wait = std::min<TimeNs>(wait, 100'000'000);  // stop_ is checked at least this often
    sleep_on(fds, wait);
    sleeping_.store(false, std::memory_order_relaxed);
  }
}

// adaptive: the application polls, so it moves the packets and fires the
// timers; sleep until it may have stopped (or says it sleeps), without
// watching the port, so arrivals wake nobody but the application.
void Device::rest_while_application_polls(TimeNs until) {
  thread_rests_.fetch_add(1, std::memory_order_relaxed);
  resting_.store(true, std::memory_order_seq_cst);
  TimeNs wait = std::min<TimeNs>(until - monotonic_now(), 100'000'000);
  if (wait > 0 && application_polls_until_.load(std::memory_order_seq_cst) != 0 && !stop_.load()) {
    std::array<pollfd, 1> wake{pollfd{wake_fd_, POLLIN, 0}};
    sleep_on(wake, wait);
  }
  resting_.store(false, std::memory_order_relaxed);
}

}  // namespace uroce
