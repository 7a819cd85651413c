// A deterministic network between engines for tests: datagrams travel with a
// delay and, from a seeded generator, are dropped, duplicated, reordered or
// corrupted. Time is virtual and advances to the next delivery or timer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <vector>

#include "uroce/engine.h"

namespace uroce::testing {

struct ChannelFaults {
  double drop = 0;       // probability a datagram is lost
  double duplicate = 0;  // ... delivered twice
  double reorder = 0;    // ... held back by extra_delay_ns
  double corrupt = 0;    // ... gets one byte flipped (the ICRC must catch it)
  double ecn_mark = 0;   // ... gets CE in its IPv4 ECN bits, as a congested switch marks it
  double trim = 0;       // ... arrives trimmed (Engine::on_trimmed), as a switch cuts a payload off
  TimeNs delay_ns = 1000;
  TimeNs extra_delay_ns = 20'000;
  // Only datagrams for which this returns true are subject to faults (all if empty).
  std::function<bool(std::span<const std::uint8_t>)> applies_to;
  // Paths: a datagram's extra delay (by its UDP source port, say), and
  // whether its path is down (it is lost). Applied to every datagram.
  std::function<TimeNs(std::span<const std::uint8_t>)> path_delay_ns;
  std::function<bool(std::span<const std::uint8_t>)> path_down;
};

struct NetworkStats {
  std::uint64_t delivered = 0, dropped = 0, duplicated = 0, reordered = 0, corrupted = 0, ecn_marked = 0,
                trimmed = 0;
  // Every datagram sent is checked against its description (poll_transmit's
  // Transmit): how many disagreed with what the wire layer reads in its
  // bytes, and how many were described as bare ACKs and as CNPs.
  std::uint64_t description_mismatches = 0, described_acknowledgements = 0, described_cnps = 0;
};

class TestNetwork {
 public:
  TestNetwork(std::uint64_t seed, ChannelFaults faults);
  // Ends the test program when any datagram was described otherwise than
  // built (stats().description_mismatches): every test that runs engines
  // over this network checks the descriptions.
  ~TestNetwork();
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  // Adds an engine with address 10.0.0.<index+1> and returns it: config's
  // settings, but for the address and seed.
  Engine& add_engine(const CongestionConfig& congestion = {});
  Engine& add_engine(EngineConfig config);
  Engine& engine(std::size_t index) { return *engines_[index]; }
  TimeNs now() const { return now_; }
  const NetworkStats& stats() const { return stats_; }
  ChannelFaults& faults() { return faults_; }
  // Delivers every datagram as one from a local device's shared memory,
  // whose extent packets this reads (nullptr: as from a wire, the default).
  void set_extent_source(ExtentSource* extents) { extents_ = extents; }

  // Moves datagrams and fires timers until done() holds or virtual time passes
  // limit; returns done(). done() is checked after every step.
  bool run_until(const std::function<bool()>& done, TimeNs limit);
  // Runs everything due until time, then lets the clock reach it.
  void idle_until(TimeNs time) {
    run_until([] { return false; }, time);
    now_ = std::max(now_, time);
  }

 private:
  struct InFlight {
    TimeNs deliver_at;
    std::uint64_t sequence;
    std::size_t to;
    std::vector<std::uint8_t> bytes;
    bool trimmed = false;
    bool operator>(const InFlight& other) const {
      return deliver_at != other.deliver_at ? deliver_at > other.deliver_at : sequence > other.sequence;
    }
  };
  void send(std::span<const std::uint8_t> datagram);
  void send_to(std::size_t to, std::span<const std::uint8_t> datagram);
  std::size_t destination_of(std::span<const std::uint8_t> datagram) const;

  ChannelFaults faults_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Engine>> engines_;
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> in_flight_;
  std::uint64_t sequence_ = 0;
  TimeNs now_ = 0;
  NetworkStats stats_;
  ExtentSource* extents_ = nullptr;
};

// A connected RC QP pair's options.
struct RcOptions {
  QpType type = QpType::rc;  // or uc
  LossRecovery recovery = LossRecovery::go_back_n;
  PathMtu mtu = PathMtu::mtu1024;
  std::uint8_t timeout = 14;
  TimeNs tail_timeout_ns = 0;  // QpInitAttr::tail_timeout_ns
  TimeNs loss_probe_ns = 0;    // QpInitAttr::loss_probe_ns
  MultipathConfig multipath;   // QpInitAttr::multipath
  std::optional<MultipathConfig> responder_multipath;  // b's, where it differs from a's
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint8_t min_rnr_timer = 1;
  std::uint8_t max_rd_atomic = 16;
  std::uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  QpCap cap{1024, 1024, 4, 4, 256};
  std::uint32_t cq_size = 4096;
  std::uint32_t sq_psn = 0x00FFF0;  // close to the 2^24 wrap, to exercise it
  std::uint32_t rq_psn = 0x00FFF0;
  bool responder_stays_in_rtr = false;  // leave b's QP in RTR (receive only)
};

struct Endpoint {
  Engine* engine = nullptr;
  std::uint32_t pd = 0;
  std::uint32_t cq = 0;
  std::uint32_t qpn = 0;
};

// Creates PD, CQ and a connected QP (RC or UC) on each engine and brings both to RTS.
std::pair<Endpoint, Endpoint> connect_rc(Engine& a, Engine& b, const RcOptions& options = {});

// Creates PD, CQ and a UD QP with this Q_Key on the engine, in RTS.
// gsi: QP 1; block_self_multicast: QpInitAttr's.
Endpoint make_ud_qp(Engine& engine, std::uint32_t qkey, bool gsi = false, bool block_self_multicast = false);

// Drains a CQ into a vector (asserting the CQ is healthy).
std::vector<WorkCompletion> drain(const Endpoint& endpoint);

// Runs the network until a's CQ has given a_count completions and b's
// b_count, or 10 s of virtual time pass; returns what each gave.
std::pair<std::vector<WorkCompletion>, std::vector<WorkCompletion>> wait_for_completions(
    TestNetwork& network, const Endpoint& a, const Endpoint& b, std::size_t a_count, std::size_t b_count);

}  // namespace uroce::testing
