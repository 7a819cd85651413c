// The engine's internals: object tables, the ready list that schedules QPs
// for transmission, and the requester/responder halves of the RC transport
// (requester.cc, responder.cc) that work on one QueuePair at a time.
#pragma once

#include <deque>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "transport/direct_placement.h"
#include "transport/queue_pair.h"
#include "uroce/engine.h"
#include "verbs/completion_queue.h"
#include "verbs/memory_region.h"
#include "wire/frame.h"

namespace uroce {

class EngineState {
 public:
  explicit EngineState(const EngineConfig& config);

  EngineConfig config;
  verbs::MemoryRegionTable memory_regions;
  std::unordered_set<std::uint32_t> pds;
  std::unordered_map<std::uint32_t, verbs::CompletionQueue> cqs;
  std::unordered_map<std::uint32_t, transport::QueuePair> qps;
  // qps.find for the packet path, remembering the last two QPs it found (an
  // engine's traffic is mostly one or two QPs, and at thousands of simulated
  // engines the table's buckets and nodes are cache misses). Null if none.
  transport::QueuePair* find_qp(std::uint32_t qpn) {
    for (const RecentQp& recent : recent_qps) {
      if (recent.qp != nullptr && recent.qpn == qpn) return recent.qp;
    }
    auto it = qps.find(qpn);
    if (it == qps.end()) return nullptr;
    recent_qps[1] = recent_qps[0];
    recent_qps[0] = RecentQp{qpn, &it->second};
    return &it->second;
  }
  bool erase_qp(std::uint32_t qpn) {
    for (RecentQp& recent : recent_qps) {
      if (recent.qpn == qpn) recent = RecentQp{};
    }
    return qps.erase(qpn) == 1;
  }
  struct RecentQp {
    std::uint32_t qpn = 0;
    transport::QueuePair* qp = nullptr;
  };
  RecentQp recent_qps[2];
  struct AddressHandle {
    std::uint32_t pd;
    AddressVector av;
  };
  std::unordered_map<std::uint32_t, AddressHandle> address_handles;
  std::uint32_t next_ah = 1;
  struct SharedReceiveQueue {
    std::uint32_t pd;
    std::uint32_t max_wr;
    std::uint32_t max_sge;
    std::deque<transport::RecvWqe> queue;
    std::uint32_t limit = 0;  // armed srq_limit_reached threshold, 0 when disarmed
    std::uint32_t xrcd = 0;   // an XRC SRQ's domain, 0 for an ordinary SRQ
    std::uint32_t cq = 0;     // an XRC SRQ's CQ, where its receives complete
  };
  std::unordered_map<std::uint32_t, SharedReceiveQueue> srqs;
  std::uint32_t next_srq = 1;
  // UD multicast: each group's attached QPs, in the order they attached.
  std::map<Gid, std::vector<std::uint32_t>> multicast_groups;
  // Hands a datagram to kMulticastQpn to each QP of its group (multicast.cc).
  void on_multicast(const wire::RoceDatagram& datagram, ByteSpan ip_header);
  std::unordered_map<std::uint32_t, std::uint32_t> xrcds;  // XRC domain -> how many SRQs and QPs use it
  std::uint32_t next_xrcd = 1;
  std::deque<AsyncEvent> events;
  std::deque<std::uint32_t> cq_events;  // CQs whose armed notification fired, oldest first
  void raise(AsyncEventType type, std::uint32_t element) { events.push_back(AsyncEvent{type, element}); }
  // Raises sq_drained once an SQD QP that asked for it has nothing in flight.
  void check_sq_drained(transport::QueuePair& qp);
  std::deque<std::uint32_t> ready;  // QPs that may have something to send
  // Timers: one live entry per QP with a deadline (QueuePair::timer_at), so
  // next_deadline and on_timer cost O(log QPs), not a scan of every QP.
  // Entries that no longer match their QP are skipped when they surface.
  struct TimerEntry {
    TimeNs at;
    std::uint32_t qpn;
    bool operator>(const TimerEntry& other) const { return at > other.at; }
  };
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<>> timers;
  std::vector<std::uint32_t> due_timers;  // on_timer's scratch list, kept to spare an allocation per call
  EngineCounters counters;
  std::uint32_t next_pd = 1;
  std::uint32_t next_cq = 1;
  std::uint64_t qpn_state;

  std::uint32_t fresh_qpn();
  // A QP as create_qp makes it, and as it is again after RESET.
  transport::QueuePair fresh_queue_pair(const transport::QpCreation& created) const {
    transport::QueuePair qp(created);
    if (created.congestion_controlled) qp.cc.dcqcn.emplace(config.congestion.dcqcn);
    return qp;
  }
  // The UDP source port of the datagram being processed: what a multipath
  // responder echoes in the ACK, NAK or CNP it causes.
  std::uint16_t arrival_port = 0;
  std::vector<std::uint32_t> lost_scratch;  // find_lost_paths' list, reused
  std::vector<std::uint8_t> replay_scratch;  // a held packet rebuilt to its length (no payload carried)
  // What a responder keeps of an out-of-order packet when it carries no
  // payload: BTH and every extension header fit.
  static constexpr std::size_t kHeldHeaderBytes = 64;
  std::uint16_t echoed_port(const transport::QueuePair& qp) const {
    return qp.multipath.entropy_values != 0 ? arrival_port : 0;
  }
  void mark_ready(transport::QueuePair& qp);
  // Re-arms the QP's timer entry after its deadlines may have moved earlier;
  // a deadline that moved later is found when the early entry fires.
  void schedule_timer(transport::QueuePair& qp);
  // Drops entries of QPs that are gone or re-armed; the earliest live time.
  TimeNs earliest_timer();
  void on_qp_timer(transport::QueuePair& qp, TimeNs now);
  // solicited: a receive completed by a packet with the BTH SE bit set.
  void complete(std::uint32_t cq, const WorkCompletion& completion, bool solicited = false);
  // Moves the QP to ERR and flushes every outstanding work request.
  void move_to_error(transport::QueuePair& qp);
  // Completes, in order, the WQEs at the front of the send queue that are done.
  void retire_completed(transport::QueuePair& qp);
  // A bind or local invalidate at the head of what the requester sends: done
  // at once; its status (mw_bind_err, loc_qp_op_err) when refused.
  WcStatus execute_local_operation(transport::QueuePair& qp, transport::SendWqe& wqe);
  std::uint32_t mtu(const transport::QueuePair& qp) const {
    return mtu_bytes(qp.type == QpType::ud ? config.port_mtu : qp.attr.path_mtu);
  }

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

  // Congestion control (congestion.cc): pacing of data packets by the QP's DCQCN
  // rate, CNPs for CE-marked arrivals.
  bool paced_out(transport::QueuePair& qp, TimeNs now);
  void account_data_packet(transport::QueuePair& qp, std::size_t length, TimeNs now);
  void repace(transport::QueuePair& qp);
  void on_congestion_experienced(transport::QueuePair& qp, const wire::RoceDatagram& datagram, TimeNs now);

  // Requester (requester.cc).
  std::size_t requester_transmit(transport::QueuePair& qp, MutableByteSpan out, TimeNs now);
  // Whether a SEND or WRITE of `length` bytes by reference would put more
  // than max_inflight_packets MTUs in flight (requester.cc).
  bool extent_window_full(const transport::QueuePair& qp, std::uint64_t length) const;
  void requester_on_response(transport::QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  void requester_on_timer(transport::QueuePair& qp, TimeNs now);
  // Loss probes (loss_probe.cc): the timer asks for one, the next transmit sends it.
  void on_probe_timer(transport::QueuePair& qp, TimeNs now);
  std::size_t send_loss_probe(transport::QueuePair& qp, MutableByteSpan out, TimeNs now);

  // Responder (responder.cc).
  // bytes: the packet from BTH to ICRC, kept when selective repeat holds it.
  void responder_on_request(transport::QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes);
  void responder_on_trimmed(transport::QueuePair& qp, std::uint32_t psn);
  void ud_on_datagram(transport::QueuePair& qp, const wire::RocePacket& packet, ByteSpan ip_header);
  // An xrc_recv QP takes the XRC SRQ a request names (its receives, CQ and
  // PD) for the message; false, with the request refused, when the SRQ is
  // not one of the QP's domain or changes in the middle of a message.
  bool adopt_xrc_srq(transport::QueuePair& qp, const wire::RocePacket& packet);
  // An extent packet's payload replaced by the bytes it names (extent_packets.cc);
  // false (and the packet dropped or NAKed) when it is not a lone SEND or
  // WRITE of an RC QP or its bytes cannot be read.
  bool take_extent_payload(transport::QueuePair& qp, wire::RocePacket& packet, ExtentSource& extents);
  // A READ response by reference whose bytes could not be read: its READ,
  // if one asked for that, ends with REM_OP_ERR (requester_responses.cc).
  void on_unreadable_read_response(transport::QueuePair& qp, std::uint32_t psn);
  // The rest of a READ asked for by reference, as one READ RESPONSE ONLY
  // naming the bytes, when its region is shared; 0 (send packets) otherwise.
  std::size_t read_response_by_extent(transport::QueuePair& qp, transport::ResponderOutput& next, MutableByteSpan out,
                                      TimeNs now);
  std::size_t responder_transmit(transport::QueuePair& qp, MutableByteSpan out, TimeNs now);

 private:
  // Requester helpers.
  void acknowledge_through(transport::QueuePair& qp, std::uint32_t psn, TimeNs now);
  void rewind_to(transport::QueuePair& qp, std::uint32_t psn);
  void rewind_once(transport::QueuePair& qp, std::uint32_t psn);

  void fail_request(transport::QueuePair& qp, std::uint32_t psn, WcStatus status);
  std::uint32_t unacked_psn(const transport::QueuePair& qp) const;
  // Sets when the requester stops waiting for an ACK, waiting from now.
  void arm_retransmit_timer(transport::QueuePair& qp, TimeNs now) const;
  bool window_full(const transport::QueuePair& qp, std::uint32_t psn) const;
  void on_read_response(transport::QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  void on_atomic_ack(transport::QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  void on_ack_or_nak(transport::QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  // Builds the index-th packet of a WQE (a READ: the request from that response on).
  // ack_request: set AckReq whatever the interval says (a loss probe).
  std::size_t send_request_packet(transport::QueuePair& qp, transport::SendWqe& wqe, std::uint32_t index,
                                  MutableByteSpan out, TimeNs now, bool ack_request = false);
  std::size_t resend_selected(transport::QueuePair& qp, MutableByteSpan out, TimeNs now);
  std::size_t resend_trimmed(transport::QueuePair& qp, MutableByteSpan out, TimeNs now);
  // Multipath (multipath.cc): the responder has these PSNs; which are lost.
  void paths_delivered(transport::QueuePair& qp, std::uint32_t from, std::uint32_t through, TimeNs now);
  void find_lost_paths(transport::QueuePair& qp, TimeNs now);
  void on_trimmed_nak(transport::QueuePair& qp, std::uint32_t psn);
  void on_selective_nak(transport::QueuePair& qp, std::uint32_t expected, std::uint32_t held, TimeNs now);

  // Responder helpers.
  void queue_ack(transport::QueuePair& qp, std::uint32_t psn);
  // msn: the AETH MSN field (default the QP's MSN; selective repeat puts the held PSN there).
  void queue_nak(transport::QueuePair& qp, std::uint32_t psn, wire::AckType type, std::uint8_t code,
                 std::optional<std::uint32_t> msn = std::nullopt);
  // send: a multipath SEND packet's placement header (direct_placement.h).
  void rc_on_request(transport::QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes,
                     const std::optional<transport::SendPlacement>& send);
  // placed: a packet whose payload was written on arrival (direct placement).
  void execute_request(transport::QueuePair& qp, const wire::RocePacket& packet, bool placed = false,
                       const std::optional<transport::SendPlacement>& send = std::nullopt);
  // Out-of-order arrivals and direct placement (out_of_order.cc).
  void hold_out_of_order(transport::QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes,
                         const std::optional<transport::SendPlacement>& send);
  void deliver_held(transport::QueuePair& qp, std::uint32_t from);
  std::uint8_t* early_target(const transport::QueuePair& qp, const wire::RocePacket& packet);
  transport::RecvWqe* early_receive(transport::QueuePair& qp, const wire::RocePacket& packet,
                                    const transport::SendPlacement& send) const;
  // The requester's half: whether a WRITE about to start may be placed ahead of a gap.
  bool may_place_early(const transport::QueuePair& qp, const transport::SendWqe& wqe) const;
  // Removes the queued response streams of one READ (its PSN range).
  void drop_queued_responses(transport::QueuePair& qp, std::uint32_t first_psn, std::uint32_t last_psn);
  // by_extent: the request asked for the bytes by reference (RegionBacking).
  void queue_read_response(transport::QueuePair& qp, std::uint32_t psn, const wire::RethRepr& reth,
                           std::uint32_t msn, bool by_extent);
  void queue_atomic_ack(transport::QueuePair& qp, std::uint32_t psn, std::uint64_t original, std::uint32_t msn);
  void fail_responder(transport::QueuePair& qp, std::uint32_t psn, wire::NakCode code);

  bool on_send(transport::QueuePair& qp, const wire::RocePacket& packet, bool placed = false,
               const std::optional<transport::SendPlacement>& send = std::nullopt);
  bool on_write(transport::QueuePair& qp, const wire::RocePacket& packet, bool placed = false);
  bool on_read_request(transport::QueuePair& qp, const wire::RocePacket& packet);
  bool on_atomic(transport::QueuePair& qp, const wire::RocePacket& packet);
  void on_duplicate(transport::QueuePair& qp, const wire::RocePacket& packet);
  void uc_on_request(transport::QueuePair& qp, const wire::RocePacket& packet);
  void abandon_message(transport::QueuePair& qp);
  bool payload_length_ok(const transport::QueuePair& qp, const wire::RocePacket& packet) const;
  void complete_receive(transport::QueuePair& qp, const wire::RocePacket& packet, std::uint64_t byte_len,
                        WcOpcode opcode);
  // The receive WQE for the message arriving now, from the QP's queue or its
  // SRQ, held in qp.resp.current_recv until the message completes; nullptr if none.
  transport::RecvWqe* take_receive(transport::QueuePair& qp);
  // Segments resolved when their WR was posted, before a registration
  // changed or went (ibv_rereg_mr, ibv_dereg_mr), have their keys checked
  // again when the engine writes to them, as a NIC checks a WQE's keys when
  // it uses them: false if a key no longer covers its bytes in pd. Checked
  // only when registrations changed since checked_at, which it updates.
  bool still_registered(const std::vector<transport::Segment>& segments, std::uint32_t pd,
                        std::uint64_t& checked_at) const;
  // A receive whose keys no longer hold fails with a local protection error.
  void recheck_receive(transport::RecvWqe& wqe) const;
  void fail_receive(transport::QueuePair& qp, WcStatus status);
};

}  // namespace uroce
