// Payloads by reference between two local processes: what the engine, the
// verbs objects and the intra-host port share about a registered region
// whose bytes a local peer can read, in a file it maps or straight from the
// owner's memory.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include <unistd.h>

namespace uroce {

// Payloads by reference on the intra-host path. A region has one of two
// backings. Its process's own memory (fd < 0, the default: the peer copies
// the bytes out with process_vm_readv, as MPI's single-copy transports do),
// or, with UROCE_SHARED_MR=1, a sealed memfd of its own
// (runtime::SharedRegions) that the peer maps. Either way a requester sends a
// SEND or WRITE of more than one MTU from such a region to a peer whose
// packets reach it through shared memory as one packet of its own kind
// (BTH extent_payload, see wire/bth.h) whose payload names the bytes
// (transport/payload_extent.h), and consumes one PSN for it. The responder's port
// reads the bytes (port::ExtentMappings) and the engine checks and places
// the message as it would any ONLY packet: one copy in all, no packet per
// MTU. Such packets are dropped when they come from a wire.
struct RegionBacking {
  std::uint32_t pid = 0;      // the process holding the bytes
  std::int32_t fd = -1;       // the file's descriptor there; below 0: the process's memory itself
  std::uint64_t id = 0;       // the file's name is "uroce-mr-<id>"; 0 for process memory
  std::uint64_t offset = 0;   // where the region's first byte is in the file, or its address in the process
};

// The backing of a region registered at addr in this process's own memory.
inline RegionBacking process_memory_backing(const void* addr) {
  return RegionBacking{static_cast<std::uint32_t>(::getpid()), -1, 0, reinterpret_cast<std::uintptr_t>(addr)};
}

struct PayloadExtent {
  std::uint32_t pid = 0;
  std::int32_t fd = -1;
  std::uint64_t id = 0;
  std::uint64_t offset = 0;  // of the payload's first byte in the file, or its address in process pid

  bool in_process_memory() const { return fd < 0; }
};

// Reads another local process's region bytes, for a packet that arrived
// through shared memory.
class ExtentSource {
 public:
  virtual ~ExtentSource() = default;
  // A file's bytes [extent.offset, + length) as this process maps them,
  // valid until the next call, or nothing when they cannot be read (no such
  // file, not sealed, out of its bounds).
  virtual std::optional<std::span<const std::uint8_t>> resolve(const PayloadExtent& extent, std::uint64_t length) = 0;
  // Whether this process may read process pid's memory (tried at address).
  virtual bool may_read_process(std::uint32_t pid, std::uint64_t address) = 0;
  // Copies length bytes at address in process pid to `to`; how many, from
  // the first, it could (fewer where a page of either side is not mapped).
  virtual std::uint64_t copy_from_process(std::uint32_t pid, std::uint64_t address, void* to,
                                          std::uint64_t length) = 0;
};

}  // namespace uroce
