// Packet descriptors: what a simulated frame carries through links and
// switches. A RoCE packet keeps only its header bytes (the engine runs with
// carry_payload = false) and its length; a PFC frame names its priority.
// Descriptors come from a pool and link into queues intrusively, so the hot
// path never allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/sim_time.h"

namespace uroce::sim {

// Ethernet header, FCS, preamble and inter-frame gap around an IP datagram.
inline constexpr std::uint32_t kEthernetOverheadBytes = 14 + 4 + 8 + 12;
// The shortest Ethernet frame with its preamble and gap.
inline constexpr std::uint32_t kMinimumFrameWireBytes = 64 + 8 + 12;

// How the fabric's links carry a RoCE datagram. Ethernet, as RoCEv2 runs:
// the overhead above, frames padded to the 64-byte minimum. Point-to-point:
// a 2-byte PPP header and nothing else, as ns-3's point-to-point links carry
// HPCC's simulator's packets; only for comparing with such simulators (a
// 1,024-byte WRITE payload takes 1070 bytes of wire time instead of 1106, an
// ACK 50 instead of 86).
enum class Framing : std::uint8_t { ethernet, point_to_point };

inline std::uint32_t frame_wire_bytes(std::uint32_t datagram_length, Framing framing) {
  if (framing == Framing::point_to_point) return datagram_length + 2;
  std::uint32_t framed = datagram_length + kEthernetOverheadBytes;
  return framed > kMinimumFrameWireBytes ? framed : kMinimumFrameWireBytes;
}
// A trimmed packet on the wire: its headers (IP, UDP, BTH and extensions,
// at most 64 bytes here) in a frame.
inline constexpr std::uint32_t kTrimmedWireBytes = 64 + kEthernetOverheadBytes;
// A PFC frame: the 64-byte minimum frame plus preamble and gap.
inline constexpr std::uint32_t kPauseFrameWireBytes = 64 + 8 + 12;
// The longest IPv4 + UDP + BTH + extension headers the engine writes.
inline constexpr std::size_t kHeaderBytes = 96;
inline constexpr int kPriorities = 8;

enum class PacketKind : std::uint8_t { roce, pause };
enum class RoceClass : std::uint8_t { data, ack, cnp };

struct Packet {
  Packet* next = nullptr;          // intrusive queue link
  SimTime arrives_at = 0;          // on a wire: when its last bit reaches the peer
  SimTime next_arrives_at = 0;     // on a wire: when the frame sent after it arrives (read instead of that frame)
  std::uint32_t wire_bytes = 0;    // time on the wire, overheads included
  std::uint32_t datagram_length = 0;
  std::uint32_t flow_hash = 0;     // ECMP entropy: the 5-tuple, hashed
  std::uint32_t route_cursor = 0;  // source routing: the path choices not yet taken (the EV, as digits)
  std::uint32_t src_host = 0;
  std::uint32_t dst_host = 0;
  std::uint16_t ingress_port = 0;  // at the switch holding it
  std::uint8_t priority = 0;
  PacketKind kind = PacketKind::roce;
  RoceClass roce_class = RoceClass::data;
  bool pause_on = false;           // PFC: XOFF (true) or XON for `priority`
  bool trimmed = false;            // a switch cut the payload off: only the headers travel on
  std::uint8_t header[kHeaderBytes];
};

class PacketPool {
 public:
  Packet* acquire();
  void release(Packet* packet) {
    packet->next = free_;
    free_ = packet;
  }
  std::size_t allocated() const { return chunks_.size() * kChunk; }

 private:
  static constexpr std::size_t kChunk = 4096;
  std::vector<std::unique_ptr<Packet[]>> chunks_;
  Packet* free_ = nullptr;
};

// A FIFO of packets linked through Packet::next, with its byte count.
class PacketQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint32_t size() const { return count_; }
  Packet* front() const { return head_; }
  Packet* back() const { return tail_; }
  void push(Packet* packet) {
    packet->next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = packet;
    } else {
      head_ = packet;
    }
    tail_ = packet;
    bytes_ += packet->wire_bytes;
    ++count_;
  }
  Packet* pop() {
    Packet* packet = head_;
    head_ = packet->next;
    if (head_ == nullptr) tail_ = nullptr;
    bytes_ -= packet->wire_bytes;
    --count_;
    return packet;
  }

 private:
  Packet* head_ = nullptr;
  Packet* tail_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::uint32_t count_ = 0;
};

}  // namespace uroce::sim
