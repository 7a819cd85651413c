// Randomized soak: thousands of random WRs of every type and size over several
// QP pairs, with loss, duplication, reordering and corruption on the wire.
// Every byte must arrive as sent, every completion must match its WR in
// order, atomics must match a sequential model, and nothing may fail. The seed
// is printed on failure; UROCE_SOAK_SEED and UROCE_SOAK_WRS override it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr std::size_t kWriteArea = 4 << 20;  // per pair, on the responder
constexpr std::size_t kReadArea = 4 << 20;   // static content, on the responder
constexpr std::size_t kCounters = 16;
constexpr std::size_t kLocalArea = 16 << 20;  // per pair, on the requester
constexpr std::size_t kMaxOutstanding = 24;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::strtoull(value, nullptr, 0) : fallback;
}

// One requester -> responder QP pair with its memory, model and expectations.
struct Pair {
  Endpoint requester, responder;
  std::vector<std::uint8_t> local;        // requester: send/write sources, read/atomic results
  std::vector<std::uint8_t> write_area;   // responder, written by WRITEs
  std::vector<std::uint8_t> write_model;  // what write_area must end up as
  std::vector<std::uint8_t> read_area;    // responder, read by READs
  std::vector<std::uint8_t> recv_area;    // responder, SEND targets
  std::vector<std::uint64_t> counters = std::vector<std::uint64_t>(kCounters);  // responder, atomics
  std::vector<std::uint64_t> counter_model = std::vector<std::uint64_t>(kCounters);
  MrKeys local_keys, write_keys, read_keys, recv_keys, counter_keys;

  struct Pending {
    std::uint64_t wr_id;
    WrOpcode opcode;
    std::size_t local_offset;
    std::uint32_t length;
    std::size_t remote_offset;
    std::uint64_t expected_original;  // atomics
    std::vector<std::uint8_t> sent;   // SEND payload, to check on the receive side
  };
  std::deque<Pending> pending;
  std::deque<Pending> expected_receives;
  std::size_t local_cursor = 0;
  std::size_t recv_cursor = 0;
  std::uint64_t next_wr_id = 1;
  std::uint64_t posted = 0, completed = 0, received = 0;
};

std::uint32_t random_size(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> bucket(0, 999);
  int b = bucket(rng);
  std::uint32_t limit = b < 600 ? 256 : b < 900 ? 8192 : b < 995 ? 65536 : (2u << 20);
  return std::uniform_int_distribution<std::uint32_t>(0, limit)(rng);
}

struct SoakSetup {
  ChannelFaults faults;
  LossRecovery recovery = LossRecovery::go_back_n;
  CongestionConfig congestion;
  std::uint64_t default_wrs = 4000;
};

class Soak {
 public:
  Soak(std::uint64_t seed, const SoakSetup& setup, std::size_t pairs) : rng_(seed), network_(seed, setup.faults) {
    Engine& a = network_.add_engine(setup.congestion);
    Engine& b = network_.add_engine(setup.congestion);
    for (std::size_t i = 0; i < pairs; ++i) {
      RcOptions options;
      options.recovery = setup.recovery;
      options.mtu = i % 2 ? PathMtu::mtu4096 : PathMtu::mtu1024;
      options.sq_psn = options.rq_psn = static_cast<std::uint32_t>(0xFFFF00 + i * 0x40);
      // Alternate directions so both engines are requester and responder.
      auto [x, y] = i % 2 ? connect_rc(b, a, options) : connect_rc(a, b, options);
      auto pair = std::make_unique<Pair>();
      pair->requester = x;
      pair->responder = y;
      pair->local.resize(kLocalArea);
      pair->write_area.assign(kWriteArea, 0);
      pair->write_model.assign(kWriteArea, 0);
      pair->read_area.resize(kReadArea);
      for (auto& byte : pair->read_area) byte = static_cast<std::uint8_t>(rng_());
      pair->recv_area.resize(kLocalArea);
      pair->local_keys = reg(x, pair->local);
      pair->write_keys = reg(y, pair->write_area);
      pair->read_keys = reg(y, pair->read_area);
      pair->recv_keys = reg(y, pair->recv_area);
      pair->counter_keys = *y.engine->reg_mr(y.pd, pair->counters.data(), kCounters * 8, kAll);
      pairs_.push_back(std::move(pair));
    }
  }

  static MrKeys reg(const Endpoint& end, std::vector<std::uint8_t>& bytes) {
    return *end.engine->reg_mr(end.pd, bytes.data(), bytes.size(), kAll);
  }

  // Posts random WRs until `total` have been posted, keeping each pair busy.
  void run(std::uint64_t total) {
    std::uint64_t posted = 0;
    bool finished = network_.run_until(
        [&] {
          for (auto& pair : pairs_) collect(*pair);
          if (::testing::Test::HasFatalFailure()) return true;
          for (auto& pair : pairs_) {
            while (posted < total && pair->pending.size() < kMaxOutstanding) {
              post_random(*pair);
              ++posted;
            }
          }
          bool idle = true;
          for (auto& pair : pairs_) idle &= pair->pending.empty() && pair->expected_receives.empty();
          return posted == total && idle;
        },
        TimeNs{3600} * 1'000'000'000);
    ASSERT_TRUE(finished) << "the soak did not finish";
    for (auto& pair : pairs_) {
      EXPECT_TRUE(pair->write_area == pair->write_model) << "WRITE target differs from the model";
      EXPECT_EQ(pair->counters, pair->counter_model);
    }
  }

  TestNetwork& network() { return network_; }

 private:
  std::size_t take_local(Pair& pair, std::size_t length) {
    // The area is large against kMaxOutstanding x the largest size, so a
    // wrapping bump allocator never hands out bytes still in use.
    if (pair.local_cursor + length > kLocalArea) pair.local_cursor = 0;
    std::size_t offset = pair.local_cursor;
    pair.local_cursor += (length + 63) & ~std::size_t{63};
    return offset;
  }

  void post_random(Pair& pair) {
    Engine& engine = *pair.requester.engine;
    int kind = std::uniform_int_distribution<int>(0, 9)(rng_);
    Pair::Pending pending{};
    pending.wr_id = pair.next_wr_id++;
    std::uint32_t length = random_size(rng_);
    SendWr wr;
    wr.wr_id = pending.wr_id;
    wr.send_flags = kSendSignaled;
    Sge sge;
    if (kind < 3) {  // WRITE
      pending.opcode = WrOpcode::rdma_write;
      pending.local_offset = take_local(pair, length);
      pending.remote_offset = std::uniform_int_distribution<std::size_t>(0, kWriteArea - length)(rng_);
      for (std::uint32_t i = 0; i < length; ++i) pair.local[pending.local_offset + i] = static_cast<std::uint8_t>(rng_());
      std::memcpy(pair.write_model.data() + pending.remote_offset, pair.local.data() + pending.local_offset, length);
      wr.opcode = WrOpcode::rdma_write;
      wr.rdma = {reinterpret_cast<std::uintptr_t>(pair.write_area.data()) + pending.remote_offset,
                 pair.write_keys.rkey};
    } else if (kind < 5) {  // READ
      pending.opcode = WrOpcode::rdma_read;
      length = std::min<std::uint32_t>(length, kReadArea);
      pending.local_offset = take_local(pair, length);
      pending.remote_offset = std::uniform_int_distribution<std::size_t>(0, kReadArea - length)(rng_);
      wr.opcode = WrOpcode::rdma_read;
      wr.rdma = {reinterpret_cast<std::uintptr_t>(pair.read_area.data()) + pending.remote_offset, pair.read_keys.rkey};
    } else if (kind < 8) {  // SEND, with or without immediate
      pending.opcode = kind == 7 ? WrOpcode::send_with_imm : WrOpcode::send;
      pending.length = length;
      pending.local_offset = take_local(pair, length);
      for (std::uint32_t i = 0; i < length; ++i) pair.local[pending.local_offset + i] = static_cast<std::uint8_t>(rng_());
      pending.sent.assign(pair.local.begin() + pending.local_offset,
                          pair.local.begin() + pending.local_offset + length);
      wr.opcode = pending.opcode;
      wr.imm_data = static_cast<std::uint32_t>(pending.wr_id);
      // The receiver posts a buffer for it first (random slack), so no RNR.
      std::uint32_t capacity = length + std::uniform_int_distribution<std::uint32_t>(0, 64)(rng_);
      if (pair.recv_cursor + capacity > kLocalArea) pair.recv_cursor = 0;
      Sge recv_sge{reinterpret_cast<std::uintptr_t>(pair.recv_area.data()) + pair.recv_cursor, capacity,
                   pair.recv_keys.lkey};
      Pair::Pending receive = pending;
      receive.remote_offset = pair.recv_cursor;
      pair.recv_cursor += (capacity + 63) & ~std::uint32_t{63};
      ASSERT_EQ(pair.responder.engine->post_recv(pair.responder.qpn, RecvWr{pending.wr_id, {&recv_sge, 1}}),
                std::errc{});
      pair.expected_receives.push_back(std::move(receive));
    } else {  // atomics
      bool swap = kind == 9;
      pending.opcode = swap ? WrOpcode::atomic_cmp_and_swp : WrOpcode::atomic_fetch_and_add;
      length = 8;
      pending.local_offset = take_local(pair, 8);
      std::size_t index = std::uniform_int_distribution<std::size_t>(0, kCounters - 1)(rng_);
      std::uint64_t& model = pair.counter_model[index];
      pending.expected_original = model;
      std::uint64_t operand = rng_();
      std::uint64_t compare = (rng_() & 1) ? model : rng_();
      if (swap) {
        if (model == compare) model = operand;
      } else {
        model += operand;
      }
      wr.opcode = pending.opcode;
      wr.atomic = {reinterpret_cast<std::uintptr_t>(pair.counters.data() + index), swap ? compare : operand,
                   operand, pair.counter_keys.rkey};
    }
    pending.length = length;
    sge = Sge{reinterpret_cast<std::uintptr_t>(pair.local.data()) + pending.local_offset, length,
              pair.local_keys.lkey};
    wr.sg_list = {&sge, 1};
    ASSERT_EQ(engine.post_send(pair.requester.qpn, wr), std::errc{}) << "post " << pending.wr_id;
    pair.pending.push_back(std::move(pending));
  }

  void collect(Pair& pair) {
    WorkCompletion batch[32];
    // Requester completions: in posting order, all successful.
    while (true) {
      std::size_t n = *pair.requester.engine->poll_cq(pair.requester.cq, batch);
      if (n == 0) break;
      for (std::size_t i = 0; i < n; ++i) {
        const WorkCompletion& wc = batch[i];
        ASSERT_FALSE(pair.pending.empty()) << "completion with nothing pending";
        Pair::Pending& expected = pair.pending.front();
        ASSERT_EQ(wc.wr_id, expected.wr_id) << "completion out of order";
        ASSERT_EQ(wc.status, WcStatus::success) << to_string(wc.status) << " for wr " << wc.wr_id;
        if (expected.opcode == WrOpcode::rdma_read) {
          ASSERT_EQ(wc.byte_len, expected.length);
          ASSERT_EQ(0, std::memcmp(pair.local.data() + expected.local_offset,
                                   pair.read_area.data() + expected.remote_offset, expected.length))
              << "READ data differs, wr " << wc.wr_id;
        }
        if (expected.opcode == WrOpcode::atomic_cmp_and_swp || expected.opcode == WrOpcode::atomic_fetch_and_add) {
          std::uint64_t original;
          std::memcpy(&original, pair.local.data() + expected.local_offset, 8);
          ASSERT_EQ(original, expected.expected_original) << "atomic result, wr " << wc.wr_id;
        }
        pair.pending.pop_front();
      }
    }
    // Receives for this pair land on the responder's CQ.
    while (true) {
      std::size_t n = *pair.responder.engine->poll_cq(pair.responder.cq, batch);
      if (n == 0) break;
      for (std::size_t i = 0; i < n; ++i) on_completion_at_responder(batch[i]);
    }
  }

  void on_completion_at_responder(const WorkCompletion& wc) {
    for (auto& pair : pairs_) {
      if (pair->responder.qpn == wc.qp_num) return on_receive(*pair, wc);
    }
    FAIL() << "completion for unknown QP " << wc.qp_num;
  }

  void on_receive(Pair& pair, const WorkCompletion& wc) {
    ASSERT_FALSE(pair.expected_receives.empty());
    Pair::Pending& expected = pair.expected_receives.front();
    ASSERT_EQ(wc.wr_id, expected.wr_id) << "receive out of order";
    ASSERT_EQ(wc.status, WcStatus::success) << to_string(wc.status);
    ASSERT_EQ(wc.byte_len, expected.length);
    ASSERT_EQ((wc.wc_flags & kWcWithImm) != 0, expected.opcode == WrOpcode::send_with_imm);
    if (expected.opcode == WrOpcode::send_with_imm) {
      ASSERT_EQ(wc.imm_data, static_cast<std::uint32_t>(wc.wr_id));
    }
    ASSERT_TRUE(std::equal(expected.sent.begin(), expected.sent.end(), pair.recv_area.begin() + expected.remote_offset))
        << "SEND data differs, wr " << wc.wr_id;
    pair.expected_receives.pop_front();
  }

  std::mt19937_64 rng_;
  TestNetwork network_;
  std::vector<std::unique_ptr<Pair>> pairs_;
};

void run_soak(const SoakSetup& setup) {
  std::uint64_t seed = env_or("UROCE_SOAK_SEED", std::random_device{}());
  std::uint64_t wrs = env_or("UROCE_SOAK_WRS", setup.default_wrs);
  SCOPED_TRACE("reproduce with UROCE_SOAK_SEED=" + std::to_string(seed) + " UROCE_SOAK_WRS=" + std::to_string(wrs));
  std::cout << "soak seed " << seed << " starts" << std::endl;
  Soak soak(seed, setup, 4);
  soak.run(wrs);
  const NetworkStats& stats = soak.network().stats();
  std::cout << "soak seed " << seed << ": " << wrs << " WRs, " << stats.delivered << " datagrams delivered, "
            << stats.dropped << " dropped, " << stats.duplicated << " duplicated, " << stats.reordered
            << " reordered, " << stats.corrupted << " corrupted, " << stats.ecn_marked << " CE-marked\n";
  const EngineCounters& a = soak.network().engine(0).counters();
  const EngineCounters& b = soak.network().engine(1).counters();
  std::cout << "  retransmitted " << a.retransmitted_packets + b.retransmitted_packets << ", timeouts "
            << a.timeouts + b.timeouts << ", held out of order " << a.held_out_of_order + b.held_out_of_order
            << ", CNPs " << a.cnps_sent + b.cnps_sent << "\n";
}

ChannelFaults lossy() {
  ChannelFaults faults;
  faults.drop = 0.05;
  faults.duplicate = 0.02;
  faults.reorder = 0.05;
  faults.corrupt = 0.01;
  return faults;
}

TEST(RcSoak, CleanNetwork) { run_soak(SoakSetup{}); }

SoakSetup lossy_setup(LossRecovery recovery, std::uint64_t wrs) {
  SoakSetup setup;
  setup.faults = lossy();
  setup.recovery = recovery;
  setup.default_wrs = wrs;
  return setup;
}

TEST(RcSoak, LossDuplicationReorderingCorruption) { run_soak(lossy_setup(LossRecovery::go_back_n, 10000)); }

TEST(RcSoak, SelectiveRepeatUnderLossDuplicationReorderingCorruption) {
  run_soak(lossy_setup(LossRecovery::selective_repeat, 10000));
}

// DCQCN on both ends with a fifth of all packets CE-marked: QPs are paced
// (rates cut, timers raise them) on top of loss, and nothing may change.
TEST(RcSoak, DcqcnPacingUnderLossAndEcnMarks) {
  SoakSetup setup = lossy_setup(LossRecovery::go_back_n, 4000);
  setup.faults.ecn_mark = 0.2;
  setup.congestion.reaction_point = true;
  setup.congestion.dcqcn.line_rate_bps = 25e9;
  run_soak(setup);
}

}  // namespace
}  // namespace uroce::testing
