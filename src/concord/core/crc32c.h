#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace concord::core {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `size` bytes at `data`, as used by
// TFRecord files and by Concord checkpoints. crc32c("123456789") == 0xE3069283. Pure function,
// safe from any thread.
uint32_t crc32c(const void* data, std::size_t size);
inline uint32_t crc32c(std::string_view bytes) { return crc32c(bytes.data(), bytes.size()); }

// TensorFlow's masked CRC: rotates the CRC right by 15 bits and adds a constant, so that a CRC
// stored inside CRC-protected data does not make the outer CRC degenerate. Pure function.
uint32_t mask_crc32c(uint32_t crc);

// mask_crc32c(crc32c(data, size)): the checksum written after each TFRecord length and payload.
uint32_t masked_crc32c(const void* data, std::size_t size);
inline uint32_t masked_crc32c(std::string_view bytes) { return masked_crc32c(bytes.data(), bytes.size()); }

}  // namespace concord::core
