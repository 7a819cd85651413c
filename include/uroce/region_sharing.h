// Payloads by reference between two local processes: what the engine, the
// verbs objects and the intra-host port share about a registered region
// whose bytes live in a file a peer can map.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace uroce {

// Payloads by reference on the intra-host path (UROCE_SHARED_MR=1). A
// region whose bytes live in a sealed memfd of their own (runtime::SharedRegions)
// can be read by a local peer straight from that file: a requester sends a
// SEND or WRITE of more than one MTU from such a region to a peer whose
// packets reach it through shared memory as one packet of its own kind
// (BTH extent_payload, see wire/bth.h) whose payload names the bytes
// (transport/payload_extent.h), and consumes one PSN for it. The responder's port
// maps the file read-only (port::ExtentMappings) and the engine checks and
// places the message as it would any ONLY packet: one copy in all, no
// packet per MTU. Such packets are dropped when they come from a wire.
struct RegionBacking {
  std::uint32_t pid = 0;      // the process holding the file
  std::int32_t fd = -1;       // its descriptor there
  std::uint64_t id = 0;       // the file's name is "uroce-mr-<id>"
  std::uint64_t offset = 0;   // where the region's first byte is in the file
};

struct PayloadExtent {
  std::uint32_t pid = 0;
  std::int32_t fd = -1;
  std::uint64_t id = 0;
  std::uint64_t offset = 0;  // of the payload's first byte in the file
};

// Reads another local process's region bytes, for a packet that arrived
// through shared memory. Returns the bytes [extent.offset, + length) as
// this process maps them, valid until the next call, or nothing when they
// cannot be read (no such file, not sealed, out of its bounds).
class ExtentSource {
 public:
  virtual ~ExtentSource() = default;
  virtual std::optional<std::span<const std::uint8_t>> resolve(const PayloadExtent& extent, std::uint64_t length) = 0;
};

}  // namespace uroce
