// Frames between ranks: at a window's end, what this rank's partitions sent
// to partitions another rank runs is packed (the link's number and the
// descriptor, header bytes included), sent with one exchange, and put into
// the inboxes of the partitions it was sent to; they land as frames from a
// partition of the same rank do, at the start of the next window.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/fabric.h"
#include "sim/rank_group.h"

namespace uroce::sim {

class RankFrames {
 public:
  // parts: every partition's world, as the fabric was built on; part_rank:
  // the rank that runs each.
  RankFrames(RankGroup& ranks, Fabric& fabric, std::vector<SimWorld*> parts, std::vector<std::uint32_t> part_rank);

  // Collective. Takes the frames in this rank's outboxes[parity] for other
  // ranks' partitions (their descriptors go back to the sender's pool) and
  // puts those other ranks sent into from_other_ranks of this rank's
  // partitions. Throws std::runtime_error on a frame that names no link.
  void exchange(std::uint32_t parity);

 private:
  RankGroup& ranks_;
  Fabric& fabric_;
  std::vector<SimWorld*> parts_;
  std::vector<std::uint32_t> part_rank_;
  std::vector<Bytes> outgoing_;  // by rank, reused
};

}  // namespace uroce::sim
