// The responder (rxe's resp): checks each request's PSN, executes SENDs,
// WRITEs, READs and atomics after checking keys, permissions and bounds,
// answers duplicates from its records, and queues the ACKs, NAKs, READ
// responses and atomic ACKs it owes, which transmit sends in order.
#pragma once

#include <optional>
#include <vector>

#include "transport/direct_placement.h"
#include "transport/role_context.h"

namespace uroce::transport {

class Responder {
 public:
  explicit Responder(RoleContext& context) : context_(context) {}

  // A request to an RC, UC or XRC QP. bytes: the packet from BTH to ICRC,
  // kept when selective repeat holds it.
  void on_request(QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes);
  // A datagram to a UD QP; ip_header: its IP header, for the GRH a receive gets.
  void on_datagram(QueuePair& qp, const wire::RocePacket& packet, ByteSpan ip_header);
  // A switch trimmed the payload of the request with this PSN (trimming.cc).
  void on_trimmed(QueuePair& qp, std::uint32_t psn);
  // An xrc_recv QP takes the XRC SRQ a request names (its receives, CQ and
  // PD) for the message; false, with the request refused, when the SRQ is
  // not one of the QP's domain or changes in the middle of a message (xrc.cc).
  bool adopt_xrc_srq(QueuePair& qp, const wire::RocePacket& packet);
  // Refuses the request with this PSN with a NAK, and the QP goes to ERR.
  void fail(QueuePair& qp, std::uint32_t psn, wire::NakCode code);
  // The next ACK, NAK, READ response, atomic ACK or CNP it owes; 0 if none.
  std::size_t transmit(QueuePair& qp, MutableByteSpan out, TimeNs now);

 private:
  void queue_ack(QueuePair& qp, std::uint32_t psn);
  // msn: the AETH MSN field (default the QP's MSN; selective repeat puts the held PSN there).
  void queue_nak(QueuePair& qp, std::uint32_t psn, wire::AckType type, std::uint8_t code,
                 std::optional<std::uint32_t> msn = std::nullopt);
  // by_extent: the request asked for the bytes by reference (RegionBacking).
  void queue_read_response(QueuePair& qp, std::uint32_t psn, const wire::RethRepr& reth, std::uint32_t msn,
                           bool by_extent);
  void queue_atomic_ack(QueuePair& qp, std::uint32_t psn, std::uint64_t original, std::uint32_t msn);
  // Removes the queued response streams of one READ (its PSN range).
  void drop_queued_responses(QueuePair& qp, std::uint32_t first_psn, std::uint32_t last_psn);
  // The rest of a READ asked for by reference, as one READ RESPONSE ONLY
  // naming the bytes, when its region is shared; 0 (send packets) otherwise
  // (extent_packets.cc).
  std::size_t read_response_by_extent(QueuePair& qp, ResponderOutput& next, MutableByteSpan out, TimeNs now);

  // send: a multipath SEND packet's placement header (direct_placement.h).
  void rc_on_request(QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes,
                     const std::optional<SendPlacement>& send);
  void uc_on_request(QueuePair& qp, const wire::RocePacket& packet);
  // placed: a packet whose payload was written on arrival (direct placement).
  void execute_request(QueuePair& qp, const wire::RocePacket& packet, bool placed = false,
                       const std::optional<SendPlacement>& send = std::nullopt);
  bool on_send(QueuePair& qp, const wire::RocePacket& packet, bool placed = false,
               const std::optional<SendPlacement>& send = std::nullopt);
  bool on_write(QueuePair& qp, const wire::RocePacket& packet, bool placed = false);
  bool on_read_request(QueuePair& qp, const wire::RocePacket& packet);
  bool on_atomic(QueuePair& qp, const wire::RocePacket& packet);
  void on_duplicate(QueuePair& qp, const wire::RocePacket& packet);
  void abandon_message(QueuePair& qp);
  bool payload_length_ok(const QueuePair& qp, const wire::RocePacket& packet) const;
  void complete_receive(QueuePair& qp, const wire::RocePacket& packet, std::uint64_t byte_len, WcOpcode opcode);
  // The receive WQE for the message arriving now, from the QP's queue or its
  // SRQ, held in qp.resp.current_recv until the message completes; nullptr if none.
  RecvWqe* take_receive(QueuePair& qp);
  // A receive whose keys no longer hold fails with a local protection error.
  void recheck_receive(RecvWqe& wqe) const;
  void fail_receive(QueuePair& qp, WcStatus status);

  // Out-of-order arrivals and direct placement (out_of_order.cc).
  void hold_out_of_order(QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes,
                         const std::optional<SendPlacement>& send);
  void deliver_held(QueuePair& qp, std::uint32_t from);
  std::uint8_t* early_target(const QueuePair& qp, const wire::RocePacket& packet);
  RecvWqe* early_receive(QueuePair& qp, const wire::RocePacket& packet, const SendPlacement& send) const;

  // What a responder keeps of an out-of-order packet when it carries no
  // payload: BTH and every extension header fit.
  static constexpr std::size_t kHeldHeaderBytes = 64;

  RoleContext& context_;
  std::vector<std::uint8_t> replay_scratch_;  // a held packet rebuilt to its length (no payload carried)
};

}  // namespace uroce::transport
