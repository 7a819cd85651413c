// FNV-1a, 64-bit: a cheap, stable hash of bytes for naming and comparing
// contents (a sysfs tree's directory, a build's identity across MPI ranks).
// Not for anything an adversary chooses.
#pragma once

#include <cstdint>
#include <string_view>

namespace uroce {

inline constexpr std::uint64_t kFnv1aStart = 0xcbf29ce484222325ull;

// hash carried on over bytes (start from kFnv1aStart).
inline std::uint64_t fnv1a(std::string_view bytes, std::uint64_t hash = kFnv1aStart) {
  for (unsigned char c : bytes) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

}  // namespace uroce
