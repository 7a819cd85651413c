// The fault soak on the real path: two uroce devices on loopback UDP (in a
// network namespace of their own, where nftables drops a share of RoCE
// datagrams at random; see in_lossy_netns.sh) carry random verified WRITEs,
// READs, SENDs and atomics of mixed sizes over four QP pairs, with go-back-N
// and with selective repeat. Every completion, byte and atomic result is
// checked. UROCE_LOSSY_SOAK_WRS sets the number of WRs per recovery mode.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tests/support/mixed_traffic.h"
#include "uroce/device.h"

namespace uroce::testing {
namespace {

std::uint64_t wrs_per_mode() {
  const char* value = std::getenv("UROCE_LOSSY_SOAK_WRS");
  return value ? std::strtoull(value, nullptr, 10) : 1'000'000;
}

std::unique_ptr<Device> open_device(const char* address) {
  DeviceConfig config;
  config.address = address;
  config.progress_thread = false;  // this thread drives both devices
  config.fixed_seed = true;
  // One skb per datagram, so that the nftables rule drops single datagrams,
  // not whole GSO batches.
  config.gso = UdpGsoPolicy::never;
  auto device = Device::open(config);
  if (!device) throw std::runtime_error(device.error());
  return std::move(*device);
}

class LossyLoopback : public ::testing::TestWithParam<LossRecovery> {};

TEST_P(LossyLoopback, EveryMessageArrivesAsSent) {
  std::unique_ptr<Device> a = open_device("127.0.0.1");
  std::unique_ptr<Device> b = open_device("127.0.0.2");
  // Without a progress thread only this thread touches the engines, between
  // its progress() calls; the traffic model works on them directly.
  Engine& engine_a = *a->call_and_wake([](Engine& e) { return &e; });
  Engine& engine_b = *b->call_and_wake([](Engine& e) { return &e; });
  RcOptions options;
  options.recovery = GetParam();
  options.timeout = 12;  // 16.8 ms: loopback's RTT is microseconds
  SizeMix sizes;
  sizes.small = 0.7;
  sizes.medium = 0.25;
  sizes.large = 0.05;  // nothing over 64 KiB: a million messages in minutes
  const std::uint64_t total = wrs_per_mode();
  MixedTraffic traffic(7, engine_a, engine_b, 4, options, sizes);
  auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  std::uint64_t last_completed = 0;
  while (!traffic.pump(total)) {
    a->progress();
    b->progress();
    auto now = std::chrono::steady_clock::now();
    if (traffic.completed() != last_completed) {
      last_completed = traffic.completed();
      last_progress = now;
    }
    ASSERT_LT(now - last_progress, std::chrono::seconds(20)) << "no completion for 20 s after "
                                                             << traffic.completed() << " of " << total;
  }
  ASSERT_FALSE(HasFailure());
  traffic.check_memory();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EngineCounters x = a->counters(), y = b->counters();
  std::printf("lossy soak (%s): %llu WRs verified in %.1f s (%.0f WRs/s); packets sent %llu, retransmitted %llu "
              "(%.2f%%), timeouts %llu, NAKs %llu, held out of order %llu\n",
              GetParam() == LossRecovery::go_back_n ? "go-back-N" : "selective repeat",
              static_cast<unsigned long long>(total), seconds, static_cast<double>(total) / seconds,
              static_cast<unsigned long long>(x.packets_sent + y.packets_sent),
              static_cast<unsigned long long>(x.retransmitted_packets + y.retransmitted_packets),
              100.0 * static_cast<double>(x.retransmitted_packets + y.retransmitted_packets) /
                  static_cast<double>(x.packets_sent + y.packets_sent),
              static_cast<unsigned long long>(x.timeouts + y.timeouts),
              static_cast<unsigned long long>(x.naks_sent + y.naks_sent),
              static_cast<unsigned long long>(x.held_out_of_order + y.held_out_of_order));
  std::fflush(stdout);
  EXPECT_GT(x.retransmitted_packets + y.retransmitted_packets, 0u) << "nothing was lost: is the nftables rule there?";
}

INSTANTIATE_TEST_SUITE_P(Recovery, LossyLoopback,
                         ::testing::Values(LossRecovery::go_back_n, LossRecovery::selective_repeat),
                         [](const auto& param_info) {
                           return param_info.param == LossRecovery::go_back_n ? "GoBackN" : "SelectiveRepeat";
                         });

}  // namespace
}  // namespace uroce::testing
