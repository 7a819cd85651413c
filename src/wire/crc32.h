// CRC-32 as in Ethernet and zlib (reflected polynomial 0xEDB88320, initial
// value and final XOR all ones): the checksum inside the RoCEv2 ICRC.
#pragma once

#include <cstdint>

#include "common/bytes.h"

namespace uroce::wire {

// Extends a CRC: crc is the result over earlier bytes, or 0 to start.
// Uses the fastest backend measured on this machine (bench/wire_bench.cc).
std::uint32_t crc32_update(std::uint32_t crc, ByteSpan data);

// The two backends, kept callable for the benchmark and cross-checks.
std::uint32_t crc32_update_isal(std::uint32_t crc, ByteSpan data);
std::uint32_t crc32_update_zlib(std::uint32_t crc, ByteSpan data);

}  // namespace uroce::wire
