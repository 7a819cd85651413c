// The adaptive progress mode on real devices over loopback UDP: a polling
// application moves its own packets while the progress thread rests; held
// ACKs leave behind the application's reply, or alone when none comes, or
// at once when a QP is about to leave RTS; the
// thread takes the port when the application stops polling, and at once when
// it arms a CQ to sleep. Addresses are in 127.0.6.0/24, one pair per test.
#include <gtest/gtest.h>

#include <poll.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/support/test_network.h"
#include "uroce/device.h"

namespace uroce::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
constexpr TimeNs kHour = 3'600'000'000'000;

std::unique_ptr<Device> open_adaptive(const std::string& address, TimeNs handoff_ns = 200'000,
                                      TimeNs ack_hold_ns = DeviceConfig{}.ack_hold_ns) {
  DeviceConfig config;
  config.address = address;
  config.progress_mode = ProgressMode::adaptive;
  config.handoff_ns = handoff_ns;
  config.ack_hold_ns = ack_hold_ns;
  auto device = Device::open(config);
  if (!device) ADD_FAILURE() << device.error();
  return device ? std::move(*device) : nullptr;
}

// One completion from end's CQ, taken as ibv_poll_cq takes it (Device::poll,
// which moves packets when the CQ is empty); nullopt after the deadline.
std::optional<WorkCompletion> poll_one(Device& device, const Endpoint& end, std::chrono::milliseconds patience) {
  auto give_up = std::chrono::steady_clock::now() + patience;
  WorkCompletion completion{};
  while (std::chrono::steady_clock::now() < give_up) {
    int found = device.poll([&](Engine& engine) {
      auto got = engine.poll_cq(end.cq, std::span(&completion, 1));
      return got ? static_cast<int>(*got) : -1;
    });
    if (found == 1) return completion;
    if (found < 0) return std::nullopt;
  }
  return std::nullopt;
}

// Polls end's CQ, as the program would, until device's thread has seen the
// polling and rests (with a handoff of an hour it then rests for the test's
// whole length). A single short poll is not enough on a loaded machine: the
// thread may have passed its look at the polling mark just before, and be
// preempted on its way into a round that takes the next arrival.
bool poll_until_thread_rests(Device& device, const Endpoint& end) {
  auto give_up = std::chrono::steady_clock::now() + 5s;
  while (device.progress_counters().thread_rests == 0) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    poll_one(device, end, 1ms);
  }
  return true;
}

struct Pair {
  std::unique_ptr<Device> a, b;
  Endpoint x, y;
};

Pair connected(const char* a_address, const char* b_address, TimeNs a_handoff, TimeNs b_handoff,
               TimeNs b_ack_hold = DeviceConfig{}.ack_hold_ns) {
  Pair pair{open_adaptive(a_address, a_handoff), open_adaptive(b_address, b_handoff, b_ack_hold), {}, {}};
  if (!pair.a || !pair.b) return pair;
  std::tie(pair.x, pair.y) =
      pair.a->call_and_wake([&](Engine& ea) { return pair.b->call_and_wake([&](Engine& eb) { return connect_rc(ea, eb); }); });
  return pair;
}

SendWr write_of(Sge& sge, std::uint64_t address, std::uint32_t rkey, std::uint64_t id) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {address, rkey};
  return wr;
}

// Registers source on a and target on b; returns a WRITE of all of source
// into target, whose one element is sge.
SendWr write_across(Pair& pair, std::vector<std::uint8_t>& source, std::vector<std::uint8_t>& target, Sge& sge) {
  MrKeys source_keys = pair.a->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.x.pd, source.data(), source.size(), kAll); });
  MrKeys target_keys = pair.b->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.y.pd, target.data(), target.size(), kAll); });
  sge = Sge{reinterpret_cast<std::uintptr_t>(source.data()), static_cast<std::uint32_t>(source.size()), source_keys.lkey};
  return write_of(sge, reinterpret_cast<std::uintptr_t>(target.data()), target_keys.rkey, 1);
}

// ib_write_lat's loop on both sides: write the counter into the peer, wait
// for our own completion, spin on memory for the peer's counter. Each side
// has its own application thread; every counter must arrive in order.
TEST(AdaptiveProgress, WritePingPongIsCarriedByThePollingApplications) {
  Pair pair = connected("127.0.6.2", "127.0.6.3", 200'000, 200'000);
  ASSERT_TRUE(pair.a && pair.b);
  constexpr std::uint32_t kIterations = 3000;
  alignas(64) std::array<std::atomic<std::uint32_t>, 2> inbox{};   // [0] on a, [1] on b
  alignas(64) std::array<std::uint32_t, 2> outbox{};
  std::array<MrKeys, 2> in_keys, out_keys;
  in_keys[0] = pair.a->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.x.pd, &inbox[0], 4, kAll); });
  in_keys[1] = pair.b->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.y.pd, &inbox[1], 4, kAll); });
  out_keys[0] = pair.a->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.x.pd, &outbox[0], 4, kAll); });
  out_keys[1] = pair.b->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.y.pd, &outbox[1], 4, kAll); });
  std::atomic<bool> failed{false};

  auto side = [&](int me, Device& device, const Endpoint& end, bool serves_first) {
    int peer = 1 - me;
    Sge sge{reinterpret_cast<std::uintptr_t>(&outbox[me]), 4, out_keys[me].lkey};
    for (std::uint32_t i = 1; i <= kIterations && !failed; ++i) {
      if (!(serves_first && i == 1)) {
        auto give_up = std::chrono::steady_clock::now() + 10s;
        while (inbox[me].load(std::memory_order_acquire) != i - (serves_first ? 1 : 0) && !failed) {
          if (std::chrono::steady_clock::now() > give_up) failed = true;
        }
      }
      outbox[me] = i;
      SendWr wr = write_of(sge, reinterpret_cast<std::uintptr_t>(&inbox[peer]), in_keys[peer].rkey, i);
      if (device.post([&](Engine& e) { return e.post_send(end.qpn, wr); }) != std::errc{}) failed = true;
      auto completion = poll_one(device, end, 10'000ms);
      if (!completion || completion->status != WcStatus::success) failed = true;
    }
  };
  std::thread b_side([&] { side(1, *pair.b, pair.y, false); });
  side(0, *pair.a, pair.x, true);
  b_side.join();
  ASSERT_FALSE(failed);
  EXPECT_EQ(inbox[1].load(), kIterations);

  for (Device* device : {pair.a.get(), pair.b.get()}) {
    ProgressCounters counters = device->progress_counters();
    // The applications received nearly everything themselves: each ACK rode
    // behind the reply, so the peer, polling for its completion, took the
    // next WRITE in the same receive instead of finding it later by the
    // thread. (Under load an application may lose its core for longer than
    // the handoff time; the bounds leave room for that.)
    EXPECT_GT(counters.application_receives, kIterations / 2) << counters.thread_receives;
    EXPECT_LT(counters.thread_receives, kIterations / 4);
    EXPECT_GT(counters.acks_carried, kIterations / 2) << counters.acks_expired;
  }
}

// A WRITE whose receiver polls but never replies: the held ACK leaves on its
// own once ack_hold_ns has passed, from the receiver's own polling rounds
// (the handoff time is an hour: the thread never takes over).
TEST(AdaptiveProgress, HeldAckLeavesAloneWhenNoReplyComes) {
  Pair pair = connected("127.0.6.4", "127.0.6.5", kHour, kHour);
  ASSERT_TRUE(pair.a && pair.b);
  std::vector<std::uint8_t> source(4096, 0x5A), target(4096, 0);
  MrKeys source_keys = pair.a->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.x.pd, source.data(), 4096, kAll); });
  MrKeys target_keys = pair.b->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.y.pd, target.data(), 4096, kAll); });
  std::atomic<bool> done{false};
  ASSERT_TRUE(poll_until_thread_rests(*pair.b, pair.y));  // b's application polls from now on: its thread rests
  std::thread receiver([&] {  // polls its (empty) CQ, as an application waiting for a SEND would
    while (!done) poll_one(*pair.b, pair.y, 1ms);
  });
  Sge sge{reinterpret_cast<std::uintptr_t>(source.data()), 4096, source_keys.lkey};
  for (std::uint64_t i = 1; i <= 20; ++i) {
    SendWr wr = write_of(sge, reinterpret_cast<std::uintptr_t>(target.data()), target_keys.rkey, i);
    ASSERT_EQ(pair.a->post([&](Engine& e) { return e.post_send(pair.x.qpn, wr); }), std::errc{});
    auto completion = poll_one(*pair.a, pair.x, 5'000ms);
    ASSERT_TRUE(completion) << "WRITE " << i << " never acknowledged";
    EXPECT_EQ(completion->status, WcStatus::success);
  }
  done = true;
  receiver.join();
  EXPECT_EQ(target, source);
  EXPECT_GE(pair.b->progress_counters().acks_expired, 20u);
  EXPECT_EQ(pair.b->progress_counters().thread_receives, 0u);
}

// A QP about to leave RTS sends the ACKs it holds first (ibv_modify_qp to
// ERR and ibv_destroy_qp call acknowledge_arrivals): with a hold of ten
// seconds, the peer's WRITE stays unacknowledged until the receiver
// releases its ACK, then completes at once.
TEST(AdaptiveProgress, ReleasingHeldAcksSendsThemAtOnce) {
  Pair pair = connected("127.0.6.10", "127.0.6.11", kHour, kHour, /*b_ack_hold=*/10'000'000'000);
  ASSERT_TRUE(pair.a && pair.b);
  std::vector<std::uint8_t> source(64, 0x5A), target(64, 0);
  Sge sge;
  SendWr wr = write_across(pair, source, target, sge);
  ASSERT_EQ(pair.a->post([&](Engine& e) { return e.post_send(pair.x.qpn, wr); }), std::errc{});
  auto give_up = std::chrono::steady_clock::now() + 5s;
  while (target != source && std::chrono::steady_clock::now() < give_up) poll_one(*pair.b, pair.y, 1ms);
  ASSERT_EQ(target, source) << "the WRITE never arrived";
  EXPECT_FALSE(poll_one(*pair.a, pair.x, 50ms)) << "the ACK was not held";
  pair.b->acknowledge_arrivals();
  auto completion = poll_one(*pair.a, pair.x, 1'000ms);
  ASSERT_TRUE(completion) << "the released ACK did not arrive";
  EXPECT_EQ(completion->status, WcStatus::success);
}

// What reached a device whose program stopped polling is acknowledged before
// a QP leaves RTS (ibv_destroy_qp and ibv_modify_qp to ERR call
// acknowledge_arrivals), as a hardware RNIC acknowledges on receipt: the
// receiver's thread rests for an hour, so the peer's WRITE waits unread
// until then, and is placed and acknowledged at that call.
TEST(AdaptiveProgress, ArrivalsAreAcknowledgedBeforeAQpLeavesRts) {
  Pair pair = connected("127.0.6.12", "127.0.6.13", kHour, kHour);
  ASSERT_TRUE(pair.a && pair.b);
  std::vector<std::uint8_t> source(64, 0x3C), target(64, 0);
  Sge sge;
  SendWr wr = write_across(pair, source, target, sge);
  ASSERT_TRUE(poll_until_thread_rests(*pair.b, pair.y));  // b's program polled: its thread rests from now on
  ASSERT_EQ(pair.a->post([&](Engine& e) { return e.post_send(pair.x.qpn, wr); }), std::errc{});
  EXPECT_FALSE(poll_one(*pair.a, pair.x, 100ms)) << "b's device acknowledged with nobody driving it";
  EXPECT_NE(static_cast<volatile std::uint8_t*>(target.data())[63], 0x3C) << "placed with nobody driving b";
  pair.b->acknowledge_arrivals();
  EXPECT_EQ(target, source);
  auto completion = poll_one(*pair.a, pair.x, 1'000ms);
  ASSERT_TRUE(completion) << "the WRITE that had arrived was not acknowledged";
  EXPECT_EQ(completion->status, WcStatus::success);
}

// The receiver polls for a while and then stops (it sleeps, or computes): its
// thread takes the port after the handoff time and serves the peer's READs.
TEST(AdaptiveProgress, ThreadServesReadsOnceTheApplicationStopsPolling) {
  Pair pair = connected("127.0.6.6", "127.0.6.7", 200'000, 200'000);
  ASSERT_TRUE(pair.a && pair.b);
  std::vector<std::uint8_t> exposed(64 << 10), landing(64 << 10, 0);
  for (std::size_t i = 0; i < exposed.size(); ++i) exposed[i] = static_cast<std::uint8_t>(i * 7 + 1);
  MrKeys exposed_keys = pair.b->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.y.pd, exposed.data(), exposed.size(), kAll); });
  MrKeys landing_keys = pair.a->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.x.pd, landing.data(), landing.size(), kAll); });
  poll_one(*pair.b, pair.y, 5ms);  // b's application polled: its thread rests
  Sge sge{reinterpret_cast<std::uintptr_t>(landing.data()), static_cast<std::uint32_t>(landing.size()), landing_keys.lkey};
  for (std::uint64_t i = 1; i <= 10; ++i) {
    SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::rdma_read;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {reinterpret_cast<std::uintptr_t>(exposed.data()), exposed_keys.rkey};
    ASSERT_EQ(pair.a->post([&](Engine& e) { return e.post_send(pair.x.qpn, wr); }), std::errc{});
    auto completion = poll_one(*pair.a, pair.x, 5'000ms);
    ASSERT_TRUE(completion) << "READ " << i << " never answered";
    EXPECT_EQ(completion->status, WcStatus::success);
  }
  EXPECT_EQ(landing, exposed);
  EXPECT_GT(pair.b->progress_counters().thread_receives, 0u);
  EXPECT_EQ(pair.b->progress_counters().application_receives, 0u);
}

// An application that polled, then arms its CQ and sleeps on the completion
// channel, is woken by the next arrival although its handoff time is an hour:
// arming the CQ hands the port to the thread at once.
TEST(AdaptiveProgress, ArmingTheCqHandsThePortToTheThreadAtOnce) {
  Pair pair = connected("127.0.6.8", "127.0.6.9", kHour, kHour);
  ASSERT_TRUE(pair.a && pair.b);
  std::vector<std::uint8_t> message(3000, 0x33), inbox(4096, 0);
  MrKeys message_keys = pair.a->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.x.pd, message.data(), 3000, kAll); });
  MrKeys inbox_keys = pair.b->call_and_wake([&](Engine& e) { return *e.reg_mr(pair.y.pd, inbox.data(), 4096, kAll); });
  Sge recv{reinterpret_cast<std::uintptr_t>(inbox.data()), 4096, inbox_keys.lkey};
  ASSERT_EQ(pair.b->post([&](Engine& e) { return e.post_recv(pair.y.qpn, RecvWr{5, {&recv, 1}}); }), std::errc{});
  poll_one(*pair.b, pair.y, 5ms);  // an application that polled: the thread rests for an hour...
  ASSERT_EQ(pair.b->call_and_wake([&](Engine& e) { return e.req_notify_cq(pair.y.cq, false); }), std::errc{});
  pair.b->hand_progress_to_thread();  // ...until it says it sleeps (ibv_req_notify_cq does)

  Sge sge{reinterpret_cast<std::uintptr_t>(message.data()), 3000, message_keys.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::send;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  ASSERT_EQ(pair.a->post([&](Engine& e) { return e.post_send(pair.x.qpn, wr); }), std::errc{});
  pollfd channel{pair.b->completion_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&channel, 1, 10'000), 1);
  EXPECT_EQ(pair.b->get_cq_event(), std::optional<std::uint32_t>(pair.y.cq));
  auto received = poll_one(*pair.b, pair.y, 1'000ms);
  ASSERT_TRUE(received);
  EXPECT_EQ(received->byte_len, 3000u);
  EXPECT_EQ(0, std::memcmp(inbox.data(), message.data(), 3000));
  auto sent = poll_one(*pair.a, pair.x, 5'000ms);  // b's ACK left too
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->status, WcStatus::success);
}

}  // namespace
}  // namespace uroce::testing
