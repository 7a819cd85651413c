// The deterministic, fault-injecting test network.
#include "tests/support/test_network.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/bytes.h"
#include "wire/ip_datagram.h"
#include "wire/ipv4.h"

namespace uroce::testing {

TestNetwork::TestNetwork(std::uint64_t seed, ChannelFaults faults) : faults_(std::move(faults)), rng_(seed) {}

Engine& TestNetwork::add_engine(const CongestionConfig& congestion) {
  EngineConfig config;
  config.congestion = congestion;
  return add_engine(config);
}

Engine& TestNetwork::add_engine(EngineConfig config) {
  auto index = static_cast<std::uint8_t>(engines_.size() + 1);
  config.gid = gid_from_ipv4({10, 0, 0, index});
  config.seed = rng_();
  engines_.push_back(std::make_unique<Engine>(config));
  return *engines_.back();
}

std::size_t TestNetwork::destination_of(std::span<const std::uint8_t> datagram) const {
  // IPv4 destination address: 10.0.0.<index+1>.
  if (datagram.size() >= 20 && (datagram[0] >> 4) == 4) return datagram[19] - 1u;
  return engines_.size();
}

// A datagram to an IPv4 multicast group reaches every engine, as a switch
// floods a group it knows no members of; each engine keeps what its QPs joined.
void TestNetwork::send(std::span<const std::uint8_t> datagram) {
  bool multicast = datagram.size() >= 20 && (datagram[0] >> 4) == 4 && (datagram[16] & 0xF0) == 0xE0;
  if (!multicast) return send_to(destination_of(datagram), datagram);
  for (std::size_t to = 0; to < engines_.size(); ++to) send_to(to, datagram);
}

void TestNetwork::send_to(std::size_t to, std::span<const std::uint8_t> datagram) {
  if (to >= engines_.size()) return;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  bool faulty = !faults_.applies_to || faults_.applies_to(datagram);
  int copies = 1;
  if (faults_.path_down && faults_.path_down(datagram)) {
    ++stats_.dropped;
    return;
  }
  if (faulty && coin(rng_) < faults_.drop) {
    ++stats_.dropped;
    return;
  }
  if (faulty && coin(rng_) < faults_.duplicate) {
    ++stats_.duplicated;
    copies = 2;
  }
  for (int copy = 0; copy < copies; ++copy) {
    InFlight packet{now_ + faults_.delay_ns, sequence_++, to, {datagram.begin(), datagram.end()}};
    if (faults_.path_delay_ns) packet.deliver_at += faults_.path_delay_ns(datagram);
    if (faulty && coin(rng_) < faults_.reorder) {
      ++stats_.reordered;
      packet.deliver_at += std::uniform_int_distribution<TimeNs>(1, faults_.extra_delay_ns)(rng_);
    }
    if (faulty && coin(rng_) < faults_.ecn_mark && (packet.bytes[0] >> 4) == 4) {
      ++stats_.ecn_marked;
      packet.bytes[1] |= 0x03;  // CE; the ICRC masks the TOS byte, the IP checksum does not
      store_be16(&packet.bytes[10], 0);
      store_be16(&packet.bytes[10], wire::ipv4_header_checksum(std::span(packet.bytes).first(20)));
    }
    if (faulty && coin(rng_) < faults_.corrupt) {
      ++stats_.corrupted;
      std::size_t at = std::uniform_int_distribution<std::size_t>(0, packet.bytes.size() - 1)(rng_);
      packet.bytes[at] ^= static_cast<std::uint8_t>(1u << std::uniform_int_distribution<int>(0, 7)(rng_));
    }
    if (faulty && copy == 0 && faults_.trim > 0 && coin(rng_) < faults_.trim) {
      ++stats_.trimmed;
      packet.trimmed = true;
    }
    in_flight_.push(std::move(packet));
  }
}

namespace {

// Whether a description says what the wire layer reads in the bytes.
bool described_as_built(const Transmit& described, ByteSpan bytes) {
  auto read = wire::describe_transmit(bytes);
  return read && *read == described;
}

}  // namespace

TestNetwork::~TestNetwork() {
  if (stats_.description_mismatches == 0) return;
  std::fprintf(stderr, "TestNetwork: %llu datagrams were described otherwise than built\n",
               static_cast<unsigned long long>(stats_.description_mismatches));
  std::abort();
}

bool TestNetwork::run_until(const std::function<bool()>& done, TimeNs limit) {
  std::vector<std::uint8_t> buffer(kMaxDatagramLength);
  while (!done()) {
    // Let every engine send what it has now.
    bool sent = false;
    for (std::size_t i = 0; i < engines_.size(); ++i) {
      for (int burst = 0; burst < 64; ++burst) {
        Transmit described = engines_[i]->poll_transmit(buffer, now_);
        std::size_t length = described.length;
        if (length == 0) break;
        stats_.description_mismatches += !described_as_built(described, std::span(buffer).first(length));
        stats_.described_acknowledgements += described.kind == TransmitKind::acknowledge;
        stats_.described_cnps += described.kind == TransmitKind::cnp;
        send(std::span(buffer).first(length));
        sent = true;
      }
    }
    if (sent) continue;

    TimeNs next = kNever;
    if (!in_flight_.empty()) next = in_flight_.top().deliver_at;
    for (const auto& engine : engines_) next = std::min(next, engine->next_deadline());
    if (next == kNever || next > limit) {
      if (std::getenv("UROCE_DEBUG_STALL")) {  // show what every QP waits for
        for (const auto& engine : engines_) std::fprintf(stderr, "%s", engine->describe().c_str());
      }
      return done();
    }
    now_ = std::max(now_, next);

    while (!in_flight_.empty() && in_flight_.top().deliver_at <= now_) {
      InFlight packet = in_flight_.top();
      in_flight_.pop();
      ++stats_.delivered;
      if (packet.trimmed) {
        engines_[packet.to]->on_trimmed(packet.bytes, now_);
      } else {
        engines_[packet.to]->on_datagram(packet.bytes, now_, true, extents_);
      }
    }
    for (const auto& engine : engines_) {
      if (engine->next_deadline() <= now_) engine->on_timer(now_);
    }
  }
  return true;
}

std::pair<Endpoint, Endpoint> connect_rc(Engine& a, Engine& b, const RcOptions& options) {
  Endpoint ends[2];
  Engine* engines[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    ends[i].engine = engines[i];
    ends[i].pd = *engines[i]->alloc_pd();
    ends[i].cq = *engines[i]->create_cq(options.cq_size);
    QpInitAttr init;
    init.pd = ends[i].pd;
    init.send_cq = init.recv_cq = ends[i].cq;
    init.qp_type = options.type;
    init.recovery = options.recovery;
    init.tail_timeout_ns = options.tail_timeout_ns;
    init.loss_probe_ns = options.loss_probe_ns;
    init.multipath = i == 1 && options.responder_multipath ? *options.responder_multipath : options.multipath;
    init.cap = options.cap;
    auto qpn = engines[i]->create_qp(init);
    if (!qpn) throw std::runtime_error("create_qp failed");
    ends[i].qpn = *qpn;
  }
  for (int i = 0; i < 2; ++i) {
    Engine& engine = *engines[i];
    const Endpoint& peer = ends[1 - i];
    QpAttr attr;
    attr.qp_state = QpState::init;
    attr.qp_access_flags = options.access;
    attr.port_num = 1;
    if (engine.modify_qp(ends[i].qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags) !=
        std::errc{}) {
      throw std::runtime_error("to INIT failed");
    }
    attr.qp_state = QpState::rtr;
    attr.path_mtu = options.mtu;
    attr.dest_qp_num = peer.qpn;
    attr.rq_psn = options.rq_psn;
    attr.max_dest_rd_atomic = options.max_rd_atomic;
    attr.min_rnr_timer = options.min_rnr_timer;
    attr.ah_attr.dgid = peer.engine->gid();
    bool rc = options.type == QpType::rc;
    std::uint32_t rtr_mask = kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn;
    if (rc) rtr_mask |= kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer;
    if (engine.modify_qp(ends[i].qpn, attr, rtr_mask) != std::errc{}) {
      throw std::runtime_error("to RTR failed");
    }
    if (i == 1 && options.responder_stays_in_rtr) continue;
    attr.qp_state = QpState::rts;
    attr.sq_psn = options.sq_psn;
    attr.timeout = options.timeout;
    attr.retry_cnt = options.retry_cnt;
    attr.rnr_retry = options.rnr_retry;
    attr.max_rd_atomic = options.max_rd_atomic;
    std::uint32_t rts_mask = kQpAttrState | kQpAttrSqPsn;
    if (rc) rts_mask |= kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry | kQpAttrMaxQpRdAtomic;
    if (engine.modify_qp(ends[i].qpn, attr, rts_mask) != std::errc{}) {
      throw std::runtime_error("to RTS failed");
    }
  }
  return {ends[0], ends[1]};
}

Endpoint make_ud_qp(Engine& engine, std::uint32_t qkey, bool gsi, bool block_self_multicast) {
  Endpoint end;
  end.engine = &engine;
  end.pd = *engine.alloc_pd();
  end.cq = *engine.create_cq(256);
  QpInitAttr init;
  init.qp_type = QpType::ud;
  init.gsi = gsi;
  init.block_self_multicast = block_self_multicast;
  init.pd = end.pd;
  init.send_cq = init.recv_cq = end.cq;
  init.cap = QpCap{128, 128, 1, 1, 64};
  end.qpn = *engine.create_qp(init);
  QpAttr attr;
  attr.qp_state = QpState::init;
  attr.qkey = qkey;
  bool ok = engine.modify_qp(end.qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrQkey) == std::errc{};
  attr.qp_state = QpState::rtr;
  ok = ok && engine.modify_qp(end.qpn, attr, kQpAttrState) == std::errc{};
  attr.qp_state = QpState::rts;
  attr.sq_psn = 77;
  ok = ok && engine.modify_qp(end.qpn, attr, kQpAttrState | kQpAttrSqPsn) == std::errc{};
  if (!ok) throw std::runtime_error("bringing a UD QP to RTS failed");
  return end;
}

std::vector<WorkCompletion> drain(const Endpoint& endpoint) {
  std::vector<WorkCompletion> all;
  WorkCompletion batch[64];
  while (true) {
    auto n = endpoint.engine->poll_cq(endpoint.cq, batch);
    if (!n) throw std::runtime_error("CQ overflowed");
    if (*n == 0) break;
    all.insert(all.end(), batch, batch + *n);
  }
  return all;
}

std::pair<std::vector<WorkCompletion>, std::vector<WorkCompletion>> wait_for_completions(
    TestNetwork& network, const Endpoint& a, const Endpoint& b, std::size_t a_count, std::size_t b_count) {
  std::vector<WorkCompletion> at_a, at_b;
  network.run_until(
      [&] {
        auto more_a = drain(a), more_b = drain(b);
        at_a.insert(at_a.end(), more_a.begin(), more_a.end());
        at_b.insert(at_b.end(), more_b.begin(), more_b.end());
        return at_a.size() >= a_count && at_b.size() >= b_count;
      },
      network.now() + 10'000'000'000);
  return {at_a, at_b};
}

}  // namespace uroce::testing
