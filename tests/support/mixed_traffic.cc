// Random verified RC traffic over QP pairs (see mixed_traffic.h).
#include "tests/support/mixed_traffic.h"

#include <algorithm>
#include <cstring>

namespace uroce::testing {

namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr std::size_t kWriteArea = 4 << 20;  // per pair, on the responder
constexpr std::size_t kReadArea = 4 << 20;   // static content, on the responder
constexpr std::size_t kCounters = 16;
constexpr std::size_t kLocalArea = 16 << 20;  // per pair, on the requester

MrKeys reg(const Endpoint& end, std::vector<std::uint8_t>& bytes) {
  return *end.engine->reg_mr(end.pd, bytes.data(), bytes.size(), kAll);
}

}  // namespace

// One requester -> responder QP pair with its memory, model and expectations.
struct MixedTraffic::Pair {
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
};

MixedTraffic::MixedTraffic(std::uint64_t seed, Engine& a, Engine& b, std::size_t pairs, RcOptions options,
                           SizeMix sizes)
    : rng_(seed), sizes_(sizes) {
  const std::uint32_t base_psn = options.sq_psn;
  for (std::size_t i = 0; i < pairs; ++i) {
    options.mtu = i % 2 ? PathMtu::mtu4096 : PathMtu::mtu1024;
    options.sq_psn = options.rq_psn = static_cast<std::uint32_t>((base_psn + i * 0x40) & 0xFFFFFF);
    // Alternate directions so both engines are requester and responder.
    auto ends = i % 2 ? connect_rc(b, a, options) : connect_rc(a, b, options);
    auto pair = std::make_unique<Pair>();
    pair->requester = ends.first;
    pair->responder = ends.second;
    pair->local.resize(kLocalArea);
    pair->write_area.assign(kWriteArea, 0);
    pair->write_model.assign(kWriteArea, 0);
    pair->read_area.resize(kReadArea);
    for (auto& byte : pair->read_area) byte = static_cast<std::uint8_t>(rng_());
    pair->recv_area.resize(kLocalArea);
    pair->local_keys = reg(pair->requester, pair->local);
    pair->write_keys = reg(pair->responder, pair->write_area);
    pair->read_keys = reg(pair->responder, pair->read_area);
    pair->recv_keys = reg(pair->responder, pair->recv_area);
    pair->counter_keys =
        *pair->responder.engine->reg_mr(pair->responder.pd, pair->counters.data(), kCounters * 8, kAll);
    pairs_.push_back(std::move(pair));
  }
}

MixedTraffic::~MixedTraffic() = default;

bool MixedTraffic::pump(std::uint64_t total, std::size_t max_outstanding) {
  for (auto& pair : pairs_) collect(*pair);
  if (::testing::Test::HasFatalFailure()) return true;
  for (auto& pair : pairs_) {
    while (posted_ < total && pair->pending.size() < max_outstanding) {
      post_random(*pair);
      ++posted_;
    }
  }
  bool idle = true;
  for (auto& pair : pairs_) idle &= pair->pending.empty() && pair->expected_receives.empty();
  return posted_ == total && idle;
}

void MixedTraffic::check_memory() const {
  for (const auto& pair : pairs_) {
    EXPECT_TRUE(pair->write_area == pair->write_model) << "WRITE target differs from the model";
    EXPECT_EQ(pair->counters, pair->counter_model);
  }
}

std::uint32_t MixedTraffic::random_size() {
  double bucket = std::uniform_real_distribution<double>(0, 1)(rng_);
  std::uint32_t limit = bucket < sizes_.small                                  ? 256
                        : bucket < sizes_.small + sizes_.medium                ? 8192
                        : bucket < sizes_.small + sizes_.medium + sizes_.large ? 65536
                                                                               : sizes_.huge_bytes;
  return std::uniform_int_distribution<std::uint32_t>(0, limit)(rng_);
}

std::size_t MixedTraffic::take_local(Pair& pair, std::size_t length) {
  // The area is large against the outstanding WRs' usual sizes, so a
  // wrapping bump allocator never hands out bytes still in use.
  if (pair.local_cursor + length > kLocalArea) pair.local_cursor = 0;
  std::size_t offset = pair.local_cursor;
  pair.local_cursor += (length + 63) & ~std::size_t{63};
  return offset;
}

void MixedTraffic::post_random(Pair& pair) {
  Engine& engine = *pair.requester.engine;
  int kind = std::uniform_int_distribution<int>(0, 9)(rng_);
  Pair::Pending pending{};
  pending.wr_id = pair.next_wr_id++;
  std::uint32_t length = random_size();
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
    pending.sent.assign(pair.local.begin() + pending.local_offset, pair.local.begin() + pending.local_offset + length);
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
    wr.atomic = {reinterpret_cast<std::uintptr_t>(pair.counters.data() + index), swap ? compare : operand, operand,
                 pair.counter_keys.rkey};
  }
  pending.length = length;
  sge = Sge{reinterpret_cast<std::uintptr_t>(pair.local.data()) + pending.local_offset, length, pair.local_keys.lkey};
  wr.sg_list = {&sge, 1};
  ASSERT_EQ(engine.post_send(pair.requester.qpn, wr), std::errc{}) << "post " << pending.wr_id;
  pair.pending.push_back(std::move(pending));
}

void MixedTraffic::collect(Pair& pair) {
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
      ++completed_;
    }
  }
  // Each pair has its own CQ on each side: the responder's holds its receives.
  while (true) {
    std::size_t n = *pair.responder.engine->poll_cq(pair.responder.cq, batch);
    if (n == 0) break;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(batch[i].qp_num, pair.responder.qpn) << "completion for another QP";
      on_receive(pair, batch[i]);
    }
  }
}

void MixedTraffic::on_receive(Pair& pair, const WorkCompletion& wc) {
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

}  // namespace uroce::testing
