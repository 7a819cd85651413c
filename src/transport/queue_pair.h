// The state of one queue pair inside the engine: its attributes, the send
// queue with the requester's progress through it, and the receive queue with
// the responder's progress and the records it keeps for duplicate READ and
// atomic requests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <map>
#include <utility>
#include <vector>

#include "transport/cc/dcqcn.h"
#include "transport/multipath.h"
#include "transport/selective_repeat.h"

#include "uroce/engine.h"
#include "uroce/verbs_types.h"

namespace uroce::transport {

// A resolved scatter/gather element: registered bytes the engine may touch.
struct Segment {
  std::uint8_t* data = nullptr;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;  // the key it was resolved under, checked again if registrations change
};

// Walks the segments from a byte offset, calling copy(segment bytes, n) for
// each piece of the length bytes.
template <typename Copy>
void for_each_piece(const std::vector<Segment>& segments, std::uint64_t offset, std::uint64_t length, Copy copy) {
  for (const Segment& segment : segments) {
    if (length == 0) return;
    if (offset >= segment.length) {
      offset -= segment.length;
      continue;
    }
    std::uint64_t n = std::min<std::uint64_t>(segment.length - offset, length);
    copy(segment.data + offset, n);
    length -= n;
    offset = 0;
  }
}

// Copies between a segment list and a contiguous buffer, from a byte offset.
void gather(const std::vector<Segment>& segments, std::uint64_t offset, std::uint8_t* out, std::uint64_t length);
void scatter(const std::vector<Segment>& segments, std::uint64_t offset, const std::uint8_t* in, std::uint64_t length);

struct SendWqe {
  std::uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::send;
  bool signaled = false;
  bool solicited = false;
  bool fence = false;
  std::uint32_t imm_data = 0;
  std::uint32_t invalidate_rkey = 0;
  MwBind bind;  // bind_mw
  std::uint32_t xrc_srqn = 0;  // xrc_send: the remote XRC SRQ
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
  std::uint64_t compare_add = 0;
  std::uint64_t swap = 0;
  std::vector<Segment> segments;      // where the data comes from (or READ/atomic results go)
  std::vector<std::uint8_t> inline_data;  // INLINE sends own a copy
  std::uint32_t length = 0;           // message length in bytes
  AddressVector ud_destination;       // UD: where this datagram goes
  std::uint32_t ud_remote_qpn = 0;
  std::uint32_t ud_qkey = 0;
  WcStatus local_error = WcStatus::success;  // a bad lkey found at post time
  std::uint64_t registrations = 0;  // READ/atomic: MemoryRegionTable::changes() when segments were checked

  // Requester progress, set when the first packet goes out.
  bool started = false;
  std::uint32_t first_psn = 0;
  std::uint32_t packet_count = 0;  // PSNs this WQE uses (a READ reserves one per response packet)
  bool done = false;               // acknowledged / all responses received
  WcStatus status = WcStatus::success;
  std::uint64_t read_received = 0;  // READ: response bytes placed so far
  bool place_early = false;         // multipath: the responder may place its packets ahead of a gap
  std::uint32_t receive_message = 0;  // SEND / WRITE with immediate: its number among those taking a receive WQE
  std::optional<PayloadExtent> extent;  // its bytes as a local peer can read them (RegionBacking)
  bool by_extent = false;               // sent as one packet naming them

  bool takes_receive() const {
    return opcode == WrOpcode::send || opcode == WrOpcode::send_with_imm || opcode == WrOpcode::send_with_inv ||
           opcode == WrOpcode::rdma_write_with_imm;
  }
  // Done by the requester itself, in queue order, with no packet.
  bool is_local_operation() const { return opcode == WrOpcode::bind_mw || opcode == WrOpcode::local_inv; }
  bool is_read_or_atomic() const {
    return opcode == WrOpcode::rdma_read || opcode == WrOpcode::atomic_cmp_and_swp ||
           opcode == WrOpcode::atomic_fetch_and_add;
  }
  std::uint32_t last_psn() const;
};

struct RecvWqe {
  std::uint64_t wr_id = 0;
  std::vector<Segment> segments;
  std::uint64_t capacity = 0;
  WcStatus local_error = WcStatus::success;
  std::uint32_t pd = 0;              // whose keys the segments must be (the QP's or the SRQ's)
  std::uint64_t registrations = 0;   // MemoryRegionTable::changes() when the segments were checked
};

// What the responder owes the requester, in the order it must go out.
struct ResponderOutput {
  enum class Kind { ack, atomic_ack, read_response, cnp } kind = Kind::ack;
  std::uint32_t psn = 0;       // ACK/NAK/atomic: the PSN acknowledged; READ: the next response PSN
  std::uint8_t syndrome = 0;
  std::uint32_t msn = 0;
  std::uint64_t atomic_original = 0;
  // READ response stream: bytes [offset, length) from va under rkey; the key
  // is resolved again for every packet, so a region deregistered meanwhile
  // is never read.
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint64_t length = 0;
  std::uint64_t offset = 0;
  bool by_extent = false;  // the requester reads a local region itself: one packet naming the bytes, where they are shared
  // CNP: where it goes (the peer for RC/UC, the datagram's source for UD).
  AddressVector destination;
  std::uint32_t dest_qp = 0;
  // Multipath: the source port of the request that caused it (its EV,
  // echoed); 0: the QP's own port.
  std::uint16_t source_port = 0;
};

// A READ or atomic the responder executed, kept to answer duplicates.
struct ReadAtomicRecord {
  bool valid = false;
  bool is_atomic = false;
  std::uint32_t first_psn = 0;
  std::uint32_t packet_count = 1;
  std::uint64_t va = 0;  // READ
  std::uint32_t rkey = 0;
  std::uint64_t length = 0;
  std::uint64_t atomic_original = 0;  // atomic
  std::uint32_t msn = 0;
};

// What create_qp fixed, kept when the QP goes back to RESET. An xrc_recv QP
// takes pd, recv_cq and srq from the XRC SRQ each message names.
struct QpCreation {
  std::uint32_t qpn = 0;
  QpType type = QpType::rc;
  std::uint32_t xrcd = 0;  // xrc_recv: its XRC domain
  // Acknowledged, retransmitted, connected: RC and both halves of XRC.
  bool reliable() const { return type == QpType::rc || type == QpType::xrc_send || type == QpType::xrc_recv; }
  LossRecovery recovery = LossRecovery::go_back_n;
  TimeNs tail_timeout_ns = 0;  // QpInitAttr::tail_timeout_ns
  std::uint32_t tail_timeout_packets = 3;
  TimeNs loss_probe_ns = 0;   // QpInitAttr::loss_probe_ns
  MultipathConfig multipath;  // QpInitAttr::multipath
  std::uint32_t pd = 0;
  std::uint32_t send_cq = 0;
  std::uint32_t recv_cq = 0;
  std::uint32_t srq = 0;  // receives come from this SRQ instead of the QP's receive queue
  bool sq_sig_all = false;
  QpCap cap;
  std::uint16_t udp_source_port = 0;
  bool block_self_multicast = false;  // QpInitAttr::block_self_multicast
  bool congestion_controlled = false;  // a DCQCN reaction point paces it
};

// The requester: the send queue and how far its packets have gone out.
struct RequesterState {
  std::deque<SendWqe> send_queue;  // completed WQEs are popped from the front
  std::size_t send_cursor = 0;     // index of the WQE being transmitted
  std::uint32_t send_cursor_packet = 0;  // packet index within it
  std::uint32_t next_psn = 0;      // PSN of the next new packet
  std::uint32_t highest_sent_psn = 0;  // the last PSN a packet went out for (or a READ reserved)
  bool any_sent = false;
  std::uint32_t outstanding_read_atomic = 0;
  std::uint32_t receive_messages_started = 0;  // SENDs and WRITEs with immediate started (direct placement numbers them)
  std::uint32_t packets_since_ack_request = 0;
  // Selective repeat: PSNs the responder reported trimmed, to resend first (each once per report).
  std::vector<std::uint32_t> trimmed_resends;
  std::optional<EntropyPaths> paths;  // multipath: the requester's EVs (from RTS)
  bool peer_local = false;            // the peer's last packet came through shared memory (RegionBacking)
  // Loss probes (loss_probe.cc).
  TimeNs probe_deadline = kNever;       // when the next loss probe goes, if nothing is acknowledged first
  TimeNs probe_interval = 0;            // doubles with each probe, from loss_probe_ns
  bool probe_pending = false;           // the next transmit sends the probe
  std::uint32_t probes_unanswered = 0;  // probes since the timer was last armed by an ACK or a send
};

// The completer: what the responder has acknowledged, the retry budgets and
// the timers that end a wait for an answer.
struct CompleterState {
  std::uint32_t acked_psn = 0;  // the responder has everything up to here (may be mid-WQE)
  std::uint8_t retries_left = 0;
  std::uint8_t rnr_retries_left = 0;
  TimeNs retransmit_deadline = kNever;
  bool tail_deadline = false;     // retransmit_deadline was set by the tail timeout
  TimeNs rnr_resume_at = kNever;  // while waiting out an RNR NAK
  // Evidence that a READ response or atomic ACK was lost (a later response,
  // or an ACK past it) rewinds the requester once per missing PSN; the timer
  // covers a lost retry. Rewinding on every such packet would feed a storm:
  // each round of retransmissions brings more duplicate ACKs.
  bool implicit_rewind_done = false;
  std::uint32_t implicit_rewind_psn = 0;
  std::optional<SackScoreboard> sacks;  // selective repeat: what the responder holds
};

// The responder: the receive queue, the message being received, what it owes
// the requester, and the records it keeps for duplicate READs and atomics.
struct ResponderState {
  std::deque<RecvWqe> recv_queue;
  std::optional<RecvWqe> current_recv;   // taken for the message being received
  std::uint32_t expected_psn = 0;
  std::uint32_t msn = 0;
  bool sequence_nak_sent = false;
  bool receiving_send = false;  // a multi-packet SEND is in progress
  std::uint64_t send_offset = 0;
  bool receiving_write = false;  // a multi-packet WRITE is in progress
  std::uint64_t write_va = 0;    // where the next WRITE packet lands
  std::uint32_t write_rkey = 0;  // resolved again for every packet
  std::uint64_t write_remaining = 0;
  std::uint64_t write_length = 0;  // the whole message, for WRITE_WITH_IMM's completion
  std::deque<ResponderOutput> outputs;
  std::vector<ReadAtomicRecord> records;  // ring of max_dest_rd_atomic entries
  std::size_t next_record = 0;
  std::optional<ReorderBuffer> reorder;  // selective repeat: packets after a gap
  std::uint32_t receives_taken = 0;      // receive WQEs taken from the QP's own queue (direct placement counts them)
};

// Congestion control (congestion.cc): the reaction point's rate and pacing,
// and the notification point's CNP spacing.
struct CongestionState {
  std::optional<Dcqcn> dcqcn;    // reaction point, when enabled
  TimeNs next_send_time = 0;     // pacing: the next data packet may leave then
  TimeNs paced_slot_start = 0;   // ... which is this plus paced_length at the current rate
  std::uint32_t paced_length = 0;
  bool pacing_blocked = false;   // data is waiting for next_send_time
  TimeNs cnp_allowed_at = 0;     // notification point: next CNP not before
  std::map<std::pair<Gid, std::uint32_t>, TimeNs> ud_cnp_allowed_at;  // UD: the same, per source GID and QP
};

// Asynchronous events raised once.
struct QpEventsRaised {
  bool sq_drain_notify = false;            // raise sq_drained when the SQD drain completes
  bool communication_established = false;  // comm_est raised (first packet in RTR)
  bool last_wqe_reported = false;          // qp_last_wqe_reached raised (SRQ QPs in ERR)
};

// A queue pair: what it was created with, its state and attributes, and one
// part for each role (rxe's qp->req, qp->comp and qp->resp).
struct QueuePair : QpCreation {
  QueuePair() = default;
  explicit QueuePair(const QpCreation& created) : QpCreation(created) {}

  QpState state = QpState::reset;
  QpAttr attr;  // the attributes modify_qp set
  RequesterState req;
  CompleterState comp;
  ResponderState resp;
  CongestionState cc;
  QpEventsRaised events;

  // The states in which each role works. A QP receives from RTR on; the
  // send queue drains in SQD, and SQE (an unreliable send failed) stops only
  // the requester.
  bool requester_active() const { return state == QpState::rts || state == QpState::sqd; }
  bool completer_active() const { return requester_active() || state == QpState::sqe; }
  bool responder_active() const { return state == QpState::rtr || completer_active(); }

  // Scheduling.
  bool in_ready_list = false;
  TimeNs timer_at = kNever;  // when this QP's entry in the engine's timer heap fires

  // The earliest time one of the QP's timers needs attention.
  TimeNs next_deadline() const {
    TimeNs deadline = std::min({comp.retransmit_deadline, comp.rnr_resume_at, req.probe_deadline});
    if (cc.pacing_blocked) deadline = std::min(deadline, cc.next_send_time);
    if (cc.dcqcn) deadline = std::min(deadline, cc.dcqcn->next_deadline());
    if (req.paths) deadline = std::min(deadline, req.paths->loss_check_at());
    return deadline;
  }
};

// Local ACK timeout in nanoseconds for the exponent: 4.096 us << timeout.
inline TimeNs ack_timeout_ns(std::uint8_t timeout) {
  return timeout == 0 ? kNever : TimeNs{4096} << std::min<std::uint8_t>(timeout, 31);
}

// RNR NAK timer code -> nanoseconds (the IBTA specification's table).
TimeNs rnr_timer_ns(std::uint8_t code);

}  // namespace uroce::transport
