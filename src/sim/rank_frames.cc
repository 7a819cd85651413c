// Packing frames for other ranks and landing what they sent.
#include "sim/rank_frames.h"

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "sim/transmitter.h"

namespace uroce::sim {

namespace {

// A descriptor travels from its first field after the queue link on.
static_assert(std::is_standard_layout_v<Packet> && std::is_trivially_copyable_v<Packet>);
constexpr std::size_t kPacketStart = offsetof(Packet, arrives_at);
constexpr std::size_t kPacketBytes = sizeof(Packet) - kPacketStart;
constexpr std::size_t kFrameBytes = sizeof(std::uint32_t) + kPacketBytes;

void append(Bytes& out, std::uint32_t link, const Packet& packet) {
  std::size_t at = out.size();
  out.resize(at + kFrameBytes);
  std::memcpy(out.data() + at, &link, sizeof link);
  std::memcpy(out.data() + at + sizeof link, reinterpret_cast<const std::byte*>(&packet) + kPacketStart, kPacketBytes);
}

}  // namespace

RankFrames::RankFrames(RankGroup& ranks, Fabric& fabric, std::vector<SimWorld*> parts,
                       std::vector<std::uint32_t> part_rank)
    : ranks_(ranks), fabric_(fabric), parts_(std::move(parts)), part_rank_(std::move(part_rank)), outgoing_(ranks.size()) {}

void RankFrames::exchange(std::uint32_t parity) {
  std::uint32_t me = ranks_.rank();
  for (Bytes& bytes : outgoing_) bytes.clear();
  for (std::uint32_t from = 0; from < parts_.size(); ++from) {
    if (part_rank_[from] != me) continue;
    SimWorld& world = *parts_[from];
    for (std::uint32_t to = 0; to < parts_.size(); ++to) {
      if (part_rank_[to] == me) continue;
      Outbox& box = world.outboxes[parity][to];
      for (const CrossingFrame& frame : box.frames) {
        append(outgoing_[part_rank_[to]], frame.link->link_id(), *frame.packet);
        world.packets.release(frame.packet);
      }
      box.frames.clear();
      box.earliest = kSimNever;
    }
  }
  std::vector<Bytes> incoming = ranks_.exchange(outgoing_);
  for (const Bytes& bytes : incoming) {
    if (bytes.size() % kFrameBytes != 0) throw std::runtime_error("frames from another rank: a truncated frame");
    for (std::size_t at = 0; at < bytes.size(); at += kFrameBytes) {
      std::uint32_t link_id = 0;
      std::memcpy(&link_id, bytes.data() + at, sizeof link_id);
      if (link_id >= fabric_.link_count()) throw std::runtime_error("frames from another rank: no such link");
      Transmitter* link = fabric_.link(link_id);
      if (link == nullptr) throw std::runtime_error("frames from another rank: a link into no node this rank holds");
      std::uint32_t to = link->far_part();
      if (to >= parts_.size() || part_rank_[to] != me) {
        throw std::runtime_error("frames from another rank: a frame for a partition this rank does not run");
      }
      Packet* packet = parts_[to]->packets.acquire();
      std::memcpy(reinterpret_cast<std::byte*>(packet) + kPacketStart, bytes.data() + at + sizeof link_id,
                  kPacketBytes);
      packet->next = nullptr;
      parts_[to]->from_other_ranks.put(link, packet);
    }
  }
}

}  // namespace uroce::sim
