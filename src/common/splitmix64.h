// splitmix64 (Steele, Lea and Flood): a cheap, well-mixed generator that is
// reproducible from its seed, and its finalizer as a stateless 64-bit hash.
// Keys, QPNs, CM communication IDs and the simulator's randomness use it.
#pragma once

#include <cstdint>

namespace uroce {

inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The next value from state (advanced).
inline std::uint64_t splitmix64(std::uint64_t& state) { return mix64(state += 0x9e3779b97f4a7c15ull); }

}  // namespace uroce
