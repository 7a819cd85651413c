// ConnectionManager: the CM's states, sends, retries and events.
#include "cm/connection_manager.h"

#include <algorithm>

#include "common/splitmix64.h"

namespace uroce::cm {
namespace {

constexpr std::size_t kMaxConnections = 4096;  // pending and live; a REQ beyond is refused
constexpr std::size_t kMaxHeldRequests = 256;  // REQs waiting for a listener; beyond, rejected at once
constexpr std::uint8_t kArilength = 8;         // a REJ for a timeout carries our CA GUID

template <std::size_t N>
void copy_private(std::array<std::uint8_t, N>& into, ByteSpan data) {
  std::copy_n(data.begin(), std::min(N, data.size()), into.begin());
}

}  // namespace

ConnectionManager::ConnectionManager(const CmConfig& config) : config_(config), random_state_(config.seed) {}

std::uint32_t ConnectionManager::fresh_comm_id() {
  while (true) {
    auto id = static_cast<std::uint32_t>(splitmix64(random_state_));
    if (id != 0 && !connections_.contains(id)) return id;
  }
}

TimeNs ConnectionManager::response_time() const { return TimeNs{4096} << config_.response_timeout; }

ConnectionManager::Connection* ConnectionManager::find(std::uint32_t local_comm_id) {
  auto it = connections_.find(local_comm_id);
  return it == connections_.end() ? nullptr : &it->second;
}

ConnectionManager::Connection* ConnectionManager::find_remote(const Gid& peer, std::uint32_t remote_comm_id) {
  for (auto& [id, connection] : connections_) {
    if (connection.remote_comm_id == remote_comm_id && connection.peer == peer) return &connection;
  }
  return nullptr;
}

// timed: the message wants an answer; it is sent again at each timeout.
void ConnectionManager::send(Connection& connection, CmMessage message, TimeNs now, bool timed) {
  outgoing_.push_back(Outgoing{connection.peer, emit_cm_mad(CmMad{connection.transaction_id, message})});
  ++counters_.sent;
  connection.last_sent = std::move(message);
  connection.deadline = timed ? now + response_time() : kNever;
  connection.retries_left = config_.max_retries;
}

void ConnectionManager::send_reject(const Gid& to, std::uint64_t transaction_id, std::uint32_t local,
                                    std::uint32_t remote, MessageKind about, RejectReason reason,
                                    ByteSpan private_data) {
  ConnectReject reject;
  reject.local_comm_id = local;
  reject.remote_comm_id = remote;
  reject.message = about;
  reject.reason = static_cast<std::uint16_t>(reason);
  if (reason == RejectReason::timeout) {
    reject.reject_info_length = kArilength;
    store_be64(reject.ari.data(), config_.ca_guid);
  }
  copy_private(reject.private_data, private_data);
  outgoing_.push_back(Outgoing{to, emit_cm_mad(CmMad{transaction_id, reject})});
  ++counters_.sent;
}

// The connection is over: the consumer hears why, and for timewait_ns the
// connection still answers duplicates (its last message) and then goes.
void ConnectionManager::end(Connection& connection, CmEventKind kind, std::optional<CmMessage> message, TimeNs now) {
  events_.push_back(CmEvent{kind, connection.local_comm_id, connection.peer, std::move(message)});
  connection.state = State::timewait;
  connection.deadline = now + config_.timewait_ns;
}

// An exchange we begin (REQ or SIDR_REQ): a fresh local ID, and a
// transaction ID that carries it.
ConnectionManager::Connection& ConnectionManager::begin(State state, const Gid& peer) {
  Connection connection;
  connection.state = state;
  connection.peer = peer;
  connection.local_comm_id = fresh_comm_id();
  connection.transaction_id = (std::uint64_t{fresh_comm_id()} << 32) | connection.local_comm_id;
  return connections_.emplace(connection.local_comm_id, connection).first->second;
}

std::uint32_t ConnectionManager::connect(const Gid& peer, ConnectRequest request, TimeNs now) {
  Connection& connection = begin(State::req_sent, peer);
  request.local_comm_id = connection.local_comm_id;
  request.local_ca_guid = config_.ca_guid;
  request.remote_cm_response_timeout = request.local_cm_response_timeout = config_.response_timeout;
  request.max_cm_retries = config_.max_retries;
  send(connection, request, now, /*timed=*/true);
  return connection.local_comm_id;
}

bool ConnectionManager::accept(std::uint32_t comm_id, ConnectReply reply, TimeNs now) {
  Connection* connection = find(comm_id);
  if (connection == nullptr || connection->state != State::req_received) return false;
  reply.local_comm_id = connection->local_comm_id;
  reply.remote_comm_id = connection->remote_comm_id;
  reply.local_ca_guid = config_.ca_guid;
  connection->state = State::rep_sent;
  send(*connection, reply, now, /*timed=*/true);
  return true;
}

bool ConnectionManager::reject(std::uint32_t comm_id, std::uint16_t reason, ByteSpan private_data, TimeNs now) {
  Connection* connection = find(comm_id);
  if (connection != nullptr && connection->state == State::sidr_req_received) {  // a SIDR_REP refusing
    SidrReply refusal;
    refusal.status = SidrStatus::rejected;
    copy_private(refusal.private_data, private_data);
    return answer(comm_id, refusal, now);
  }
  if (connection == nullptr || (connection->state != State::req_received && connection->state != State::rep_received)) {
    return false;
  }
  MessageKind about = connection->state == State::req_received ? MessageKind::request : MessageKind::reply;
  send_reject(connection->peer, connection->transaction_id, connection->local_comm_id, connection->remote_comm_id,
              about, static_cast<RejectReason>(reason), private_data);
  connection->state = State::timewait;
  connection->deadline = now + config_.timewait_ns;
  return true;
}

bool ConnectionManager::ready(std::uint32_t comm_id, ByteSpan private_data, TimeNs now) {
  Connection* connection = find(comm_id);
  if (connection == nullptr || connection->state != State::rep_received) return false;
  ReadyToUse rtu;
  rtu.local_comm_id = connection->local_comm_id;
  rtu.remote_comm_id = connection->remote_comm_id;
  copy_private(rtu.private_data, private_data);
  connection->state = State::established;
  send(*connection, rtu, now, /*timed=*/false);
  return true;
}

bool ConnectionManager::disconnect(std::uint32_t comm_id, TimeNs now) {
  Connection* connection = find(comm_id);
  // rep_sent: the RTU may be lost while the peer already uses the connection.
  if (connection == nullptr || (connection->state != State::established && connection->state != State::rep_sent)) {
    return false;
  }
  DisconnectRequest dreq;
  dreq.local_comm_id = connection->local_comm_id;
  dreq.remote_comm_id = connection->remote_comm_id;
  dreq.remote_qpn = connection->remote_qpn;
  connection->state = State::dreq_sent;
  send(*connection, dreq, now, /*timed=*/true);
  return true;
}

void ConnectionManager::forget(std::uint32_t comm_id) { connections_.erase(comm_id); }

void ConnectionManager::on_mad(const Gid& from, ByteSpan payload, TimeNs now) {
  auto mad = parse_cm_mad(payload);
  if (!mad) {
    ++counters_.dropped;
    return;
  }
  ++counters_.received;
  std::visit(
      [&](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, ConnectRequest>) on_request(from, mad->transaction_id, m, now);
        if constexpr (std::is_same_v<M, ConnectReply>) on_reply(from, m);
        if constexpr (std::is_same_v<M, ReadyToUse>) on_ready_to_use(m);
        if constexpr (std::is_same_v<M, ConnectReject>) on_reject(from, m, now);
        if constexpr (std::is_same_v<M, ReceiptAck>) on_receipt_ack(m, now);
        if constexpr (std::is_same_v<M, DisconnectRequest>) on_disconnect_request(from, mad->transaction_id, m, now);
        if constexpr (std::is_same_v<M, DisconnectReply>) on_disconnect_reply(m, now);
        if constexpr (std::is_same_v<M, SidrRequest>) on_resolution_request(from, mad->transaction_id, m);
        if constexpr (std::is_same_v<M, SidrReply>) on_resolution_reply(from, m, now);
      },
      mad->message);
}

void ConnectionManager::on_request(const Gid& from, std::uint64_t transaction_id, const ConnectRequest& request,
                                   TimeNs now) {
  if (Connection* known = find_remote(from, request.local_comm_id)) {  // a duplicate: our answer was lost or slow
    if (known->state == State::req_received) {
      send_receipt_ack(*known);
    } else if (known->state == State::rep_sent && known->last_sent) {
      outgoing_.push_back(Outgoing{from, emit_cm_mad(CmMad{known->transaction_id, *known->last_sent})});
      ++counters_.resent;
    } else {
      ++counters_.dropped;
    }
    return;
  }
  if (!listening_.contains(request.service_id)) {
    hold(from, transaction_id, request, now);
    return;
  }
  admit(from, transaction_id, request);
}

void ConnectionManager::hold(const Gid& from, std::uint64_t transaction_id, const ConnectRequest& request,
                             TimeNs now) {
  for (const HeldRequest& held : held_) {
    if (held.from == from && held.request.local_comm_id == request.local_comm_id) {
      ++counters_.dropped;  // the peer's retry of one already waiting
      return;
    }
  }
  if (held_.size() >= kMaxHeldRequests) {
    send_reject(from, transaction_id, 0, request.local_comm_id, MessageKind::request,
                RejectReason::invalid_service_id);
    return;
  }
  TimeNs peer_timeout = TimeNs{4096} << std::min<int>(request.remote_cm_response_timeout, 31);
  held_.push_back(HeldRequest{from, transaction_id, request, now + std::min(config_.listen_grace_ns, peer_timeout / 2)});
}

void ConnectionManager::listen(std::uint64_t service_id) {
  listening_.insert(service_id);
  std::vector<HeldRequest> waiting;
  std::erase_if(held_, [&](const HeldRequest& held) {
    if (held.request.service_id != service_id) return false;
    waiting.push_back(held);
    return true;
  });
  for (const HeldRequest& held : waiting) admit(held.from, held.transaction_id, held.request);
}

// Nobody listened in time: rejected, or (reserved) left to the peer's retry.
void ConnectionManager::expire_held(TimeNs now) {
  std::erase_if(held_, [&](const HeldRequest& held) {
    if (held.deadline > now) return false;
    if (reserved_.contains(held.request.service_id) || address_is_shared()) {
      ++counters_.dropped;
    } else {
      send_reject(held.from, held.transaction_id, 0, held.request.local_comm_id, MessageKind::request,
                  RejectReason::invalid_service_id);
    }
    return true;
  });
}

void ConnectionManager::admit(const Gid& from, std::uint64_t transaction_id, const ConnectRequest& request) {
  if (connections_.size() >= kMaxConnections) {
    send_reject(from, transaction_id, 0, request.local_comm_id, MessageKind::request, RejectReason::no_resources);
    return;
  }
  Connection connection;
  connection.state = State::req_received;
  connection.peer = from;
  connection.local_comm_id = fresh_comm_id();
  connection.remote_comm_id = request.local_comm_id;
  connection.remote_qpn = request.local_qpn;
  connection.transaction_id = transaction_id;
  connections_.emplace(connection.local_comm_id, connection);
  send_receipt_ack(connection);
  events_.push_back(CmEvent{CmEventKind::request, connection.local_comm_id, from, request});
}

// "Message received, the answer comes within the service timeout."
void ConnectionManager::send_receipt_ack(const Connection& connection) {
  ReceiptAck mra;
  mra.local_comm_id = connection.local_comm_id;
  mra.remote_comm_id = connection.remote_comm_id;
  mra.message = MessageKind::request;
  mra.service_timeout = config_.mra_service_timeout;
  outgoing_.push_back(Outgoing{connection.peer, emit_cm_mad(CmMad{connection.transaction_id, mra})});
  ++counters_.sent;
}

void ConnectionManager::on_reply(const Gid& from, const ConnectReply& reply) {
  Connection* connection = find(reply.remote_comm_id);
  if (connection == nullptr || connection->peer != from) {
    ++counters_.dropped;
    return;
  }
  if (connection->state == State::req_sent) {
    connection->state = State::rep_received;
    connection->remote_comm_id = reply.local_comm_id;
    connection->remote_qpn = reply.local_qpn;
    connection->deadline = kNever;
    events_.push_back(CmEvent{CmEventKind::reply, connection->local_comm_id, from, reply});
  } else if (connection->state == State::established && connection->remote_comm_id == reply.local_comm_id &&
             connection->last_sent) {  // our RTU was lost
    outgoing_.push_back(Outgoing{from, emit_cm_mad(CmMad{connection->transaction_id, *connection->last_sent})});
    ++counters_.resent;
  } else {
    ++counters_.dropped;
  }
}

void ConnectionManager::on_ready_to_use(const ReadyToUse& rtu) {
  Connection* connection = find(rtu.remote_comm_id);
  if (connection == nullptr || connection->state != State::rep_sent || connection->remote_comm_id != rtu.local_comm_id) {
    ++counters_.dropped;
    return;
  }
  connection->state = State::established;
  connection->deadline = kNever;
  events_.push_back(CmEvent{CmEventKind::established, connection->local_comm_id, connection->peer, rtu});
}

void ConnectionManager::on_reject(const Gid& from, const ConnectReject& reject, TimeNs now) {
  // A REJ names our ID when the peer knew it, else only its own.
  Connection* connection =
      reject.remote_comm_id != 0 ? find(reject.remote_comm_id) : find_remote(from, reject.local_comm_id);
  bool pending = connection != nullptr && connection->peer == from &&
                 (connection->state == State::req_sent || connection->state == State::req_received ||
                  connection->state == State::rep_sent || connection->state == State::rep_received);
  if (!pending) {
    ++counters_.dropped;
    return;
  }
  end(*connection, CmEventKind::rejected, reject, now);
}

void ConnectionManager::on_receipt_ack(const ReceiptAck& mra, TimeNs now) {
  Connection* connection = find(mra.remote_comm_id);
  bool waiting = connection != nullptr && ((connection->state == State::req_sent && mra.message == MessageKind::request) ||
                                           (connection->state == State::rep_sent && mra.message == MessageKind::reply));
  if (!waiting) {
    ++counters_.dropped;
    return;
  }
  // The peer answers later: wait its service timeout on top of ours, retries intact.
  connection->deadline = now + (TimeNs{4096} << std::min<std::uint8_t>(mra.service_timeout, 31)) + response_time();
}

void ConnectionManager::on_disconnect_request(const Gid& from, std::uint64_t transaction_id,
                                              const DisconnectRequest& dreq, TimeNs now) {
  Connection* connection = find(dreq.remote_comm_id);
  DisconnectReply drep;
  drep.local_comm_id = dreq.remote_comm_id;
  drep.remote_comm_id = dreq.local_comm_id;
  // As Linux: a DREQ for no connection (or one that ended) is still answered,
  // so that the peer stops asking.
  outgoing_.push_back(Outgoing{from, emit_cm_mad(CmMad{transaction_id, drep})});
  ++counters_.sent;
  if (connection == nullptr || connection->peer != from || connection->remote_comm_id != dreq.local_comm_id) return;
  if (connection->state == State::established || connection->state == State::rep_sent ||
      connection->state == State::dreq_sent) {
    end(*connection, CmEventKind::disconnected, dreq, now);
  }
}

void ConnectionManager::on_disconnect_reply(const DisconnectReply& drep, TimeNs now) {
  Connection* connection = find(drep.remote_comm_id);
  if (connection == nullptr || connection->state != State::dreq_sent || connection->remote_comm_id != drep.local_comm_id) {
    ++counters_.dropped;
    return;
  }
  end(*connection, CmEventKind::disconnected, drep, now);
}

void ConnectionManager::on_timer(TimeNs now) {
  expire_held(now);
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection& connection = it->second;
    if (connection.deadline > now) {
      ++it;
      continue;
    }
    if (connection.state == State::timewait) {
      it = connections_.erase(it);
      continue;
    }
    if (connection.retries_left > 0 && connection.last_sent) {
      --connection.retries_left;
      connection.deadline = now + response_time();
      outgoing_.push_back(Outgoing{connection.peer, emit_cm_mad(CmMad{connection.transaction_id, *connection.last_sent})});
      ++counters_.resent;
    } else if (connection.state == State::dreq_sent) {
      end(connection, CmEventKind::disconnected, std::nullopt, now);
    } else if (connection.state == State::sidr_req_sent) {
      end(connection, CmEventKind::unreachable, std::nullopt, now);
    } else {  // a REQ or REP nobody answered
      MessageKind about = connection.state == State::req_sent ? MessageKind::other : MessageKind::reply;
      send_reject(connection.peer, connection.transaction_id, connection.local_comm_id, connection.remote_comm_id,
                  about, RejectReason::timeout);
      end(connection, CmEventKind::unreachable, std::nullopt, now);
    }
    ++it;
  }
}

std::uint32_t ConnectionManager::resolve(const Gid& peer, SidrRequest request, TimeNs now) {
  Connection& resolution = begin(State::sidr_req_sent, peer);
  request.request_id = resolution.local_comm_id;
  send(resolution, request, now, /*timed=*/true);
  return resolution.local_comm_id;
}

bool ConnectionManager::answer(std::uint32_t id, SidrReply reply, TimeNs now) {
  Connection* resolution = find(id);
  if (resolution == nullptr || resolution->state != State::sidr_req_received) return false;
  reply.request_id = resolution->remote_comm_id;
  send(*resolution, reply, now, /*timed=*/false);
  resolution->state = State::timewait;  // answering duplicates with the reply, for a while
  resolution->deadline = now + config_.timewait_ns;
  return true;
}

void ConnectionManager::on_resolution_request(const Gid& from, std::uint64_t transaction_id,
                                              const SidrRequest& request) {
  if (Connection* known = find_remote(from, request.request_id)) {
    if (known->state == State::timewait && known->last_sent && std::holds_alternative<SidrReply>(*known->last_sent)) {
      outgoing_.push_back(Outgoing{from, emit_cm_mad(CmMad{known->transaction_id, *known->last_sent})});
      ++counters_.resent;
    } else {
      ++counters_.dropped;  // still with the consumer: the answer comes
    }
    return;
  }
  bool served = listening_.contains(request.service_id);
  if (!served && address_is_shared()) {
    ++counters_.dropped;  // another member of the address listens, or nobody does: it times out
    return;
  }
  if (!served || connections_.size() >= kMaxConnections) {
    SidrReply refusal;
    refusal.request_id = request.request_id;
    refusal.service_id = request.service_id;
    refusal.status = served ? SidrStatus::rejected : SidrStatus::service_id_not_supported;
    outgoing_.push_back(Outgoing{from, emit_cm_mad(CmMad{transaction_id, refusal})});
    ++counters_.sent;
    return;
  }
  Connection resolution;
  resolution.state = State::sidr_req_received;
  resolution.peer = from;
  resolution.local_comm_id = fresh_comm_id();
  resolution.remote_comm_id = request.request_id;
  resolution.transaction_id = transaction_id;
  connections_.emplace(resolution.local_comm_id, resolution);
  events_.push_back(CmEvent{CmEventKind::resolution_request, resolution.local_comm_id, from, request});
}

void ConnectionManager::on_resolution_reply(const Gid& from, const SidrReply& reply, TimeNs now) {
  Connection* resolution = find(reply.request_id);
  if (resolution == nullptr || resolution->state != State::sidr_req_sent || resolution->peer != from) {
    ++counters_.dropped;
    return;
  }
  end(*resolution, CmEventKind::resolved, reply, now);
}

TimeNs ConnectionManager::next_deadline() const {
  TimeNs next = kNever;
  for (const auto& [id, connection] : connections_) next = std::min(next, connection.deadline);
  for (const HeldRequest& held : held_) next = std::min(next, held.deadline);
  return next;
}

std::optional<Outgoing> ConnectionManager::poll_outgoing() {
  if (outgoing_.empty()) return std::nullopt;
  Outgoing next = outgoing_.front();
  outgoing_.pop_front();
  return next;
}

std::optional<CmEvent> ConnectionManager::poll_event() {
  if (events_.empty()) return std::nullopt;
  CmEvent next = std::move(events_.front());
  events_.pop_front();
  return next;
}

}  // namespace uroce::cm
