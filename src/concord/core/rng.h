#pragma once

#include <cstdint>
#include <random>

namespace concord::core {

// The generator every seeded component uses. A 64-bit Mersenne Twister: deterministic across
// platforms for a given seed, which is what reproducible runs need.
using Rng = std::mt19937_64;

// SplitMix64 finaliser: turns (base seed, stream index) into well-spread, independent seeds, so
// that env i of a run seeded s never shares a stream with env j or with the run seeded s + 1.
inline uint64_t derive_seed(uint64_t base_seed, uint64_t stream) {
  uint64_t z = base_seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A uniform draw from [low, high), computed the same way on every platform (libstdc++'s
// distributions are not specified bit for bit, so we avoid them where values are tested).
inline double uniform(Rng& rng, double low, double high) {
  const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

// A uniform integer in [0, n), by Lemire's multiply-shift (bias below 2^-32 for n < 2^32).
inline int64_t uniform_index(Rng& rng, int64_t n) {
  const uint64_t r = rng() >> 32;
  return static_cast<int64_t>((r * static_cast<uint64_t>(n)) >> 32);
}

}  // namespace concord::core
