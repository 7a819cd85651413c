// The floors under the intra-host path, measured on this machine: what two
// processes pay to see each other's stores (a cache line bounced between
// them), what moving 4 KiB datagrams through a shared ring costs (one copy
// in, one copy out, no protocol), and what a memcpy of the same bytes in one
// process costs. bench/intra_host.sh sets uroce's figures beside them.
//
//   shm_floor pingpong [-n ROUND_TRIPS]   half round trip: median and 99th percentile, ns
//   shm_floor ring [-n DATAGRAMS]         GB/s through a 64-slot ring of 4 KiB slots
//   shm_floor memcpy [-s BYTES]           GB/s of memcpy between two page-aligned buffers of BYTES
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "half_round_trips.h"

namespace {

using Clock = std::chrono::steady_clock;

struct alignas(64) Line {
  std::atomic<std::uint64_t> value{0};
};

void* shared_memory(std::size_t bytes) {
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  return memory;
}

int pingpong(std::uint64_t round_trips) {
  auto* lines = new (shared_memory(4096)) Line[2];
  Line& ping = lines[0];
  Line& pong = lines[1];
  pid_t child = ::fork();
  if (child == 0) {
    for (std::uint64_t i = 1; i <= round_trips; ++i) {
      while (ping.value.load(std::memory_order_acquire) != i) {
      }
      pong.value.store(i, std::memory_order_release);
    }
    ::_exit(0);
  }
  std::vector<double> half_trips;
  half_trips.reserve(round_trips);
  for (std::uint64_t i = 1; i <= round_trips; ++i) {
    auto start = Clock::now();
    ping.value.store(i, std::memory_order_release);
    while (pong.value.load(std::memory_order_acquire) != i) {
    }
    half_trips.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / 2);
  }
  ::waitpid(child, nullptr, 0);
  uroce::bench::HalfTrips summary = uroce::bench::summarize(std::move(half_trips));
  std::printf("cache-line ping-pong between two processes: half round trip median %.0f ns, 99%% %.0f ns\n",
              summary.median, summary.p99);
  return 0;
}

int ring(std::uint64_t datagrams) {
  constexpr std::size_t kSlots = 64, kSlot = 4096 + 64, kPayload = 4096, kBuffer = 64 * 1024;
  char* memory = static_cast<char*>(shared_memory(4096 + kSlots * kSlot));
  auto* indexes = new (memory) Line[2];
  Line& head = indexes[0];
  Line& tail = indexes[1];
  char* slots = memory + 4096;
  pid_t child = ::fork();
  if (child == 0) {  // the sender: 64 KiB messages cut into 4 KiB datagrams
    std::vector<char> source(kBuffer, 1);
    std::uint64_t known_tail = 0;
    for (std::uint64_t i = 0; i < datagrams; ++i) {
      while (i - known_tail >= kSlots) known_tail = tail.value.load(std::memory_order_acquire);
      std::memcpy(slots + (i % kSlots) * kSlot, source.data() + (i % (kBuffer / kPayload)) * kPayload, kPayload);
      head.value.store(i + 1, std::memory_order_release);
    }
    ::_exit(0);
  }
  std::vector<char> target(kBuffer);
  auto start = Clock::now();
  for (std::uint64_t i = 0; i < datagrams;) {
    std::uint64_t published = head.value.load(std::memory_order_acquire);
    for (; i < published; ++i) {
      std::memcpy(target.data() + (i % (kBuffer / kPayload)) * kPayload, slots + (i % kSlots) * kSlot, kPayload);
    }
    tail.value.store(i, std::memory_order_release);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::waitpid(child, nullptr, 0);
  std::printf("4 KiB datagrams through a shared ring (copy in, copy out): %.1f GB/s\n",
              static_cast<double>(datagrams * kPayload) / seconds / 1e9);
  return 0;
}

// Both buffers start on a page, as registered buffers do (perftest's, and
// any shared region): two heap vectors of 64 KiB lie 16 bytes apart modulo
// 4 KiB, where every load aliases a recent store (4K aliasing) and memcpy
// ran at about 60% of this speed.
int copy(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::size_t rounded = (bytes + page - 1) / page * page;
  auto* source = static_cast<char*>(std::aligned_alloc(page, rounded));
  auto* target = static_cast<char*>(std::aligned_alloc(page, rounded));
  if (source == nullptr || target == nullptr) return 1;
  std::memset(source, 1, rounded);
  std::memset(target, 0, rounded);
  std::uint64_t rounds = std::max<std::uint64_t>(1, (std::uint64_t{4} << 30) / bytes);  // 4 GiB in all
  auto start = Clock::now();
  for (std::uint64_t i = 0; i < rounds; ++i) {
    std::memcpy(target, source, bytes);
    asm volatile("" : : "r"(target) : "memory");
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("memcpy of %zu bytes: %.1f GB/s\n", bytes, static_cast<double>(rounds * bytes) / seconds / 1e9);
  std::free(source);
  std::free(target);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The floors under uroce's intra-host path");
  app.require_subcommand(1);
  std::uint64_t round_trips = 200'000, datagrams = 2'000'000;
  std::size_t bytes = 65536;
  auto* ping = app.add_subcommand("pingpong", "A cache line bounced between two processes");
  ping->add_option("-n", round_trips, "Round trips")->check(CLI::Range(1ull, 1ull << 32));
  auto* through = app.add_subcommand("ring", "4 KiB datagrams through a shared ring");
  through->add_option("-n", datagrams, "Datagrams")->check(CLI::Range(1ull, 1ull << 40));
  auto* memcpy_command = app.add_subcommand("memcpy", "memcpy in one process");
  memcpy_command->add_option("-s", bytes, "Bytes per copy")->check(CLI::Range(std::size_t{64}, std::size_t{1} << 30));
  CLI11_PARSE(app, argc, argv);
  if (*ping) return pingpong(round_trips);
  if (*through) return ring(datagrams);
  return copy(bytes);
}
