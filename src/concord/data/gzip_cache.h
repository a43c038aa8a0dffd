#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace concord::data {

// What a file decompressed from a packaged .gz must be: its exact size in bytes and its CRC-32C
// (core/crc32c.h). Pinned per file, so that a damaged package or cache is caught before a reader
// that trusts the contents (LibTorch's MNIST reader does not check that its reads succeed).
struct ExpectedFile {
  int64_t bytes = 0;
  uint32_t crc32c = 0;
};

// Makes `cached` hold the decompression of `gz`, verified against `expected`, and returns its
// path. A cached file of the expected size is trusted after its CRC is checked; anything else is
// rebuilt from `gz` (gzip's own CRC checks the stream) and written atomically. Throws
// DatasetError in one line naming the file and `remedy` for a missing or unreadable `gz`, a
// stream that is not gzip or is truncated, or contents of the wrong size or checksum.
std::filesystem::path decompress_verified(const std::filesystem::path& gz, const std::filesystem::path& cached,
                                          const ExpectedFile& expected, const std::string& remedy);

}  // namespace concord::data
