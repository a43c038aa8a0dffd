// libFuzzer target: the TensorBoard event file reader (read_event_file), which must throw
// std::runtime_error, naming the offset, for any bytes that are not a sequence of valid records.
//
// Each record carries two masked CRC-32Cs, so the first input byte picks who frames the records:
//   even: the bytes are the file;
//   odd:  the rest is a sequence of chunks "<u8 n><n bytes>", each framed as one record with correct
//         length and CRCs, so that the Event parsing behind them is reached; a chunk cut short by
//         the end of the input is written as it is, its framing unfinished.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "concord/core/crc32c.h"
#include "concord/core/little_endian.h"
#include "concord/core/tensorboard_reader.h"
#include "fuzz_files.h"

namespace {

std::string frame_records(std::string_view rest) {
  std::string file;
  size_t offset = 0;
  while (offset < rest.size()) {
    const size_t length = static_cast<uint8_t>(rest[offset++]);
    std::string length_bytes;
    concord::core::put_le(length_bytes, length, 8);
    file += length_bytes;
    concord::core::put_le(file, concord::core::masked_crc32c(length_bytes), 4);
    const std::string_view record = rest.substr(offset, length);
    file += record;
    offset += record.size();
    if (record.size() == length) concord::core::put_le(file, concord::core::masked_crc32c(record), 4);
  }
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Protobuf logs every string field that is not UTF-8; the reader's own error says enough.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string bytes = (data[0] & 1) == 0 ? std::string(rest) : frame_records(rest);
  const auto path = concord::fuzz::write_file(concord::fuzz::scratch_dir() / "events.out.tfevents", bytes);
  try {
    for (const tensorboard::Event& event : concord::core::read_event_file(path)) {
      if (event.has_summary()) {
        for (const auto& value : event.summary().value()) (void)value.tag().size();
      }
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
