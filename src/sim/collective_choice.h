// Choosing a collective's algorithm as NCCL does when NCCL_ALGO is not
// set: predict each candidate's time and take the fastest. NCCL predicts
// from a latency and a bandwidth per algorithm, measured for each kind of
// hardware; uroce predicts from the candidate's own schedules (one per
// channel, collective/rank_layout.h) on the scenario's links, with no
// contention in the fabric: a rank's step ends a round trip (data out, the
// WRITE's ACK back) after it started if it sends, and once what is sent
// to it arrived (one way after its senders started), each plus the time
// the step's busiest port takes to send the step's bytes of every channel,
// a GPU's NVLink port and a NIC (the GPU's, or the server's shared one)
// counted apart; the collective ends with its last rank's last step; the slices
// of a channel follow each other through the steps, so the slowest step
// counts once per further slice. Candidates: ring and double binary tree
// for an all-reduce (the tree only between servers, where NCCL builds it;
// NCCL's CollNet and NVLS need switch offload that the simulator does not
// model); ring for all-gather and reduce-scatter;
// direct for all-to-all (every peer at once, as NCCL's grouped sends and
// receives). A ring's steps are all alike, so one stands for them; a tree
// of more than 2^22 step entries (ranks x steps x channels: tens of
// thousands of GPUs) is not predicted, and the ring runs.
#pragma once

#include <vector>

#include "collective/schedule.h"
#include "sim/scenario.h"
#include "sim/topology.h"

namespace uroce::sim {

struct PredictedTime {
  collective::Algorithm algorithm = collective::Algorithm::ring;
  double seconds = 0;
};

// Each candidate's predicted time, in the order above; a candidate that
// cannot run this collective (too few bytes for a tree) is left out.
std::vector<PredictedTime> predict_algorithms(const CollectiveSpec& spec, const Topology& topology);
// The fastest candidate's algorithm.
collective::Algorithm choose_algorithm(const CollectiveSpec& spec, const Topology& topology);

}  // namespace uroce::sim
