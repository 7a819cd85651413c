// One side of a `uroce perf` run: the device, its QPs and registered buffer,
// the control connection to the peer, and the small helpers both roles use
// (posting, polling, waiting for a control line while progress goes on).
//
// Each QP owns a region of the buffer: two halves of the largest message
// size, the first the source of WRITEs and SENDs and the target of the peer's
// WRITEs, READs and atomics, the second where READ results, atomic results,
// received SENDs and latency pongs land.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "port/port.h"
#include "runtime/oob_exchange.h"
#include "tools/uroce/perf_options.h"
#include "uroce/device.h"

namespace uroce::tools {

class PerfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What WRITE and SEND sources and READ targets hold for a message size.
std::uint8_t pattern_byte(std::size_t index, std::uint32_t size);
void fill_pattern(std::uint8_t* bytes, std::uint32_t size);
// Whether bytes hold the pattern, ignoring the last `skip_last` bytes.
bool holds_pattern(const std::uint8_t* bytes, std::uint32_t size, std::uint32_t skip_last = 0);

struct PerfQp {
  std::uint32_t qpn = 0;
  runtime::QpConnectionInfo local, remote;
  std::uint8_t* region = nullptr;  // this QP's part of the registered buffer
  std::uint64_t posted = 0;        // send-queue work requests posted in this phase
  std::uint64_t outstanding = 0;   // of those, not completed yet
};

class PerfSession {
 public:
  // Opens the device and QPs, exchanges QP information with the peer and
  // brings the QPs to RTS; prints the banner.
  explicit PerfSession(const PerfOptions& options);
  ~PerfSession();

  const PerfOptions& options() const { return options_; }
  bool is_server() const { return server_; }
  std::uint32_t largest() const { return largest_; }
  std::vector<PerfQp>& qps() { return qps_; }
  std::uint8_t* send_half(PerfQp& qp) { return qp.region; }
  std::uint8_t* receive_half(PerfQp& qp) { return qp.region + largest_; }
  std::uint64_t remote_receive_half(const PerfQp& qp) const { return qp.remote.address + largest_; }
  std::chrono::milliseconds timeout() const { return std::chrono::seconds(options_.timeout_s); }

  // Control connection. wait_line keeps this side's progress going meanwhile.
  void send_line(const std::string& line);
  std::string wait_line(const std::string& waiting_for);
  std::optional<std::string> poll_line();
  void expect_line(const std::string& expected, const std::string& waiting_for);

  // Verbs on this side's device.
  void progress();  // one round when progress is inline; nothing with a progress thread
  void post_send(PerfQp& qp, const SendWr& wr);
  void post_receive(PerfQp& qp);  // the whole receive half
  std::size_t poll(std::span<WorkCompletion> out);
  PerfQp& qp_of(const WorkCompletion& completion);
  // Waits until every posted send-queue work request has completed.
  void drain_sends();
  EngineCounters counters() { return device_->counters(); }
  port::PortCounters port_counters() { return device_->port_counters(); }

  // Local addresses for scatter/gather entries.
  Sge sge(const std::uint8_t* at, std::uint32_t length) const {
    return Sge{reinterpret_cast<std::uintptr_t>(at), length, keys_.lkey};
  }

 private:
  void open_device();
  void register_buffer(Engine& engine);
  void connect();

  PerfOptions options_;
  bool server_;
  std::uint32_t largest_ = 0;
  std::unique_ptr<Device> device_;
  // The registered buffer: whole pages inside buffer_, so that it can be shared.
  std::vector<std::uint8_t> buffer_;
  std::uint8_t* region_base_ = nullptr;
  std::size_t region_length_ = 0;
  bool shared_ = false;
  std::uint32_t pd_ = 0, cq_ = 0;
  MrKeys keys_;
  std::vector<PerfQp> qps_;
  std::optional<runtime::OobChannel> channel_;
  std::uint32_t mtu_ = 1024;
};

// The two roles (perf_client.cc, perf_server.cc).
void run_client(PerfSession& session);
void run_server(PerfSession& session);

}  // namespace uroce::tools
