// Which devices uroce's libibverbs offers, from the environment:
//   UROCE_ADDRESS    the device addresses, comma-separated (default
//                    127.0.0.1): uroce0 gets the first, uroce1 the second ...
//   UROCE_INTERFACE  an interface: the devices use the raw Ethernet port on
//                    it (CAP_NET_RAW) instead of UDP sockets
//   UROCE_PROGRESS   who moves packets: adaptive (default: the polling
//                    application while it polls, a progress thread when it
//                    stops), thread (the thread always), or inline (no
//                    thread: only the application's ibv_poll_cq)
//   UROCE_WIRE       1: every datagram goes on the wire. By default (0)
//                    datagrams for another uroce device of this user on
//                    this host go through shared memory (the intra-host
//                    path), which captures and other RoCE stacks do not see
//   UROCE_SHARED_MR  1: registering a buffer of whole pages moves it onto a
//                    shared file (runtime/shared_regions.h), and SENDs and
//                    WRITEs of more than one MTU from it to a local peer
//                    are read by that peer in one copy, not sent as
//                    packets. Off by default (0): it changes how the
//                    buffer's pages behave across fork
//   UROCE_PEER_READS 0: a local peer never reads this process's registered
//                    memory itself; every message travels as packets
//                    through shared memory. By default (1) a SEND, WRITE or
//                    READ response of more than one MTU to a local peer is
//                    one packet naming its bytes, which the peer copies out
//                    of this process's memory (process_vm_readv) in one copy
//   UROCE_GSO        0: the UDP port sends every datagram on its own, never
//                    a run as one GSO send (default 1: runs where the bytes
//                    a peer checks stay unchanged). A capture on loopback
//                    then sees each datagram as sent, not the batch
//   UROCE_LOSS_PROBE_US  microseconds without an acknowledgement after which
//                    an RC QP probes for a lost tail (QpInitAttr::loss_probe_ns;
//                    default 5000, 0: off, only the Local ACK Timeout)
// Two programs on one host need two addresses (each device binds UDP 4791
// on its own); `uroce run --address A -- PROGRAM` sets these for you.
#pragma once

#include <string>
#include <vector>

#include "uroce/expected.h"
#include "ibverbs/ibverbs_device.h"
#include "uroce/device.h"

namespace uroce::ibverbs {

// Reads the variables; an empty entry in UROCE_ADDRESS is skipped.
std::vector<DeviceSpec> configured_devices();

// How the devices' progress is driven (UROCE_PROGRESS), as DeviceConfig's
// progress_thread and progress_mode; an unknown value is an error naming it.
struct ProgressChoice {
  bool progress_thread = true;
  ProgressMode mode = ProgressMode::adaptive;
};
Expected<ProgressChoice, std::string> configured_progress();

// Whether devices take the intra-host path (UROCE_WIRE unset, empty or 0);
// a value other than 0 or 1 is an error naming it.
Expected<bool, std::string> configured_local_path();

// Whether the UDP port may send runs of datagrams as one GSO send (UROCE_GSO
// unset, empty or 1); a value other than 0 or 1 is an error naming it.
Expected<bool, std::string> configured_gso();

// Whether registered regions are shared with local peers (UROCE_SHARED_MR
// is 1); a value other than 0 or 1 is an error naming it.
Expected<bool, std::string> configured_shared_regions();

// Whether local peers may read registered memory themselves (UROCE_PEER_READS
// unset, empty or 1); a value other than 0 or 1 is an error naming it.
Expected<bool, std::string> configured_peer_reads();

// The RC QPs' loss probe interval (UROCE_LOSS_PROBE_US), in nanoseconds; 0
// is off. Not a whole number of microseconds up to 10 s: an error naming it.
Expected<TimeNs, std::string> configured_loss_probe();

}  // namespace uroce::ibverbs
