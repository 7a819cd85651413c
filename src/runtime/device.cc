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
#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/opcode.h"
#include "wire/udp.h"

namespace uroce {
namespace {

constexpr std::size_t kTransmitBatch = 64;
constexpr TimeNs kBackPressureRetryNs = 20'000;
constexpr TimeNs kLongestRest = 2'000'000;

// An RC ACKNOWLEDGE (ACK or NAK), which carries no request and no data.
bool is_bare_ack(const DescribedDatagram& datagram) { return datagram.transmit.kind == TransmitKind::acknowledge; }

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
  device->completion_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (device->wake_fd_ < 0 || device->completion_fd_ < 0) return unexpected(std::string("eventfd failed"));
  if (config.progress_thread) device->thread_ = std::thread([d = device.get()] { d->run_progress_thread(); });
  return device;
}

Device::Device(const DeviceConfig& config)
    : gid_(config.engine.gid),
      engine_(config.engine),
      transmit_slots_(kTransmitBatch * kMaxDatagramLength),
      keep_scratch_(kTransmitBatch * kMaxDatagramLength),
      progress_mode_(config.progress_thread ? config.progress_mode : ProgressMode::thread),
      handoff_ns_(config.handoff_ns),
      ack_hold_(config.ack_hold_ns),
      longest_ack_hold_(10 * config.ack_hold_ns),
      spin_ns_(progress_mode_ == ProgressMode::adaptive ? config.spin_ns : 0) {
  transmit_queue_.reserve(kTransmitBatch);
}

Device::~Device() {
  stop_ = true;
  sleeping_ = true;  // wake it from either sleep
  wake();
  wake_resting();
  if (thread_.joinable()) thread_.join();
  // Held ACKs leave, so that the peer does not resend what was received.
  // Only what is already built: the engine may hold WQEs whose buffers the
  // application has freed by now, and must not be asked for new packets.
  if (port_ && !transmit_queue_.empty()) port_->send(transmit_queue_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (completion_fd_ >= 0) ::close(completion_fd_);
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
  transmit(now, AckRelease::now);
  if (back_pressured_) wake();
}

void Device::signal_completions_locked() {
  if (event_listener_) event_listener_(engine_);
  if (completion_signalled_ || completion_fd_ < 0 || !engine_.cq_event_pending()) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(completion_fd_, &one, sizeof one);
  completion_signalled_ = true;
}

void Device::transmit_posted_locked() {
  TimeNs now = monotonic_now();
  note_application_polls(now, false);  // adaptive: an application that posts polls for the completions next
  sent_requests_ = false;
  transmit(now, may_hold_acks() ? AckRelease::behind_a_request : AckRelease::now);
  if (sent_requests_) note_reply_posted(now);
  // Back-pressure (the thread retries), or a timer armed before the thread
  // meant to look again (a retransmission deadline of the posted work).
  if (back_pressured_ || engine_.next_deadline() < thread_wakes_at_) wake();
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
  if (back_pressured_) wake();
  return true;
}

std::optional<std::uint32_t> Device::get_cq_event() {
  std::lock_guard lock(mutex_);
  std::optional<std::uint32_t> cq = engine_.poll_cq_event();
  if (completion_signalled_ && !engine_.cq_event_pending()) {  // the last one taken: the fd goes quiet
    std::uint64_t count;
    [[maybe_unused]] ssize_t got = ::read(completion_fd_, &count, sizeof count);
    completion_signalled_ = false;
  }
  return cq;
}

EngineCounters Device::counters() {
  std::lock_guard lock(mutex_);
  return engine_.counters();
}

ProgressCounters Device::progress_counters() {
  std::lock_guard lock(mutex_);
  ProgressCounters counters = progress_counters_;
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
  AckRelease release = may_hold_acks() ? AckRelease::after_hold : AckRelease::now;
  transmit(now, release);
  std::span<const port::ReceivedDatagram> received = port_->receive(now);
  if (!received.empty()) {
    bool by_thread = std::this_thread::get_id() == thread_.get_id();
    ++(by_thread ? progress_counters_.thread_receives : progress_counters_.application_receives);
  }
  for (const port::ReceivedDatagram& datagram : received) {
    engine_.on_datagram(datagram.bytes, now, datagram.icrc_checkable, datagram.local ? extents_.get() : nullptr);
  }
  if (answer_now && !received.empty()) transmit(now, release);
  signal_completions_locked();
  return !received.empty();
}

// Moves what the engine has to send to the port, a batch at a time, until the
// engine has nothing more or the port pushes back (back_pressured_). Bare
// ACKs may stay queued (AckRelease): a reply the application is about to
// post (a ping-pong's pong) then carries them out behind it, and the peer,
// which polls for that ACK, takes the reply in the same receive.
void Device::transmit(TimeNs now, AckRelease release) {
  back_pressured_ = false;
  while (true) {
    bool engine_drained = false;
    while (transmit_queue_.size() < kTransmitBatch) {
      // Slots are used in order; kept datagrams were moved to the front.
      std::span<std::uint8_t> slot(transmit_slots_.data() + transmit_queue_.size() * kMaxDatagramLength,
                                   kMaxDatagramLength);
      Transmit built = engine_.poll_transmit(slot, now);
      if (!built) {
        engine_drained = true;
        break;
      }
      transmit_queue_.push_back(DescribedDatagram{slot.first(built.length), built});
    }
    if (transmit_queue_.empty()) return;
    // Bare ACKs go last in the batch: a reply the application just posted
    // then reaches the peer before the ACK for the request it answers.
    // Usually they are last already: one look at each datagram finds that
    // out, where stable_partition would allocate a buffer (on a ping-pong's
    // critical path).
    auto is_request = [](const DescribedDatagram& datagram) { return !is_bare_ack(datagram); };
    auto first_ack = std::find_if_not(transmit_queue_.begin(), transmit_queue_.end(), is_request);
    if (std::find_if(first_ack, transmit_queue_.end(), is_request) != transmit_queue_.end()) {
      first_ack = std::stable_partition(first_ack, transmit_queue_.end(), is_request);
    }
    std::size_t sendable = transmit_queue_.size();
    auto requests = static_cast<std::size_t>(first_ack - transmit_queue_.begin());
    if (release != AckRelease::now && engine_drained && requests < sendable) {
      if (acks_held_since_ == kNever) acks_held_since_ = now;
      bool young = now < acks_held_since_ + ack_hold_;
      if (release == AckRelease::after_hold && young) sendable = requests;
      if (release == AckRelease::behind_a_request && requests == 0) sendable = 0;
    }
    std::size_t taken = sendable == 0 ? 0 : port_->send(std::span(transmit_queue_.data(), sendable));
    sent_requests_ |= std::min(taken, requests) > 0;
    if (acks_held_since_ != kNever && taken == transmit_queue_.size()) {
      auto acks = static_cast<std::size_t>(transmit_queue_.end() - first_ack);
      if (requests > 0) {
        progress_counters_.acks_carried += acks;
        acks_expired_at_ = kNever;
      } else {
        progress_counters_.acks_expired += acks;
        note_expired_hold(now);
      }
    }
    if (taken < transmit_queue_.size()) {  // keep the rest, in order, for the next time
      keep_unsent(taken);
      back_pressured_ = taken < sendable;
      return;
    }
    transmit_queue_.clear();
    acks_held_since_ = kNever;
    if (engine_drained) return;
  }
}

// The ACK hold adapts to the application. A hold that expires with no reply
// posted since the last one (a one-way stream) halves the next; a reply
// posted soon after a hold expired (a ping-pong whose application answers
// slower than the hold: a loaded machine, a sanitizer build) doubles it.
void Device::note_expired_hold(TimeNs now) {
  if (acks_expired_at_ != kNever) ack_hold_ = std::max(kShortestAckHold, ack_hold_ / 2);
  acks_expired_at_ = now;
}

void Device::note_reply_posted(TimeNs now) {
  if (acks_expired_at_ == kNever) return;
  if (now - acks_expired_at_ < 4 * ack_hold_) ack_hold_ = std::min(longest_ack_hold_, ack_hold_ * 2);
  acks_expired_at_ = kNever;
}

// Moves the datagrams the port did not take to the first slots, in order
// (through scratch space: after the ACK partition their slots are in any order).
void Device::keep_unsent(std::size_t taken) {
  std::size_t kept = transmit_queue_.size() - taken;
  for (std::size_t i = 0; i < kept; ++i) {
    ByteSpan datagram = transmit_queue_[taken + i].bytes;
    std::memcpy(keep_scratch_.data() + i * kMaxDatagramLength, datagram.data(), datagram.size());
  }
  for (std::size_t i = 0; i < kept; ++i) {
    const DescribedDatagram& unsent = transmit_queue_[taken + i];
    std::size_t length = unsent.bytes.size();
    std::uint8_t* slot = transmit_slots_.data() + i * kMaxDatagramLength;
    std::memcpy(slot, keep_scratch_.data() + i * kMaxDatagramLength, length);
    transmit_queue_[i] = DescribedDatagram{MutableByteSpan(slot, length), unsent.transmit};
  }
  transmit_queue_.resize(kept);
}

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
      deadline = back_pressured_ ? monotonic_now() + kBackPressureRetryNs : engine_.next_deadline();
      if (acks_held_since_ != kNever) deadline = std::min(deadline, acks_held_since_ + ack_hold_);
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
