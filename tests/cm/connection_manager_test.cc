// The CM protocol between two ConnectionManagers joined by a pipe that can
// lose chosen MADs: connect, accept, RTU; each lost message recovered the
// way the spec says (REQ resent; REP resent on the duplicate REQ; RTU resent
// on the duplicate REP; MRA for a slow decision); rejects; a silent peer
// ending in unreachable with the REJ Linux sends; disconnects; and hostile
// MADs (unknown IDs, wrong peer, a REQ flood) dropped or refused, bounded.
// SIDR: resolved with the consumer's answer, a lost SIDR_REP answered again
// for the repeated SIDR_REQ, refusals (no listener, the consumer's reject),
// and a silent peer ending in unreachable.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "cm/cm_messages.h"
#include "cm/connection_manager.h"

namespace uroce::cm {
namespace {

constexpr std::uint64_t kService = 0x0000000001061C06;  // TCP port 7174
constexpr TimeNs kResponse = TimeNs{4096} << 10;        // the tests' response timeout

CmConfig config(std::uint64_t seed) {
  CmConfig c;
  c.ca_guid = 0x0200AAFFFE000000 | seed;
  c.seed = seed;
  c.response_timeout = 10;
  c.max_retries = 3;
  c.mra_service_timeout = 10;  // the same 4.2 ms
  c.timewait_ns = 100'000'000;
  return c;
}

struct Pipe {
  ConnectionManager a{config(1)}, b{config(2)};
  Gid gid_a{0xAA}, gid_b{0xBB};
  TimeNs now = 0;
  // Returns true to lose the MAD (its name, and whether it goes a -> b).
  std::function<bool(std::string_view, bool)> lose = [](std::string_view, bool) { return false; };
  std::vector<std::string> log;  // "a>b REQ", ...

  void deliver() {
    for (bool moved = true; moved;) {
      moved = false;
      for (int side = 0; side < 2; ++side) {
        ConnectionManager& from = side == 0 ? a : b;
        ConnectionManager& to = side == 0 ? b : a;
        while (auto out = from.poll_outgoing()) {
          moved = true;
          EXPECT_EQ(out->destination, side == 0 ? gid_b : gid_a);
          auto mad = parse_cm_mad(out->mad);
          ASSERT_TRUE(mad);
          std::string name(message_name(mad->message));
          log.push_back(std::string(side == 0 ? "a>b " : "b>a ") + name);
          if (lose(name, side == 0)) continue;
          to.on_mad(side == 0 ? gid_a : gid_b, out->mad, now);
        }
      }
    }
  }
  void advance(TimeNs by) {
    now += by;
    a.on_timer(now);
    b.on_timer(now);
    deliver();
  }
  std::uint32_t connect() {
    ConnectRequest request;
    request.service_id = kService;
    request.local_qpn = 0x123;
    request.starting_psn = 777;
    request.private_data[0] = 0x5A;
    std::uint32_t id = a.connect(gid_b, request, now);
    deliver();
    return id;
  }
  int count(const std::string& entry) const { return static_cast<int>(std::count(log.begin(), log.end(), entry)); }
};

ConnectReply reply_with_qpn(std::uint32_t qpn) {
  ConnectReply reply;
  reply.local_qpn = qpn;
  reply.starting_psn = 999;
  reply.private_data[0] = 0xA5;
  return reply;
}

TEST(ConnectionManager, ConnectAcceptAndReadyEstablishBothSides) {
  Pipe pipe;
  pipe.b.listen(kService);
  std::uint32_t active = pipe.connect();
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request);
  ASSERT_EQ(request->kind, CmEventKind::request);
  EXPECT_EQ(request->peer, pipe.gid_a);
  const auto& req = std::get<ConnectRequest>(*request->message);
  EXPECT_EQ(req.local_qpn, 0x123u);
  EXPECT_EQ(req.starting_psn, 777u);
  EXPECT_EQ(req.private_data[0], 0x5A);
  EXPECT_EQ(req.local_comm_id, active);

  ASSERT_TRUE(pipe.b.accept(request->comm_id, reply_with_qpn(0x456), pipe.now));
  EXPECT_FALSE(pipe.b.accept(request->comm_id, reply_with_qpn(0x456), pipe.now));  // decided already
  pipe.deliver();
  auto reply = pipe.a.poll_event();
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->kind, CmEventKind::reply);
  EXPECT_EQ(reply->comm_id, active);
  EXPECT_EQ(std::get<ConnectReply>(*reply->message).local_qpn, 0x456u);
  EXPECT_EQ(std::get<ConnectReply>(*reply->message).private_data[0], 0xA5);

  ASSERT_TRUE(pipe.a.ready(active, {}, pipe.now));
  pipe.deliver();
  auto established = pipe.b.poll_event();
  ASSERT_TRUE(established);
  EXPECT_EQ(established->kind, CmEventKind::established);
  EXPECT_EQ(established->comm_id, request->comm_id);
  // b's MRA (sent as b hands the REQ over, as Linux's rdma_cm does) lets a wait for b's decision.
  EXPECT_EQ(pipe.log, (std::vector<std::string>{"a>b REQ", "b>a MRA", "b>a REP", "a>b RTU"}));
  pipe.advance(10 * kResponse);  // nothing is waiting for an answer
  EXPECT_EQ(pipe.log.size(), 4u);
  EXPECT_FALSE(pipe.a.poll_event() || pipe.b.poll_event());
}

TEST(ConnectionManager, ALostRequestIsSentAgainAfterTheResponseTimeout) {
  Pipe pipe;
  pipe.b.listen(kService);
  int requests = 0;
  pipe.lose = [&](std::string_view name, bool) { return name == "REQ" && requests++ == 0; };
  pipe.connect();
  EXPECT_FALSE(pipe.b.poll_event());
  pipe.advance(kResponse - 1);
  EXPECT_EQ(pipe.count("a>b REQ"), 1);
  pipe.advance(1);
  EXPECT_EQ(pipe.count("a>b REQ"), 2);
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request && request->kind == CmEventKind::request);
  EXPECT_EQ(pipe.a.counters().resent, 1u);
}

TEST(ConnectionManager, ALostReplyIsSentAgainForTheRepeatedRequest) {
  Pipe pipe;
  pipe.b.listen(kService);
  int replies = 0;
  pipe.lose = [&](std::string_view name, bool) { return name == "REP" && replies++ == 0; };
  std::uint32_t active = pipe.connect();
  auto request = pipe.b.poll_event();
  // b's MRA gave a two response times; b decides after 1.5, so that a's
  // timer (at 2) goes before b's REP timer (at 2.5).
  pipe.advance(3 * kResponse / 2);
  pipe.b.accept(request->comm_id, reply_with_qpn(9), pipe.now);
  pipe.deliver();
  EXPECT_FALSE(pipe.a.poll_event());
  pipe.advance(kResponse / 2);  // a's REQ again; b answers it with its REP
  EXPECT_EQ(pipe.count("a>b REQ"), 2);
  EXPECT_EQ(pipe.count("b>a REP"), 2);
  auto reply = pipe.a.poll_event();
  ASSERT_TRUE(reply && reply->kind == CmEventKind::reply && reply->comm_id == active);
  EXPECT_FALSE(pipe.b.poll_event());  // no second request event for the duplicate
}

TEST(ConnectionManager, ALostRtuIsSentAgainForTheRepeatedReply) {
  Pipe pipe;
  pipe.b.listen(kService);
  int rtus = 0;
  pipe.lose = [&](std::string_view name, bool) { return name == "RTU" && rtus++ == 0; };
  std::uint32_t active = pipe.connect();
  auto request = pipe.b.poll_event();
  pipe.b.accept(request->comm_id, reply_with_qpn(9), pipe.now);
  pipe.deliver();
  pipe.a.poll_event();
  pipe.a.ready(active, {}, pipe.now);
  pipe.deliver();
  EXPECT_FALSE(pipe.b.poll_event());
  pipe.advance(kResponse);  // b's REP again; a answers with its RTU
  EXPECT_EQ(pipe.count("a>b RTU"), 2);
  auto established = pipe.b.poll_event();
  ASSERT_TRUE(established && established->kind == CmEventKind::established);
}

TEST(ConnectionManager, ASlowDecisionIsWaitedForThroughMras) {
  Pipe pipe;
  pipe.b.listen(kService);
  std::uint32_t active = pipe.connect();
  auto request = pipe.b.poll_event();
  EXPECT_EQ(pipe.count("b>a MRA"), 1);  // at once, with the REQ handed over
  // Each MRA gives a the service timeout on top of the response timeout, and
  // a repeated REQ while b decides draws another: without them a's 3 retries
  // would have run out at 4 response times; at 4 it still waits.
  for (int i = 0; i < 8; ++i) pipe.advance(kResponse / 2);
  EXPECT_FALSE(pipe.a.poll_event());
  EXPECT_EQ(pipe.count("a>b REQ"), 3);  // at 0, 2 and 4 response times
  EXPECT_EQ(pipe.count("b>a MRA"), 3);
  pipe.b.accept(request->comm_id, reply_with_qpn(9), pipe.now);
  pipe.deliver();
  auto reply = pipe.a.poll_event();
  ASSERT_TRUE(reply && reply->kind == CmEventKind::reply && reply->comm_id == active);
}

// Held for half the peer's response timeout (less than the 1 s grace here),
// then rejected.
TEST(ConnectionManager, ARequestForAServiceNobodyListensOnIsRejectedAfterTheGraceTime) {
  Pipe pipe;
  std::uint32_t active = pipe.connect();
  EXPECT_FALSE(pipe.a.poll_event());
  pipe.advance(kResponse / 2 - 1);
  EXPECT_FALSE(pipe.a.poll_event());
  pipe.advance(1);
  auto event = pipe.a.poll_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->kind, CmEventKind::rejected);
  EXPECT_EQ(event->comm_id, active);
  EXPECT_EQ(std::get<ConnectReject>(*event->message).reason, static_cast<std::uint16_t>(RejectReason::invalid_service_id));
  EXPECT_EQ(pipe.b.connections(), 0u);
  pipe.advance(10 * kResponse);
  EXPECT_EQ(pipe.count("a>b REQ"), 1);  // no retry after a REJ
}

// perftest 4.5's server listens only after its client may connect: a REQ
// that arrives first is served by the listen() within the grace time.
TEST(ConnectionManager, ARequestThatArrivesJustBeforeItsListenerIsServed) {
  Pipe pipe;
  pipe.connect();
  pipe.advance(kResponse / 4);
  EXPECT_EQ(pipe.b.next_deadline(), kResponse / 2);
  pipe.b.listen(kService);
  pipe.deliver();
  EXPECT_EQ(pipe.count("b>a MRA"), 1);
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request && request->kind == CmEventKind::request);
  pipe.advance(kResponse);
  EXPECT_FALSE(pipe.a.poll_event());
  EXPECT_EQ(pipe.count("b>a REJ"), 0);
  EXPECT_EQ(pipe.count("a>b REQ"), 1);
}

TEST(ConnectionManager, HeldRequestsAreBounded) {
  Pipe pipe;
  for (int i = 0; i < 300; ++i) pipe.connect();
  EXPECT_EQ(pipe.count("b>a REJ"), 300 - 256);  // beyond 256 waiting, rejected at once
  pipe.advance(kResponse / 2);
  EXPECT_EQ(pipe.count("b>a REJ"), 300);
}

// A port bound but not yet listened on (qperf 0.4.11 sends its port before
// rdma_listen): after the grace time the REQ is dropped, not rejected, and
// its retry is served.
TEST(ConnectionManager, ARequestForAReservedServiceWaitsForItsListener) {
  Pipe pipe;
  pipe.b.reserve(kService);
  pipe.connect();
  pipe.advance(kResponse / 2);
  EXPECT_FALSE(pipe.a.poll_event());
  EXPECT_FALSE(pipe.b.poll_event());
  EXPECT_EQ(pipe.count("b>a REJ"), 0);
  EXPECT_EQ(pipe.b.counters().dropped, 1u);
  pipe.b.listen(kService);
  pipe.advance(kResponse / 2);
  EXPECT_EQ(pipe.count("a>b REQ"), 2);
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request && request->kind == CmEventKind::request);
  // Released (the ID is gone) and not listened on: rejected again.
  pipe.b.stop_listening(kService);
  pipe.b.release(kService);
  pipe.connect();
  pipe.advance(kResponse / 2);
  EXPECT_EQ(pipe.count("b>a REJ"), 1);
}

TEST(ConnectionManager, TheConsumersRejectCarriesItsReasonAndPrivateData) {
  Pipe pipe;
  pipe.b.listen(kService);
  pipe.connect();
  auto request = pipe.b.poll_event();
  std::uint8_t why[] = {1, 2, 3};
  ASSERT_TRUE(pipe.b.reject(request->comm_id, static_cast<std::uint16_t>(RejectReason::consumer_reject), why, pipe.now));
  pipe.deliver();
  auto event = pipe.a.poll_event();
  ASSERT_TRUE(event && event->kind == CmEventKind::rejected);
  const auto& rej = std::get<ConnectReject>(*event->message);
  EXPECT_EQ(rej.reason, 28);
  EXPECT_EQ(rej.message, MessageKind::request);
  EXPECT_EQ(rej.private_data[2], 3);
}

TEST(ConnectionManager, ASilentPeerEndsInUnreachableAfterEveryRetryWithATimeoutReject) {
  Pipe pipe;
  pipe.lose = [](std::string_view, bool to_b) { return to_b; };  // b hears nothing
  std::uint32_t active = pipe.connect();
  for (int i = 0; i < 3; ++i) {
    pipe.advance(kResponse);
    EXPECT_FALSE(pipe.a.poll_event());
  }
  pipe.advance(kResponse);
  auto event = pipe.a.poll_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->kind, CmEventKind::unreachable);
  EXPECT_EQ(event->comm_id, active);
  EXPECT_EQ(pipe.count("a>b REQ"), 4);  // the first and 3 retries
  EXPECT_EQ(pipe.count("a>b REJ"), 1);  // as Linux: REJ, reason timeout, about "other"
  pipe.advance(200'000'000);
  EXPECT_EQ(pipe.a.connections(), 0u);  // gone after timewait
}

std::pair<std::uint32_t, std::uint32_t> established(Pipe& pipe) {
  pipe.b.listen(kService);
  std::uint32_t active = pipe.connect();
  auto request = pipe.b.poll_event();
  pipe.b.accept(request->comm_id, reply_with_qpn(9), pipe.now);
  pipe.deliver();
  pipe.a.poll_event();
  pipe.a.ready(active, {}, pipe.now);
  pipe.deliver();
  pipe.b.poll_event();
  return {active, request->comm_id};
}

TEST(ConnectionManager, DisconnectEndsBothSidesAndALostDrepIsRecovered) {
  Pipe pipe;
  auto [active, passive] = established(pipe);
  int dreps = 0;
  pipe.lose = [&](std::string_view name, bool) { return name == "DREP" && dreps++ == 0; };
  ASSERT_TRUE(pipe.a.disconnect(active, pipe.now));
  EXPECT_FALSE(pipe.a.disconnect(active, pipe.now));
  pipe.deliver();
  auto b_event = pipe.b.poll_event();
  ASSERT_TRUE(b_event && b_event->kind == CmEventKind::disconnected && b_event->comm_id == passive);
  EXPECT_FALSE(pipe.a.poll_event());
  pipe.advance(kResponse);  // a's DREQ again, answered from b's timewait
  auto a_event = pipe.a.poll_event();
  ASSERT_TRUE(a_event && a_event->kind == CmEventKind::disconnected && a_event->comm_id == active);
  EXPECT_FALSE(pipe.b.poll_event());  // b heard of it once
}

TEST(ConnectionManager, ADisconnectNobodyAnswersStillEnds) {
  Pipe pipe;
  auto [active, passive] = established(pipe);
  pipe.lose = [](std::string_view, bool to_b) { return to_b; };
  pipe.a.disconnect(active, pipe.now);
  for (int i = 0; i < 4; ++i) pipe.advance(kResponse);
  auto event = pipe.a.poll_event();
  ASSERT_TRUE(event && event->kind == CmEventKind::disconnected);
}

constexpr std::uint64_t kUdService = 0x0000000001111C06;  // UDP port 7174

std::uint32_t resolve(Pipe& pipe) {
  SidrRequest request;
  request.service_id = kUdService;
  request.private_data[0] = 0x5A;
  std::uint32_t id = pipe.a.resolve(pipe.gid_b, request, pipe.now);
  pipe.deliver();
  return id;
}

SidrReply answer_with_qpn(std::uint32_t qpn) {
  SidrReply reply;
  reply.qpn = qpn;
  reply.qkey = 0x01234567;
  reply.service_id = kUdService;
  reply.private_data[0] = 0xA5;
  return reply;
}

TEST(ConnectionManager, SidrResolvesAServiceWithTheConsumersAnswer) {
  Pipe pipe;
  pipe.b.listen(kUdService);
  std::uint32_t active = resolve(pipe);
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request);
  ASSERT_EQ(request->kind, CmEventKind::resolution_request);
  EXPECT_EQ(request->peer, pipe.gid_a);
  EXPECT_EQ(std::get<SidrRequest>(*request->message).request_id, active);
  EXPECT_EQ(std::get<SidrRequest>(*request->message).private_data[0], 0x5A);
  ASSERT_TRUE(pipe.b.answer(request->comm_id, answer_with_qpn(0x456), pipe.now));
  EXPECT_FALSE(pipe.b.answer(request->comm_id, answer_with_qpn(0x456), pipe.now));  // answered already
  pipe.deliver();
  auto resolved = pipe.a.poll_event();
  ASSERT_TRUE(resolved);
  ASSERT_EQ(resolved->kind, CmEventKind::resolved);
  EXPECT_EQ(resolved->comm_id, active);
  const auto& reply = std::get<SidrReply>(*resolved->message);
  EXPECT_EQ(reply.status, SidrStatus::valid);
  EXPECT_EQ(reply.qpn, 0x456u);
  EXPECT_EQ(reply.qkey, 0x01234567u);
  EXPECT_EQ(reply.private_data[0], 0xA5);
  pipe.advance(10 * kResponse);  // nothing waits for an answer; no retry
  EXPECT_EQ(pipe.log, (std::vector<std::string>{"a>b SIDR_REQ", "b>a SIDR_REP"}));
  EXPECT_FALSE(pipe.a.poll_event() || pipe.b.poll_event());
}

TEST(ConnectionManager, ALostSidrReplyIsSentAgainForTheRepeatedRequest) {
  Pipe pipe;
  pipe.b.listen(kUdService);
  int replies_lost = 0;
  pipe.lose = [&](std::string_view name, bool) { return name == "SIDR_REP" && replies_lost++ == 0; };
  std::uint32_t active = resolve(pipe);
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request);
  ASSERT_TRUE(pipe.b.answer(request->comm_id, answer_with_qpn(0x456), pipe.now));
  pipe.deliver();
  EXPECT_FALSE(pipe.a.poll_event());
  pipe.advance(kResponse);  // the SIDR_REQ again; b answers from its record, the consumer is not asked again
  auto resolved = pipe.a.poll_event();
  ASSERT_TRUE(resolved && resolved->kind == CmEventKind::resolved && resolved->comm_id == active);
  EXPECT_EQ(std::get<SidrReply>(*resolved->message).qpn, 0x456u);
  EXPECT_FALSE(pipe.b.poll_event());
  EXPECT_EQ(pipe.count("b>a SIDR_REP"), 2);
}

TEST(ConnectionManager, SidrRefusalsCarryTheirStatus) {
  Pipe pipe;
  resolve(pipe);  // b listens on nothing
  auto refused = pipe.a.poll_event();
  ASSERT_TRUE(refused && refused->kind == CmEventKind::resolved);
  EXPECT_EQ(std::get<SidrReply>(*refused->message).status, SidrStatus::service_id_not_supported);
  EXPECT_EQ(pipe.b.connections(), 0u);

  pipe.b.listen(kUdService);
  resolve(pipe);
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request);
  std::uint8_t why[] = {7};
  ASSERT_TRUE(pipe.b.reject(request->comm_id, 0, why, pipe.now));
  pipe.deliver();
  auto rejected = pipe.a.poll_event();
  ASSERT_TRUE(rejected && rejected->kind == CmEventKind::resolved);
  EXPECT_EQ(std::get<SidrReply>(*rejected->message).status, SidrStatus::rejected);
  EXPECT_EQ(std::get<SidrReply>(*rejected->message).private_data[0], 7);
}

// Where other devices share b's address, each sees every MAD to it: a REQ
// or SIDR_REQ for a service b does not listen on is another's, and b drops
// it instead of refusing it (which would end the connection another accepts).
TEST(ConnectionManager, OnASharedAddressARequestForAServiceNobodyHereListensOnIsDropped) {
  Pipe pipe;
  int asked = 0;
  CmConfig shared = config(2);
  shared.address_shared = [&asked] { return ++asked > 0; };
  pipe.b = ConnectionManager(shared);
  pipe.connect();
  pipe.advance(kResponse / 2);
  EXPECT_FALSE(pipe.a.poll_event());
  EXPECT_EQ(pipe.count("b>a REJ"), 0);
  EXPECT_EQ(pipe.b.counters().dropped, 1u);
  EXPECT_EQ(asked, 1);  // asked when refusing, not for every MAD
  resolve(pipe);
  EXPECT_FALSE(pipe.a.poll_event());
  EXPECT_EQ(pipe.count("b>a SIDR_REP"), 0);
  // The listener, where it is this device's, is served as always.
  pipe.b.listen(kService);
  pipe.advance(kResponse / 2);
  auto request = pipe.b.poll_event();
  ASSERT_TRUE(request && request->kind == CmEventKind::request);
}

TEST(ConnectionManager, AnUnansweredSidrRequestEndsInUnreachable) {
  Pipe pipe;
  pipe.lose = [](std::string_view, bool to_b) { return to_b; };
  std::uint32_t active = resolve(pipe);
  for (int i = 0; i < 4; ++i) pipe.advance(kResponse);
  auto event = pipe.a.poll_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->kind, CmEventKind::unreachable);
  EXPECT_EQ(event->comm_id, active);
  EXPECT_EQ(pipe.count("a>b SIDR_REQ"), 4);  // the first and 3 retries
  EXPECT_EQ(pipe.count("a>b REJ"), 0);       // SIDR has no REJ
}

TEST(ConnectionManager, HostileMadsAreDroppedAndARequestFloodIsBounded) {
  Pipe pipe;
  auto [active, passive] = established(pipe);
  std::uint64_t dropped = pipe.a.counters().dropped;
  ConnectReply stray;
  stray.remote_comm_id = 0xDEAD;  // no such connection
  pipe.a.on_mad(pipe.gid_b, emit_cm_mad(CmMad{1, stray}), pipe.now);
  ConnectReply wrong_peer;
  wrong_peer.remote_comm_id = active;
  pipe.a.on_mad(Gid{0xEE}, emit_cm_mad(CmMad{1, wrong_peer}), pipe.now);
  DisconnectReply drep;
  drep.remote_comm_id = active;  // not disconnecting
  pipe.a.on_mad(pipe.gid_b, emit_cm_mad(CmMad{1, drep}), pipe.now);
  std::uint8_t garbage[256] = {1, 7, 2, 3};
  pipe.a.on_mad(pipe.gid_b, garbage, pipe.now);  // attribute 0
  pipe.a.on_mad(pipe.gid_b, ByteSpan(garbage, 100), pipe.now);
  EXPECT_EQ(pipe.a.counters().dropped, dropped + 5);
  EXPECT_FALSE(pipe.a.poll_event());

  // A flood of REQs for a listened service: each waits for a decision, up to
  // a bound; past it they are refused (no resources), and memory stays bounded.
  for (std::uint32_t i = 0; i < 5000; ++i) {
    ConnectRequest request;
    request.service_id = kService;
    request.local_comm_id = 0x10000 + i;
    pipe.b.on_mad(Gid{0xCC}, emit_cm_mad(CmMad{i, request}), pipe.now);
  }
  EXPECT_LE(pipe.b.connections(), 4096u);
  int refused = 0;
  while (auto out = pipe.b.poll_outgoing()) {
    auto mad = parse_cm_mad(out->mad);
    if (mad && std::holds_alternative<ConnectReject>(mad->message)) {
      EXPECT_EQ(std::get<ConnectReject>(mad->message).reason, static_cast<std::uint16_t>(RejectReason::no_resources));
      ++refused;
    }
  }
  EXPECT_EQ(refused, 5000 - 4095);  // the established connection holds one place
}

}  // namespace
}  // namespace uroce::cm
