#pragma once

#include <cstdint>
#include <string>

namespace concord::core {

// The fixed-width little-endian integers of the formats Concord reads and writes byte by byte:
// checkpoint preambles, TFRecord framing, zip directories.

// Appends the low `bytes` bytes of `value`, least significant first.
inline void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// The `bytes`-byte little-endian integer at `at` (the caller checks that they lie in its buffer).
inline uint64_t get_le(const char* at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(static_cast<unsigned char>(at[i])) << (8 * i);
  return value;
}

}  // namespace concord::core
