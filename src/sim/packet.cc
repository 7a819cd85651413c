// The packet pool: descriptors in chunks, recycled through a free list.
#include "sim/packet.h"

namespace uroce::sim {

Packet* PacketPool::acquire() {
  if (free_ == nullptr) {
    chunks_.push_back(std::make_unique<Packet[]>(kChunk));
    Packet* chunk = chunks_.back().get();
    for (std::size_t i = 0; i < kChunk; ++i) release(&chunk[i]);
  }
  Packet* packet = free_;
  free_ = packet->next;
  packet->next = nullptr;
  packet->trimmed = false;
  return packet;
}

}  // namespace uroce::sim
