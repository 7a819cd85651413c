// Device: the progress loop that joins an engine, a UDP port and the
// monotonic clock, on its own thread or driven by the application.
#include "uroce/device.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <random>

#include "port/udp_port.h"

namespace uroce {
namespace {

TimeNs monotonic_now() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return TimeNs{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

constexpr std::size_t kReceiveBatch = 32;
constexpr int kRoundsPerProgress = 8;  // bounded work per call, so posting threads get the lock
constexpr TimeNs kBackPressureRetryNs = 20'000;

}  // namespace

Expected<std::unique_ptr<Device>, std::string> Device::open(const DeviceConfig& config) {
  port::UdpPortOptions options;
  options.port = config.udp_port;
  options.icrc = config.icrc;
  auto udp = port::UdpPort::open(config.address, options);
  if (!udp) return unexpected(udp.error());
  DeviceConfig resolved = config;
  resolved.engine.gid = udp->gid();
  // Keys and QPNs derive from the seed: on a real network they must be
  // unpredictable, so every device draws its own.
  if (!config.fixed_seed) resolved.engine.seed ^= (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  std::unique_ptr<Device> device(new Device(resolved));
  device->port_ = std::make_unique<port::UdpPort>(std::move(*udp));
  device->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (device->wake_fd_ < 0) return unexpected(std::string("eventfd failed"));
  if (config.progress_thread) device->thread_ = std::thread([d = device.get()] { d->run_progress_thread(); });
  return device;
}

Device::Device(const DeviceConfig& config)
    : gid_(config.engine.gid),
      engine_(config.engine),
      transmit_buffer_(kMaxDatagramLength),
      receive_batch_(kReceiveBatch) {}

Device::~Device() {
  stop_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Device::wake() {
  if (!sleeping_.load(std::memory_order_acquire) || wake_fd_ < 0) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
}

EngineCounters Device::counters() {
  std::lock_guard lock(mutex_);
  return engine_.counters();
}

void Device::progress() {
  std::lock_guard lock(mutex_);
  progress_locked(monotonic_now());
}

void Device::progress_locked(TimeNs now) {
  std::vector<port::ReceivedDatagram>& received = receive_batch_;  // buffers reused from call to call
  for (int round = 0; round < kRoundsPerProgress; ++round) {
    bool busy = false;
    std::size_t count = port_->receive(received);
    for (std::size_t i = 0; i < count; ++i) {
      engine_.on_datagram(received[i].bytes(), now, received[i].icrc_checkable);
    }
    busy |= count > 0;
    if (engine_.next_deadline() <= now) engine_.on_timer(now);
    // Transmit what the engine has, a retried datagram first.
    while (true) {
      if (pending_length_ == 0) pending_length_ = engine_.poll_transmit(transmit_buffer_, now);
      if (pending_length_ == 0) break;
      if (!port_->send(ByteSpan(transmit_buffer_).first(pending_length_))) break;  // back-pressure
      pending_length_ = 0;
      busy = true;
    }
    if (!busy) return;
    now = monotonic_now();
  }
}

void Device::run_progress_thread() {
  while (!stop_.load(std::memory_order_acquire)) {
    TimeNs deadline;
    {
      std::lock_guard lock(mutex_);
      progress_locked(monotonic_now());
      deadline = pending_length_ > 0 ? monotonic_now() + kBackPressureRetryNs : engine_.next_deadline();
    }
    // Sleep until a datagram arrives, a verbs call posts work, or a timer is due.
    sleeping_.store(true, std::memory_order_release);
    std::array<pollfd, 2> fds{pollfd{port_->receive_fd(), POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
    TimeNs wait = deadline == kNever ? 100'000'000 : std::max<TimeNs>(0, deadline - monotonic_now());
    wait = std::min<TimeNs>(wait, 100'000'000);  // stop_ is checked at least this often
    timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    ::ppoll(fds.data(), fds.size(), &timeout, nullptr);
    sleeping_.store(false, std::memory_order_release);
    if (fds[1].revents & POLLIN) {
      std::uint64_t drained;
      [[maybe_unused]] ssize_t got = ::read(wake_fd_, &drained, sizeof drained);
    }
  }
}

}  // namespace uroce
