#include "concord/core/crc32c.h"

#include <boost/crc.hpp>

namespace concord::core {

namespace {

// Boost's table-driven CRC with the Castagnoli parameters: init and final XOR all ones, input and
// output reflected.
using Crc32cEngine = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

constexpr uint32_t kMaskDelta = 0xa282ead8U;

}  // namespace

uint32_t crc32c(const void* data, std::size_t size) {
  Crc32cEngine engine;
  engine.process_bytes(data, size);
  return engine.checksum();
}

uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

uint32_t masked_crc32c(const void* data, std::size_t size) { return mask_crc32c(crc32c(data, size)); }

}  // namespace concord::core
