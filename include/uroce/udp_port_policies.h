// The UDP port's two policies that a device's configuration chooses: what
// it does with the ICRC of arrivals, and when it may send a run of
// datagrams as one GSO send. Below the runtime, so that the port needs no
// runtime header.
#pragma once

#include <cstdint>

namespace uroce {

// What a UDP port does with the ICRC of arrivals (a UDP socket cannot see
// the IPv4 Identification, which the ICRC covers; docs/guides/real-networks.md).
enum class UdpIcrcPolicy : std::uint8_t {
  // Rebuild the IPv4 header as a DF-set, Identification-0 sender (uroce,
  // hardware RNICs) sends it and verify; a peer that sends other values
  // (Linux Soft-RoCE) fails, and its packets count as ICRC errors. IPv6 has
  // no Identification and is always verified in full.
  verify_assuming_id0,
  // Accept IPv4 arrivals without an ICRC check (counted in icrc_unchecked).
  skip_ipv4,
};

// When the UDP port may hand the kernel a run of equal-sized datagrams as one
// UDP GSO send. The kernel gives the segments after the first IPv4
// Identifications 1, 2, ..., which the ICRC covers: a uroce UDP peer rebuilds
// headers with Identification 0 and never notices, but a peer that checks
// the ICRC over the real header (a hardware RNIC, a raw port) would drop them.
enum class UdpGsoPolicy : std::uint8_t {
  // IPv6 (no Identification) anywhere, and IPv4 to loopback addresses, where
  // the peer can only be another socket: the bytes any peer checks are unchanged.
  where_bytes_unchanged,
  always,  // also IPv4 to other hosts: only when every peer is a uroce UDP port
  never,
};

}  // namespace uroce
