#include "concord/core/tensorboard_reader.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "concord/core/crc32c.h"
#include "concord/core/little_endian.h"

namespace concord::core {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, std::size_t offset, const std::string& problem) {
  throw std::runtime_error("TensorBoard event file '" + path.string() + "': " + problem + " in record at byte offset " +
                           std::to_string(offset));
}

}  // namespace

std::vector<tensorboard::Event> read_event_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot open TensorBoard event file '" + path.string() + "': " + std::strerror(errno));
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw std::runtime_error("cannot read TensorBoard event file '" + path.string() + "'");
  }

  constexpr std::size_t kHeaderBytes = 12;  // u64 length + u32 masked crc of the length
  constexpr std::size_t kFooterBytes = 4;   // u32 masked crc of the data
  std::vector<tensorboard::Event> events;
  std::size_t offset = 0;
  while (offset < bytes.size()) {
    const std::size_t left = bytes.size() - offset;
    if (left < kHeaderBytes) {
      fail(path, offset, "truncated header (" + std::to_string(left) + " of 12 bytes)");
    }
    const uint64_t length = get_le(bytes.data() + offset, 8);
    const uint32_t length_crc = static_cast<uint32_t>(get_le(bytes.data() + offset + 8, 4));
    if (length_crc != masked_crc32c(bytes.data() + offset, 8)) {
      fail(path, offset, "length CRC mismatch");
    }
    if (length > left - kHeaderBytes || left - kHeaderBytes - length < kFooterBytes) {
      fail(
          path, offset,
          "truncated data (record needs " + std::to_string(length) + " + 16 bytes, " + std::to_string(left) + " left)");
    }
    const std::size_t data_offset = offset + kHeaderBytes;
    const uint32_t data_crc = static_cast<uint32_t>(get_le(bytes.data() + data_offset + length, 4));
    if (data_crc != masked_crc32c(bytes.data() + data_offset, length)) {
      fail(path, offset, "data CRC mismatch");
    }
    if (length > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      fail(path, offset, "record of " + std::to_string(length) + " bytes is too large");
    }
    tensorboard::Event event;
    if (!event.ParseFromArray(bytes.data() + data_offset, static_cast<int>(length))) {
      fail(path, offset, "data is not a tensorboard.Event");
    }
    events.push_back(std::move(event));
    offset = data_offset + length + kFooterBytes;
  }
  return events;
}

}  // namespace concord::core
