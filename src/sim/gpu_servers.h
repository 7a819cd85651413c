// GPU servers on a fabric. A scenario's fabric is a network of NICs; with
// [servers] each NIC belongs to a server of `gpus` GPUs, and the GPUs
// become the hosts (the ranks): host s * gpus + g is GPU g of server s.
// A server's GPUs are joined by an NVLink-class switch (an NVSwitch: one
// link per GPU, the scenario's NVLink bandwidth and latency). Either every
// GPU has its own NIC, rail-optimized (the fabric's NICs are taken rail by
// rail: NIC r * servers + s is GPU r of server s, so that a leaf holds whole
// rails), and a GPU sends to its server's GPUs over NVLink and to other
// servers from its NIC; or the server's GPUs share one NIC, which hangs off
// the NVLink switch.
//
// The GPUs run the same transport engine as any host: a transfer over
// NVLink is RDMA WRITEs over a lossless (PFC) link that DCQCN does not pace
// (NVLink has credit-based flow control of its own); the link's bandwidth
// and latency are what the model keeps of it.
#pragma once

#include <cstdint>

#include "sim/topology.h"

namespace uroce::sim {

enum class ServerNics : std::uint8_t {
  rail,    // a NIC per GPU, rail-optimized
  shared,  // one NIC per server
};

struct GpuServerSpec {
  std::uint32_t gpus = 8;
  // NVLink 4 (H100): 18 links of 25 GB/s each way, 450 GB/s = 3600 Gb/s.
  LinkSpec nvlink{3'600'000'000'000ull, 250 * kPicosecondsPerNs};
  ServerNics nics = ServerNics::rail;
};

// The fabric with its NICs turned into servers' GPUs. The fabric's hosts
// must be whole servers: gpus NICs per server (rail) or one (shared). The
// NVLink switches come after the fabric's switches, server by server.
// Throws std::invalid_argument naming what does not fit.
Topology with_gpu_servers(const Topology& fabric, const GpuServerSpec& spec);

}  // namespace uroce::sim
