// Wire-layer throughput: CRC-32 backends (ISA-L vs zlib), ICRC, whole-frame
// parse (with ICRC check) and emit, each next to memcpy of the same bytes.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "tests/support/frame_builder.h"
#include "wire/crc32.h"
#include "wire/frame.h"
#include "wire/icrc.h"

namespace {

using namespace uroce;

std::vector<std::uint8_t> random_bytes(std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  std::uint32_t x = 2463534242u;
  for (auto& b : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x);
  }
  return bytes;
}

void BM_Memcpy(benchmark::State& state) {
  auto size = static_cast<std::size_t>(state.range(0));
  auto source = random_bytes(size);
  std::vector<std::uint8_t> target(size);
  for (auto _ : state) {
    std::memcpy(target.data(), source.data(), size);
    benchmark::DoNotOptimize(target.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

template <std::uint32_t (*Crc)(std::uint32_t, ByteSpan)>
void BM_Crc32(benchmark::State& state) {
  auto data = random_bytes(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Crc(0, data));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.size()));
}

std::vector<std::uint8_t> write_frame(std::size_t payload_length) {
  auto payload = random_bytes(payload_length);
  return testing::emit(testing::frame_spec(testing::headers_for(wire::opcode::kRcRdmaWriteMiddle), payload));
}

void BM_Icrc(benchmark::State& state) {
  auto frame = write_frame(static_cast<std::size_t>(state.range(0)));
  ByteSpan ip = ByteSpan(frame).subspan(wire::kEthernetHeaderLength, wire::kIpv4HeaderLength);
  ByteSpan rest = ByteSpan(frame).subspan(wire::kEthernetHeaderLength + wire::kIpv4HeaderLength);
  rest = rest.first(rest.size() - wire::kIcrcLength);
  for (auto _ : state) benchmark::DoNotOptimize(wire::compute_icrc(ip, rest));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * frame.size()));
}

void BM_ParseFrame(benchmark::State& state) {
  auto frame = write_frame(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    auto parsed = wire::parse_roce_frame(frame);
    benchmark::DoNotOptimize(parsed);
    if (!parsed || !parsed->icrc_ok) state.SkipWithError("frame did not parse");
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * frame.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_EmitFrame(benchmark::State& state) {
  auto payload = random_bytes(static_cast<std::size_t>(state.range(0)));
  auto spec = testing::frame_spec(testing::headers_for(wire::opcode::kRcRdmaWriteMiddle), payload);
  std::vector<std::uint8_t> out(9000);
  std::size_t length = 0;
  for (auto _ : state) {
    auto written = wire::emit_roce_frame(spec, out);
    benchmark::DoNotOptimize(out.data());
    length = *written;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * length));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int size : {64, 256, 1024, 4096, 65536}) b->Arg(size);
}

void PayloadSizes(benchmark::internal::Benchmark* b) {
  for (int size : {0, 64, 1024, 4096}) b->Arg(size);
}

BENCHMARK(BM_Memcpy)->Apply(Sizes);
BENCHMARK(BM_Crc32<wire::crc32_update_isal>)->Name("BM_Crc32Isal")->Apply(Sizes);
BENCHMARK(BM_Crc32<wire::crc32_update_zlib>)->Name("BM_Crc32Zlib")->Apply(Sizes);
BENCHMARK(BM_Icrc)->Apply(PayloadSizes);
BENCHMARK(BM_ParseFrame)->Apply(PayloadSizes);
BENCHMARK(BM_EmitFrame)->Apply(PayloadSizes);

}  // namespace

BENCHMARK_MAIN();
