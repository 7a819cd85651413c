// An extent packet whose bytes stay in a local peer's own memory (a region
// whose RegionBacking is its process's memory, uroce/region_sharing.h).
// While the engine handles the packet, its payload is a stand-in: read-only
// zeros of the named length, so that every check of a length reads as it
// does for any ONLY packet. Placing the payload then copies the peer's bytes
// straight into the target (ExtentSource::copy_from_process): one copy in
// all, and no copy of a stand-in byte is ever made.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/bytes.h"
#include "transport/queue_pair.h"
#include "uroce/region_sharing.h"

namespace uroce::transport {

// Zeros of that length, read-only and never written; nullopt if it is longer
// than any message (DeviceAttributes::max_msg_size) or the mapping failed.
std::optional<ByteSpan> stand_in_payload(std::uint64_t length);

struct PeerPayload {
  ByteSpan stand_in;  // the packet's payload while it is handled
  std::uint32_t pid = 0;
  std::uint64_t address = 0;  // of the first byte in process pid
  ExtentSource* source = nullptr;
  std::uint64_t unread = 0;  // bytes that could not be read: their targets got zeros
};

// Copies payload bytes [from, from + n) to registered memory at to: straight
// from the peer when from lies in peer's stand-in, else as any payload.
void place_payload(std::optional<PeerPayload>& peer, std::uint8_t* to, const std::uint8_t* from, std::uint64_t n);
// scatter() of a payload that may be a peer's stand-in.
void scatter_payload(std::optional<PeerPayload>& peer, const std::vector<Segment>& segments, std::uint64_t offset,
                     ByteSpan payload);

}  // namespace uroce::transport
