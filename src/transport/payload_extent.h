// The payload of an extent packet (BTH extent_payload, uroce/engine.h's
// RegionBacking): where the message's bytes are in the sender's shared
// region and how many, 32 bytes, big-endian:
//   pid(4) fd(4) id(8) offset(8) length(8)
#pragma once

#include <optional>

#include "common/bytes.h"
#include "uroce/engine.h"

namespace uroce::transport {

inline constexpr std::size_t kExtentPayloadLength = 32;

struct NamedBytes {
  PayloadExtent extent;
  std::uint64_t length = 0;
};

inline void emit_extent_payload(const NamedBytes& named, std::uint8_t* out) {
  store_be32(out, named.extent.pid);
  store_be32(out + 4, static_cast<std::uint32_t>(named.extent.fd));
  store_be64(out + 8, named.extent.id);
  store_be64(out + 16, named.extent.offset);
  store_be64(out + 24, named.length);
}

inline std::optional<NamedBytes> parse_extent_payload(ByteSpan payload) {
  if (payload.size() != kExtentPayloadLength) return std::nullopt;
  NamedBytes named;
  named.extent.pid = load_be32(&payload[0]);
  named.extent.fd = static_cast<std::int32_t>(load_be32(&payload[4]));
  named.extent.id = load_be64(&payload[8]);
  named.extent.offset = load_be64(&payload[16]);
  named.length = load_be64(&payload[24]);
  return named;
}

}  // namespace uroce::transport
