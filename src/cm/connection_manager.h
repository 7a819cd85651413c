// The Communication Manager's protocol (IBTA Vol 1, 12.9), without I/O: the
// states of each connection, the MADs each step sends, their retries and
// timeouts, and the events a consumer (librdmacm) acts on. The caller
// feeds arriving MADs (on_mad) and the clock (on_timer), and takes what to
// send (poll_outgoing) and what happened (poll_event).
//
//   active:  connect() -> REQ ... REP arrives -> event reply;
//            ready() -> RTU; established
//   passive: REQ for a listened service -> MRA, event request;
//            accept() -> REP ... RTU arrives -> event established (or
//            reject() -> REJ)
//   either:  disconnect() -> DREQ ... DREP -> event disconnected;
//            a DREQ arriving is answered with a DREP -> event disconnected
//   SIDR (service ID resolution, for UD services):
//            resolve() -> SIDR_REQ ... SIDR_REP -> event resolved;
//            a SIDR_REQ for a listened service -> event resolution_request;
//            answer() -> SIDR_REP (a duplicate SIDR_REQ gets it again)
//
// A REQ, REP or DREQ that is not answered within the response timeout is
// sent again, up to max_retries times; then the connection ends with event
// unreachable (REQ, REP: a REJ with reason timeout goes to the peer, as Linux
// sends) or disconnected (DREQ). A REQ handed to the consumer is answered at
// once with an MRA, as Linux's rdma_cm does, so that the peer waits for the
// consumer's decision (mra_service_timeout) instead of retrying and giving
// up. Duplicates are answered as the spec says (a REQ being decided: the MRA
// again; a REQ already accepted: the REP again; a REP
// already answered: the RTU again; a DREQ already answered: the DREP again).
// MADs for no known connection are counted and dropped, except a REQ for a
// service nobody listens on and a SIDR_REQ for one, answered with status
// "service ID not supported" (but dropped where the address is shared:
// CmConfig::address_shared).
// A REQ for a service nobody listens on is held for a grace time
// (listen_grace_ns, at most half the peer's response timeout): a listen() in
// that time takes it. Then it is rejected (reason invalid service ID), or,
// for a reserved service (an ID is bound to its port, and may be about to
// listen), dropped: the peer sends it again after its timeout. Linux rejects
// at once; uroce waits because programs race their own listen: Debian's
// qperf 0.4.11 sends its port before it listens, and perftest 4.5's server
// listens only after a handshake that lets its client connect at once (and
// perftest's retry after a REJ uses IDs it has destroyed).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "cm/cm_messages.h"
#include "common/bytes.h"
#include "uroce/vocabulary.h"

namespace uroce::cm {

struct CmConfig {
  std::uint64_t ca_guid = 0;
  std::uint64_t seed = 1;  // communication IDs and transaction IDs derive from it
  // 4.096 us * 2^20 = 4.3 s and 15 retries, as Linux's rdma_cm.
  std::uint8_t response_timeout = 20;
  std::uint8_t max_retries = 15;
  // An MRA's service timeout: 4.096 us * 2^24 = 69 s, as Linux's rdma_cm.
  std::uint8_t mra_service_timeout = 24;
  TimeNs timewait_ns = 2'000'000'000;  // how long an ended connection answers duplicates
  TimeNs listen_grace_ns = 1'000'000'000;  // how long a REQ waits for its service's listener
  // Whether other devices share this one's address (processes on one host,
  // each with a CM, all of which see every MAD to the address): a REQ or
  // SIDR_REQ for a service nobody here listens on is then another's, and is
  // dropped instead of refused. Asked only when refusing. Unset: never shared.
  std::function<bool()> address_shared;
};

struct Outgoing {
  Gid destination{};
  std::array<std::uint8_t, kMadLength> mad{};
};

enum class CmEventKind {
  request,       // passive: a REQ for a listened service (message: the REQ)
  reply,         // active: the REP for our REQ (message: the REP)
  established,   // passive: the RTU arrived (the active side is established by ready())
  rejected,      // a REJ ended it (message: the REJ)
  unreachable,   // no answer after every retry
  disconnected,  // a DREQ arrived and was answered, or our DREQ was answered or timed out
  resolution_request,  // passive: a SIDR_REQ for a listened service (message: the SIDR_REQ)
  resolved,            // active: the SIDR_REP for our SIDR_REQ, whatever its status (message: the SIDR_REP)
};

struct CmEvent {
  CmEventKind kind;
  std::uint32_t comm_id = 0;  // the local communication ID: the handle of the connection
  Gid peer{};
  std::optional<CmMessage> message;
};

struct CmCounters {
  std::uint64_t received = 0;
  std::uint64_t sent = 0;
  std::uint64_t resent = 0;
  std::uint64_t dropped = 0;  // malformed, or for no known connection, or wrong in its state
};

class ConnectionManager {
 public:
  explicit ConnectionManager(const CmConfig& config);

  // Starts serving REQs for service_id, those held for it first.
  void listen(std::uint64_t service_id);
  void stop_listening(std::uint64_t service_id) { listening_.erase(service_id); }
  void reserve(std::uint64_t service_id) { reserved_.insert(service_id); }
  void release(std::uint64_t service_id) { reserved_.erase(service_id); }

  // Sends request (its local_comm_id, CA GUID and timeouts are filled in)
  // to peer; returns the connection's local communication ID.
  std::uint32_t connect(const Gid& peer, ConnectRequest request, TimeNs now);
  // Passive, after event request: the REP (its IDs and GUID filled in).
  // false: no such connection waiting for a decision.
  bool accept(std::uint32_t comm_id, ConnectReply reply, TimeNs now);
  // A REJ; for a SIDR_REQ waiting, a SIDR_REP with status rejected (reason unused).
  bool reject(std::uint32_t comm_id, std::uint16_t reason, ByteSpan private_data, TimeNs now);
  // Active, after event reply: the RTU; the connection is established.
  bool ready(std::uint32_t comm_id, ByteSpan private_data, TimeNs now);
  // From established (either side): DREQ, naming the peer's QPN.
  bool disconnect(std::uint32_t comm_id, TimeNs now);
  // Sends request (its request ID filled in) to peer; returns the
  // resolution's handle (its request ID). Ends in event resolved or unreachable.
  std::uint32_t resolve(const Gid& peer, SidrRequest request, TimeNs now);
  // Passive, after event resolution_request: the SIDR_REP (its request ID
  // filled in), of any status. false: no such request waiting.
  bool answer(std::uint32_t id, SidrReply reply, TimeNs now);
  // Forgets a connection without a word to the peer (its consumer is gone).
  void forget(std::uint32_t comm_id);

  void on_mad(const Gid& from, ByteSpan payload, TimeNs now);
  void on_timer(TimeNs now);
  TimeNs next_deadline() const;

  std::optional<Outgoing> poll_outgoing();
  std::optional<CmEvent> poll_event();
  const CmCounters& counters() const { return counters_; }
  std::size_t connections() const { return connections_.size(); }

 private:
  enum class State {
    req_sent, req_received, rep_sent, rep_received, established, dreq_sent, timewait,
    sidr_req_sent, sidr_req_received,
  };
  struct Connection {
    State state;
    Gid peer{};
    std::uint32_t local_comm_id = 0;
    std::uint32_t remote_comm_id = 0;
    std::uint32_t remote_qpn = 0;
    std::uint64_t transaction_id = 0;
    std::optional<CmMessage> last_sent;  // resent on a timeout or a duplicate
    TimeNs deadline = kNever;
    int retries_left = 0;
  };

  std::uint32_t fresh_comm_id();
  bool address_is_shared() const { return config_.address_shared && config_.address_shared(); }
  Connection& begin(State state, const Gid& peer);
  TimeNs response_time() const;
  void send(Connection& connection, CmMessage message, TimeNs now, bool timed);
  void send_reject(const Gid& to, std::uint64_t transaction_id, std::uint32_t local, std::uint32_t remote,
                   MessageKind about, RejectReason reason, ByteSpan private_data = {});
  void end(Connection& connection, CmEventKind kind, std::optional<CmMessage> message, TimeNs now);
  void send_receipt_ack(const Connection& connection);
  Connection* find(std::uint32_t local_comm_id);
  Connection* find_remote(const Gid& peer, std::uint32_t remote_comm_id);

  struct HeldRequest {
    Gid from{};
    std::uint64_t transaction_id = 0;
    ConnectRequest request;
    TimeNs deadline = kNever;
  };

  void on_request(const Gid& from, std::uint64_t transaction_id, const ConnectRequest& request, TimeNs now);
  void hold(const Gid& from, std::uint64_t transaction_id, const ConnectRequest& request, TimeNs now);
  void admit(const Gid& from, std::uint64_t transaction_id, const ConnectRequest& request);
  void expire_held(TimeNs now);
  void on_reply(const Gid& from, const ConnectReply& reply);
  void on_ready_to_use(const ReadyToUse& rtu);
  void on_reject(const Gid& from, const ConnectReject& reject, TimeNs now);
  void on_receipt_ack(const ReceiptAck& mra, TimeNs now);
  void on_disconnect_request(const Gid& from, std::uint64_t transaction_id, const DisconnectRequest& dreq,
                             TimeNs now);
  void on_disconnect_reply(const DisconnectReply& drep, TimeNs now);
  void on_resolution_request(const Gid& from, std::uint64_t transaction_id, const SidrRequest& request);
  void on_resolution_reply(const Gid& from, const SidrReply& reply, TimeNs now);

  CmConfig config_;
  std::uint64_t random_state_;
  std::set<std::uint64_t> listening_;
  std::set<std::uint64_t> reserved_;
  std::vector<HeldRequest> held_;  // REQs waiting for their service's listener
  std::map<std::uint32_t, Connection> connections_;  // by local communication ID
  std::deque<Outgoing> outgoing_;
  std::deque<CmEvent> events_;
  CmCounters counters_;
};

}  // namespace uroce::cm
