// What the protocol roles (requester.h, completer.h, responder.h) may use of
// the engine around them: its configuration and counters, the registered
// memory, completions and events, the ready list, the SRQs, building a
// packet and pacing it. A role works on one QueuePair at a time and never
// sees the engine's other tables (QPs, PDs, address handles, timers).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>

#include "transport/peer_payload.h"
#include "transport/queue_pair.h"
#include "uroce/engine.h"
#include "verbs/completion_queue.h"
#include "verbs/memory_region.h"
#include "wire/frame.h"

namespace uroce::transport {

struct SharedReceiveQueue {
  std::uint32_t pd;
  std::uint32_t max_wr;
  std::uint32_t max_sge;
  std::deque<RecvWqe> queue;
  std::uint32_t limit = 0;  // armed srq_limit_reached threshold, 0 when disarmed
  std::uint32_t xrcd = 0;   // an XRC SRQ's domain, 0 for an ordinary SRQ
  std::uint32_t cq = 0;     // an XRC SRQ's CQ, where its receives complete
};

class RoleContext {
 public:
  explicit RoleContext(const EngineConfig& config);

  EngineConfig config;
  EngineCounters counters;
  verbs::MemoryRegionTable memory_regions;
  std::unordered_map<std::uint32_t, verbs::CompletionQueue> cqs;
  std::unordered_map<std::uint32_t, SharedReceiveQueue> srqs;
  std::deque<AsyncEvent> events;
  std::deque<std::uint32_t> cq_events;  // CQs whose armed notification fired, oldest first
  std::deque<std::uint32_t> ready;      // QPs that may have something to send

  void raise(AsyncEventType type, std::uint32_t element) { events.push_back(AsyncEvent{type, element}); }
  // solicited: a receive completed by a packet with the BTH SE bit set.
  void complete(std::uint32_t cq, const WorkCompletion& completion, bool solicited = false);
  // Completes, in order, the WQEs at the front of the send queue that are done.
  void retire_completed(QueuePair& qp);
  // Ends the request at psn (or the first not started) with status, and the QP with it.
  void fail_request(QueuePair& qp, std::uint32_t psn, WcStatus status);
  // Moves the QP to ERR and flushes every outstanding work request.
  void move_to_error(QueuePair& qp);
  // Raises sq_drained once an SQD QP that asked for it has nothing in flight.
  void check_sq_drained(QueuePair& qp);
  void mark_ready(QueuePair& qp);
  // Segments resolved when their WR was posted, before a registration
  // changed or went (ibv_rereg_mr, ibv_dereg_mr), have their keys checked
  // again when the engine writes to them, as a NIC checks a WQE's keys when
  // it uses them: false if a key no longer covers its bytes in pd. Checked
  // only when registrations changed since checked_at, which it updates.
  bool still_registered(const std::vector<Segment>& segments, std::uint32_t pd, std::uint64_t& checked_at) const;

  std::uint32_t mtu(const QueuePair& qp) const {
    return mtu_bytes(qp.type == QpType::ud ? config.port_mtu : qp.attr.path_mtu);
  }
  // The UDP source port of the datagram being processed: what a multipath
  // responder echoes in the ACK, NAK or CNP it causes.
  std::uint16_t arrival_port = 0;
  std::uint16_t echoed_port(const QueuePair& qp) const { return qp.multipath.entropy_values != 0 ? arrival_port : 0; }

  // Writes IP/UDP/BTH/extension headers for a packet to this destination;
  // the caller fills payload_length bytes at layout.payload_offset and seals.
  // flow_label: on IPv6, this instead of the destination's when not 0 (a multipath EV's).
  // Notes what it built in built (poll_transmit's description).
  wire::WireResult<wire::DatagramLayout> begin_packet_to(const AddressVector& destination, std::uint32_t dest_qp,
                                                         std::uint16_t source_port,
                                                         const wire::TransportHeaders& headers,
                                                         std::size_t payload_length, MutableByteSpan out,
                                                         std::uint32_t flow_label = 0);
  std::size_t finish_packet(MutableByteSpan out, const wire::DatagramLayout& layout);
  Transmit built;  // the description of the datagram begin_packet_to last laid out
  // The packet being handled names bytes in a local peer's memory (peer_payload.h).
  std::optional<PeerPayload> peer_payload;

  // Congestion control (congestion.cc): pacing of data packets by the QP's DCQCN
  // rate, CNPs for CE-marked arrivals.
  bool paced_out(QueuePair& qp, TimeNs now);
  void account_data_packet(QueuePair& qp, std::size_t length, TimeNs now);
  void repace(QueuePair& qp);
  void on_congestion_experienced(QueuePair& qp, const wire::RoceDatagram& datagram, TimeNs now);
};

}  // namespace uroce::transport
