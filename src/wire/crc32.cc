// CRC-32 backends: ISA-L (PCLMULQDQ folding) and zlib.
#include "wire/crc32.h"

#include <isa-l/crc.h>
#include <zlib.h>

namespace uroce::wire {

std::uint32_t crc32_update_isal(std::uint32_t crc, ByteSpan data) {
  return crc32_gzip_refl(crc, data.data(), data.size());
}

std::uint32_t crc32_update_zlib(std::uint32_t crc, ByteSpan data) {
  return static_cast<std::uint32_t>(crc32_z(crc, data.data(), data.size()));
}

std::uint32_t crc32_update(std::uint32_t crc, ByteSpan data) { return crc32_update_isal(crc, data); }

}  // namespace uroce::wire
