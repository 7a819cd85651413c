// Connected RC QP pairs between simulated hosts, set up directly on both
// engines (the simulator needs no out-of-band exchange), where the two
// hosts may run on different ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "sim/fabric.h"
#include "sim/rank_group.h"
#include "sim/scenario.h"

namespace uroce::sim {

// Pairs are added, then connected at once. add() creates the QP of each end
// this rank holds, in the order one process creates them, so every engine
// draws the QPNs it draws there; connect() gives each end the other's QPN
// (one exchange over the ranks) and moves the QPs this rank holds to RTS.
class QpConnections {
 public:
  QpConnections(Fabric& fabric, const TransportSpec& transport) : fabric_(fabric), transport_(transport) {}

  // Returns the pair's index. With arrival_wr_id, each end also gets
  // send_queue_depth receives without buffers of that wr_id, which WRITEs
  // with immediate consume (a sender has at most a send queue of WRITEs in
  // flight, so each end has as many waiting; the workload posts one again
  // for each it takes), and receive_queue_depth is then send_queue_depth.
  // data_dscp, when set, is this pair's instead of the transport's. Throws
  // std::runtime_error if an engine refuses (its limits are exceeded).
  std::uint32_t add(std::uint32_t host_a, std::uint32_t host_b, std::uint32_t send_queue_depth,
                    std::uint32_t receive_queue_depth, std::optional<std::uint64_t> arrival_wr_id = std::nullopt,
                    std::optional<std::uint8_t> data_dscp = std::nullopt);
  // Collective: every rank adds the same pairs, then connects.
  void connect(RankGroup& ranks);
  // After connect: (QPN on host a, QPN on host b).
  std::pair<std::uint32_t, std::uint32_t> qpns(std::uint32_t pair) const {
    return {static_cast<std::uint32_t>(qpns_[2 * pair]), static_cast<std::uint32_t>(qpns_[2 * pair + 1])};
  }

 private:
  struct PendingPair {
    std::uint32_t hosts[2];
    std::uint32_t arrival_receives;
    std::uint64_t arrival_wr_id;
    std::uint8_t data_dscp;
  };

  Fabric& fabric_;
  TransportSpec transport_;
  std::vector<PendingPair> pairs_;
  std::vector<std::uint64_t> qpns_;  // per pair: a's, b's (0 where another rank holds the host, until connect)
};

// Posts one receive without buffers, with this wr_id, that a WRITE with
// immediate consumes (the workloads learn from it that a WRITE arrived).
// Throws std::runtime_error if the engine refuses (the queue is full).
void post_arrival_receive(HostNode& host, std::uint32_t qpn, std::uint64_t wr_id);

}  // namespace uroce::sim
