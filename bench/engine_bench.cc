// Transport engine throughput without I/O: two engines in one thread exchange
// 64 KiB RDMA WRITEs at MTU 4096 (datagrams handed over in memory), next to
// the floor of moving the same bytes once: memcpy + ICRC per 4 KiB packet;
// and the engines' share of a 2-byte WRITE ping-pong's latency; and a
// multipath WRITE whose packets arrive reversed, held or placed directly;
// and what the fault guard on copies into registered memory costs
// (transport/registered_copy.h), against memcpy and the unguarded engine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "tests/support/test_network.h"
#include "transport/registered_copy.h"
#include "wire/icrc.h"

namespace {

using namespace uroce;

constexpr std::uint32_t kMessage = 64 * 1024;
constexpr std::uint32_t kMtu = 4096;
constexpr int kOutstanding = 16;

// Two engines with a connected RC pair at MTU 4096 and a signaled 64 KiB
// WRITE from a's buffer to b's, ready to post.
struct WritePair {
  explicit WritePair(testing::RcOptions options) : a(config(1)), b(config(2)) {
    options.mtu = PathMtu::mtu4096;
    std::tie(end_a, end_b) = testing::connect_rc(a, b, options);
    MrKeys source_keys = *a.reg_mr(end_a.pd, source.data(), source.size(), kAccessLocalWrite);
    MrKeys target_keys = *b.reg_mr(end_b.pd, target.data(), target.size(), kAccessLocalWrite | kAccessRemoteWrite);
    sge = Sge{reinterpret_cast<std::uintptr_t>(source.data()), kMessage, source_keys.lkey};
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data()), target_keys.rkey};
  }
  static EngineConfig config(std::uint8_t host) {
    EngineConfig config;
    config.gid = gid_from_ipv4({10, 0, 0, host});
    return config;
  }
  Engine a, b;
  testing::Endpoint end_a, end_b;
  std::vector<std::uint8_t> source = std::vector<std::uint8_t>(kMessage, 0x5A);
  std::vector<std::uint8_t> target = std::vector<std::uint8_t>(kMessage);
  Sge sge{};
  SendWr wr;
};

void BM_EngineRdmaWrite64K(benchmark::State& state) {
  testing::RcOptions options;
  options.recovery = static_cast<LossRecovery>(state.range(0));
  WritePair pair(options);
  Engine& a = pair.a;
  Engine& b = pair.b;
  const testing::Endpoint& end_a = pair.end_a;
  const SendWr& wr = pair.wr;

  std::vector<std::uint8_t> buffer(kMaxDatagramLength);
  WorkCompletion completions[kOutstanding];
  int outstanding = 0;
  std::int64_t messages = 0, packets = 0;
  TimeNs now = 0;
  for (auto _ : state) {
    while (outstanding < kOutstanding) {
      a.post_send(end_a.qpn, wr);
      ++outstanding;
    }
    while (std::size_t length = a.poll_transmit(buffer, now).length) {
      b.on_datagram(std::span(buffer).first(length), now);
      ++packets;
    }
    while (std::size_t length = b.poll_transmit(buffer, now).length) a.on_datagram(std::span(buffer).first(length), now);
    std::size_t done = *a.poll_cq(end_a.cq, completions);
    outstanding -= static_cast<int>(done);
    messages += static_cast<std::int64_t>(done);
    now += 1000;
  }
  state.SetBytesProcessed(messages * kMessage);
  state.counters["packets_per_s"] = benchmark::Counter(static_cast<double>(packets), benchmark::Counter::kIsRate);
  state.counters["messages"] = static_cast<double>(messages);
}

// The floor: each 4 KiB packet's payload copied once and covered by one ICRC.
void BM_MemcpyIcrcFloor64K(benchmark::State& state) {
  std::vector<std::uint8_t> source(kMessage, 0x5A), target(kMessage);
  std::vector<std::uint8_t> header(28, 0x45);
  header[0] = 0x45;
  for (auto _ : state) {
    for (std::uint32_t offset = 0; offset < kMessage; offset += kMtu) {
      std::memcpy(target.data() + offset, source.data() + offset, kMtu);
      benchmark::DoNotOptimize(
          wire::compute_icrc(std::span(header).first(20), std::span(target).subspan(offset, kMtu)));
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kMessage);
  state.counters["packets_per_s"] = benchmark::Counter(static_cast<double>(state.iterations() * (kMessage / kMtu)),
                                                       benchmark::Counter::kIsRate);
}

// A 2-byte WRITE ping-pong, as write_lat runs it, without I/O: each side
// posts a WRITE, the other takes it and ACKs it, the ACK completes it. One
// iteration is a round trip: what the engines alone add to each half of it.
void BM_EngineWrite2BytePingPong(benchmark::State& state) {
  EngineConfig config_a, config_b;
  config_a.gid = gid_from_ipv4({10, 0, 0, 1});
  config_b.gid = gid_from_ipv4({10, 0, 0, 2});
  Engine a(config_a), b(config_b);
  auto [end_a, end_b] = testing::connect_rc(a, b, testing::RcOptions{});
  std::vector<std::uint8_t> memory_a(64), memory_b(64);
  MrKeys keys_a = *a.reg_mr(end_a.pd, memory_a.data(), memory_a.size(), kAccessLocalWrite | kAccessRemoteWrite);
  MrKeys keys_b = *b.reg_mr(end_b.pd, memory_b.data(), memory_b.size(), kAccessLocalWrite | kAccessRemoteWrite);
  std::vector<std::uint8_t> buffer(kMaxDatagramLength);
  WorkCompletion completion[1];
  TimeNs now = 0;
  auto half_trip = [&](Engine& from, const testing::Endpoint& sender, std::vector<std::uint8_t>& source, MrKeys source_keys,
                       Engine& to, std::vector<std::uint8_t>& target, MrKeys target_keys) {
    Sge sge{reinterpret_cast<std::uintptr_t>(source.data()), 2, source_keys.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled | kSendInline;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(target.data()), target_keys.rkey};
    from.post_send(sender.qpn, wr);
    std::size_t length = from.poll_transmit(buffer, now).length;
    to.on_datagram(std::span(buffer).first(length), now);
    length = to.poll_transmit(buffer, now).length;
    from.on_datagram(std::span(buffer).first(length), now);
    if (*from.poll_cq(sender.cq, completion) != 1) state.SkipWithError("no completion");
  };
  for (auto _ : state) {
    half_trip(a, end_a, memory_a, keys_a, b, memory_b, keys_b);
    half_trip(b, end_b, memory_b, keys_b, a, memory_a, keys_a);
    now += 1000;
  }
  state.counters["half_trip_ns"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Multipath 64 KiB WRITEs whose packets arrive in reverse order (each
// WRITE's 16 packets, as a spray over paths of different lengths may
// deliver them): every packet but the first waits behind a gap. Argument:
// 0 held whole in the reorder buffer and copied to memory in order, 1
// placed on arrival (direct placement, as MRC does).
void BM_EngineMultipathWrite64KReversed(benchmark::State& state) {
  testing::RcOptions options;
  options.recovery = LossRecovery::selective_repeat;
  options.multipath.entropy_values = 16;
  options.multipath.direct_placement = state.range(0) != 0;
  WritePair pair(options);
  Engine& a = pair.a;
  Engine& b = pair.b;
  const testing::Endpoint& end_a = pair.end_a;
  const SendWr& wr = pair.wr;

  std::vector<std::vector<std::uint8_t>> packets(kMessage / kMtu, std::vector<std::uint8_t>(kMaxDatagramLength));
  std::vector<std::size_t> lengths(packets.size());
  std::vector<std::uint8_t> buffer(kMaxDatagramLength);
  WorkCompletion completion[1];
  std::int64_t messages = 0;
  TimeNs now = 0;
  for (auto _ : state) {
    a.post_send(end_a.qpn, wr);
    std::size_t count = 0;
    while (count < packets.size() && (lengths[count] = a.poll_transmit(packets[count], now).length) != 0) ++count;
    for (std::size_t i = count; i-- > 0;) b.on_datagram(std::span(packets[i]).first(lengths[i]), now);
    while (std::size_t length = b.poll_transmit(buffer, now).length) a.on_datagram(std::span(buffer).first(length), now);
    if (*a.poll_cq(end_a.cq, completion) != 1 || completion[0].status != WcStatus::success) {
      state.SkipWithError("the WRITE did not complete");
      break;
    }
    ++messages;
    now += 1000;
  }
  state.SetBytesProcessed(messages * kMessage);
  state.counters["placed_per_message"] =
      static_cast<double>(b.counters().placed_out_of_order) / static_cast<double>(std::max<std::int64_t>(messages, 1));
}

// One copy of BYTES: memcpy (guarded 0), or a copy into registered memory
// with the fault guard armed (guarded 1), as every device arms it. Once
// armed it stays so: the guarded runs are registered after every other.
void BM_CopyIntoRegisteredMemory(benchmark::State& state) {
  std::size_t bytes = static_cast<std::size_t>(state.range(0));
  bool guarded = state.range(1) != 0;
  if (guarded) transport::guard_registered_copies();
  std::vector<std::uint8_t> source(bytes, 0x5A), target(bytes);
  for (auto _ : state) {
    if (guarded) {
      transport::copy_registered(target.data(), source.data(), bytes);
    } else {
      std::memcpy(target.data(), source.data(), bytes);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

// The 64 KiB WRITE stream again, with the engine's copies guarded.
void BM_EngineRdmaWrite64KGuardedCopies(benchmark::State& state) {
  transport::guard_registered_copies();
  BM_EngineRdmaWrite64K(state);
}

// Argument: 0 go-back-N, 1 selective repeat (same work on a clean link).
BENCHMARK(BM_EngineRdmaWrite64K)->ArgName("selective_repeat")->Arg(0)->Arg(1);
BENCHMARK(BM_MemcpyIcrcFloor64K);
BENCHMARK(BM_EngineWrite2BytePingPong);
BENCHMARK(BM_EngineMultipathWrite64KReversed)->ArgName("direct_placement")->Arg(0)->Arg(1);
BENCHMARK(BM_CopyIntoRegisteredMemory)->ArgNames({"bytes", "guarded"})->Args({64, 0})->Args({4096, 0});
BENCHMARK(BM_CopyIntoRegisteredMemory)->ArgNames({"bytes", "guarded"})->Args({64, 1})->Args({4096, 1});
BENCHMARK(BM_EngineRdmaWrite64KGuardedCopies)->ArgName("selective_repeat")->Arg(0);

}  // namespace

BENCHMARK_MAIN();
