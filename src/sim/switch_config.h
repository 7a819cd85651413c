// A switch's buffer, PFC, ECN and forwarding settings (the scenario's
// [switch] table). Sizes in bytes of wire time (frames with their overheads).
#pragma once

#include <array>
#include <cstdint>

namespace uroce::sim {

enum class Forwarding : std::uint8_t {
  ecmp,   // one path per flow: a hash of the 5-tuple (the UDP source port is the entropy)
  spray,  // every packet picks a path of its own (round robin per switch)
  // The host picks the path: the packet's UDP source port read as the digits
  // of its choice at each hop (mixed radix over the equal-cost groups it
  // meets), as SRv6 source routes carry a path; consecutive EVs take
  // distinct paths, evenly, where ECMP's hash would collide.
  source,
};

enum class Scheduler : std::uint8_t {
  strict,  // the highest priority with a packet goes first
  dwrr,    // deficit-weighted round robin, except strict_priorities (served first)
};

// Trimmed headers travel in this priority, served before the data.
inline constexpr std::uint8_t kTrimPriority = 7;

struct SwitchConfig {
  std::uint64_t buffer_bytes = 16 << 20;      // shared by every port
  std::uint8_t lossless_priorities = 1u << 3;  // bit per priority that PFC protects
  bool pfc = true;
  // XOFF: an ingress (port, priority) over this many bytes pauses its sender.
  // dynamic_alpha > 0: the threshold is alpha x the free shared buffer instead
  // (whichever is smaller), as in Broadcom-style dynamic thresholds. The
  // default, 1/8 of the free buffer with no static cap below the buffer, is
  // the common shared-buffer setting (and HPCC's simulator's); it keeps XOFF
  // (2 MB in an idle 16 MB switch) above the default ECN Kmax at 100 Gb/s, so
  // ECN acts before PFC. dynamic_alpha = 0 makes xoff_bytes a static threshold.
  std::uint64_t xoff_bytes = 16 << 20;
  double dynamic_alpha = 1.0 / 8;
  std::uint64_t xon_offset_bytes = 2 * 4200;   // XON once this far below XOFF
  std::uint64_t headroom_bytes = 128 << 10;    // absorbs what is in flight after XOFF
  // RED-style ECN marking on an egress queue's bytes (lossless priorities).
  // 0 for a threshold: by the port's rate, as HPCC's authors (Alibaba) set
  // DCQCN's marking at 25, 50 and 100 Gb/s: Kmin 4 KB and Kmax 16 KB per
  // Gb/s (100/400 KB at 25G, 400/1600 KB at 100G), Pmax 20%. With one
  // threshold given and the other by rate, a Kmax at or below Kmin becomes
  // Kmin + 1 byte: every ECT packet above Kmin is marked.
  bool ecn = true;
  std::uint64_t ecn_kmin_bytes = 0;
  std::uint64_t ecn_kmax_bytes = 0;
  double ecn_pmax = 0.2;
  // Where the mark is decided: as a packet joins the egress queue (the
  // queue it finds), or as it leaves (the queue it leaves behind; the
  // signal is a queueing delay fresher, as in HPCC's simulator).
  bool ecn_at_dequeue = false;
  // A lossy priority's egress queue drops beyond this many bytes.
  std::uint64_t lossy_queue_bytes = 1 << 20;
  // Packet trimming, on lossy priorities: a RoCE data packet that would
  // take its egress queue beyond trim_bytes (0: lossy_queue_bytes) loses its
  // payload instead of its life. The header goes on in kTrimPriority, ahead
  // of the data, and the receiver NAKs it at once (Engine::on_trimmed).
  bool trim = false;
  std::uint64_t trim_bytes = 0;
  Forwarding forwarding = Forwarding::ecmp;
  // Egress scheduling between priorities. Under DWRR each priority's share
  // of a busy port follows its weight (a quantum of weight x 4200 bytes per
  // round); strict_priorities (CNPs' 6 and 7 by default) still go first.
  Scheduler scheduler = Scheduler::strict;
  std::array<std::uint32_t, 8> dwrr_weights = {1, 1, 1, 1, 1, 1, 1, 1};
  std::uint8_t strict_priorities = 0xC0;
};

}  // namespace uroce::sim
