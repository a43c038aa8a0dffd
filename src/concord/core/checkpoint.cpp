#include "concord/core/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>
#include <torch/serialize/output-archive.h>

#include "concord/core/atomic_file.h"
#include "concord/core/crc32c.h"
#include "concord/core/little_endian.h"
#include "concord/core/torch_archive.h"

namespace concord::core {

namespace {

using Kind = CheckpointError::Kind;
using nlohmann::json;

constexpr char kMagic[] = "CONCORDCKPT";  // with its terminating '\0': 12 bytes
constexpr std::size_t kMagicSize = sizeof(kMagic);
// Version 1: magic, u32 version, u64 header length. Version 2 adds a u32 CRC-32C of the header
// text, so that an edited step, seed or config in the metadata is caught like a corrupt payload.
constexpr std::size_t kPreambleSizeV1 = kMagicSize + 4 + 8;
constexpr std::size_t kPreambleSizeV2 = kPreambleSizeV1 + 4;

// How much of a file whose header length field points past its end is searched for the header.
constexpr uint64_t kMaxHeaderScan = uint64_t{64} << 20;

std::size_t preamble_size(uint32_t version) { return version >= 2 ? kPreambleSizeV2 : kPreambleSizeV1; }

static_assert(kMagicSize == 12, "the magic is 12 bytes, NUL included");

std::string one_line(const std::string& text) {
  const std::size_t end = text.find_first_of("\r\n");
  return end == std::string::npos ? text : text.substr(0, end);
}

std::string hex32(uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "0x%08x", value);
  return buffer;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string archive_key(std::size_t index) { return "t" + std::to_string(index); }

// A checkpoint file opened for positioned reads; every failure is a CheckpointError.
class CheckpointFile {
 public:
  explicit CheckpointFile(const std::filesystem::path& path) : path_(path) {
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(path, error);
    if (status.type() == std::filesystem::file_type::not_found) {
      fail(Kind::kMissing, "no such file");
    }
    if (error) {
      fail(Kind::kUnreadable, error.message());
    }
    if (status.type() == std::filesystem::file_type::directory) {
      fail(Kind::kUnreadable, "is a directory");
    }
    // Opening a FIFO (or a device) would wait for a writer forever, and it has no size to check.
    if (status.type() != std::filesystem::file_type::regular) {
      fail(Kind::kUnreadable, "is not a regular file (a FIFO, socket or device)");
    }
    in_.open(path, std::ios::binary);
    if (!in_) {
      fail(Kind::kUnreadable, std::strerror(errno));
    }
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    if (end < 0) {
      fail(Kind::kUnreadable, "cannot determine its size");
    }
    size_ = static_cast<uint64_t>(end);
  }

  uint64_t size() const { return size_; }

  std::string read(uint64_t offset, uint64_t count) {
    std::string bytes(count, '\0');
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(bytes.data(), static_cast<std::streamsize>(count));
    if (static_cast<uint64_t>(in_.gcount()) != count) {
      fail(Kind::kTruncated, "file shrank while being read (expected " + std::to_string(offset + count) +
                                 " bytes, found " + std::to_string(offset + static_cast<uint64_t>(in_.gcount())) + ")");
    }
    return bytes;
  }

  [[noreturn]] void fail(Kind kind, const std::string& problem) const { throw CheckpointError(kind, path_, problem); }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  uint64_t size_ = 0;
};

struct TocEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

struct Header {
  json document;
  std::vector<TocEntry> toc;
  uint64_t payload_offset = 0;
  uint64_t payload_size = 0;
  uint32_t payload_crc = 0;
};

const json& require(const CheckpointFile& file, const json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end()) {
    file.fail(Kind::kCorrupt, std::string("malformed header: no '") + key + "' field");
  }
  return *found;
}

uint64_t require_unsigned(const CheckpointFile& file, const json& object, const char* key) {
  const json& value = require(file, object, key);
  if (!value.is_number_unsigned()) {
    file.fail(Kind::kCorrupt, std::string("malformed header: '") + key + "' is not a non-negative integer");
  }
  return value.get<uint64_t>();
}

std::vector<TocEntry> parse_toc(const CheckpointFile& file, const json& tensors) {
  if (!tensors.is_array()) {
    file.fail(Kind::kCorrupt, "malformed header: 'tensors' is not an array");
  }
  std::vector<TocEntry> toc;
  std::set<std::string> names;
  for (const json& item : tensors) {
    if (!item.is_object()) {
      file.fail(Kind::kCorrupt, "malformed header: a 'tensors' entry is not an object");
    }
    const json& name = require(file, item, "name");
    const json& dtype = require(file, item, "dtype");
    const json& shape = require(file, item, "shape");
    if (!name.is_string() || !dtype.is_string() || !shape.is_array()) {
      file.fail(Kind::kCorrupt, "malformed header: a 'tensors' entry has a field of the wrong type");
    }
    TocEntry entry{name.get<std::string>(), dtype.get<std::string>(), {}};
    for (const json& dim : shape) {
      if (!dim.is_number_unsigned() ||
          dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        file.fail(Kind::kCorrupt, "malformed header: tensor '" + entry.name + "' has an invalid shape");
      }
      entry.shape.push_back(dim.get<int64_t>());
    }
    if (!names.insert(entry.name).second) {
      file.fail(Kind::kCorrupt, "malformed header: tensor '" + entry.name + "' is listed twice");
    }
    toc.push_back(std::move(entry));
  }
  return toc;
}

// Reads and validates everything up to the payload, and checks the file size the header implies.
Header read_header(CheckpointFile& file) {
  const uint64_t size = file.size();
  const std::string preamble = file.read(0, std::min<uint64_t>(size, kPreambleSizeV2));
  if (preamble.compare(0, std::min<std::size_t>(preamble.size(), kMagicSize), std::string_view(kMagic, kMagicSize), 0,
                       std::min<std::size_t>(preamble.size(), kMagicSize)) != 0) {
    file.fail(Kind::kNotACheckpoint, "not a Concord checkpoint (bad magic bytes)");
  }
  // Until the version is readable, expect the preamble this build writes.
  const uint32_t version = size >= kMagicSize + 4 ? static_cast<uint32_t>(get_le(preamble.data() + kMagicSize, 4))
                                                  : kCheckpointFormatVersion;
  if (version > kCheckpointFormatVersion) {
    file.fail(Kind::kUnsupportedVersion, "unsupported format version " + std::to_string(version) +
                                             " (this build reads versions up to " +
                                             std::to_string(kCheckpointFormatVersion) + ")");
  }
  if (version == 0) {
    file.fail(Kind::kCorrupt, "corrupt: invalid format version 0");
  }
  const std::size_t preamble_bytes = preamble_size(version);
  if (size < preamble_bytes) {
    file.fail(Kind::kTruncated, "truncated: expected at least " + std::to_string(preamble_bytes) + " bytes, found " +
                                    std::to_string(size));
  }
  const uint64_t header_size = get_le(preamble.data() + kMagicSize + 4, 8);
  if (header_size > size - preamble_bytes && version >= 2) {
    // A file cut short, or a damaged length field? The header is one JSON object whose CRC the
    // preamble holds: if one starts where the header does and its CRC matches, the bytes are all
    // there and the length is what was damaged.
    std::istringstream rest(file.read(preamble_bytes, std::min<uint64_t>(size - preamble_bytes, kMaxHeaderScan)));
    json document;
    try {
      rest >> document;
    } catch (const json::exception&) {
      document = nullptr;
    }
    const std::streamoff parsed = document.is_object() ? static_cast<std::streamoff>(rest.tellg()) : -1;
    if (parsed > 0 && crc32c(rest.str().data(), static_cast<std::size_t>(parsed)) ==
                          static_cast<uint32_t>(get_le(preamble.data() + kPreambleSizeV1, 4))) {
      file.fail(Kind::kCorrupt, "corrupt: the preamble gives the header " + std::to_string(header_size) +
                                    " bytes, but the header is complete in its first " + std::to_string(parsed) +
                                    " (its CRC matches): the length field was damaged");
    }
  }
  if (header_size > size - preamble_bytes) {
    const std::string expected = header_size > std::numeric_limits<uint64_t>::max() - preamble_bytes
                                     ? std::to_string(preamble_bytes) + " + " + std::to_string(header_size)
                                     : std::to_string(preamble_bytes + header_size);
    file.fail(Kind::kTruncated,
              "truncated: expected at least " + expected + " bytes to hold the header, found " + std::to_string(size));
  }

  Header header;
  const std::string text = file.read(preamble_bytes, header_size);
  if (version >= 2) {
    const auto expected_crc = static_cast<uint32_t>(get_le(preamble.data() + kPreambleSizeV1, 4));
    const uint32_t actual_crc = crc32c(text);
    if (actual_crc != expected_crc) {
      file.fail(Kind::kCorrupt, "corrupt: header CRC-32C is " + hex32(actual_crc) + " but the preamble says " +
                                    hex32(expected_crc) + " (the metadata was changed or damaged)");
    }
  }
  try {
    header.document = json::parse(text);
  } catch (const json::exception& error) {
    file.fail(Kind::kCorrupt, "corrupt: header is not valid JSON (" + one_line(error.what()) + ")");
  }
  try {
    const json& document = header.document;
    if (!document.is_object()) {
      file.fail(Kind::kCorrupt, "malformed header: not a JSON object");
    }
    if (require_unsigned(file, document, "format_version") != version) {
      file.fail(Kind::kCorrupt, "malformed header: its format_version disagrees with the file's");
    }
    require(file, document, "metadata");
    header.toc = parse_toc(file, require(file, document, "tensors"));
    header.payload_size = require_unsigned(file, document, "payload_size");
    const uint64_t crc = require_unsigned(file, document, "payload_crc32c");
    if (crc > std::numeric_limits<uint32_t>::max()) {
      file.fail(Kind::kCorrupt, "malformed header: payload_crc32c does not fit 32 bits");
    }
    header.payload_crc = static_cast<uint32_t>(crc);
  } catch (const json::exception& error) {
    file.fail(Kind::kCorrupt, "malformed header: " + one_line(error.what()));
  }

  header.payload_offset = preamble_bytes + header_size;
  const uint64_t available = size - header.payload_offset;
  if (header.payload_size > available) {
    const std::string expected =
        header.payload_size > std::numeric_limits<uint64_t>::max() - header.payload_offset
            ? std::to_string(header.payload_offset) + " + " + std::to_string(header.payload_size)
            : std::to_string(header.payload_offset + header.payload_size);
    file.fail(Kind::kTruncated, "truncated: expected " + expected + " bytes, found " + std::to_string(size));
  }
  if (header.payload_size < available) {
    file.fail(Kind::kCorrupt, "corrupt: " + std::to_string(available - header.payload_size) +
                                  " unexpected bytes after the payload (expected " +
                                  std::to_string(header.payload_offset + header.payload_size) + " bytes, found " +
                                  std::to_string(size) + ")");
  }
  return header;
}

// A dense CPU tensor owning exactly its elements, so the archive stores no unrelated storage.
at::Tensor storable(const std::filesystem::path& path, const std::string& name, const at::Tensor& tensor) {
  if (!tensor.defined()) {
    throw std::invalid_argument("cannot save checkpoint '" + path.string() + "': tensor '" + name + "' is undefined");
  }
  if (tensor.layout() != at::kStrided) {
    throw std::invalid_argument("cannot save checkpoint '" + path.string() + "': tensor '" + name + "' is not dense");
  }
  at::Tensor result = tensor.detach();
  if (!result.device().is_cpu()) {
    result = result.cpu();
  }
  const bool owns_exactly = result.is_contiguous() && result.storage_offset() == 0 &&
                            result.storage().nbytes() == static_cast<std::size_t>(result.nbytes());
  return owns_exactly ? result : result.clone(at::MemoryFormat::Contiguous);
}

}  // namespace

CheckpointError::CheckpointError(Kind kind, const std::filesystem::path& path, const std::string& problem)
    : std::runtime_error(path.empty() ? "checkpoint: " + problem : "checkpoint '" + path.string() + "': " + problem),
      kind_(kind),
      path_(path),
      problem_(problem) {}

CheckpointError CheckpointError::with_path(const std::filesystem::path& path) const {
  return path_.empty() ? CheckpointError(kind_, path, problem_) : *this;
}

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  torch::serialize::OutputArchive archive;
  json toc = json::array();
  std::size_t index = 0;
  for (const auto& [name, tensor] : checkpoint.tensors) {
    const at::Tensor stored = storable(path, name, tensor);
    toc.push_back({{"name", name}, {"dtype", c10::toString(stored.scalar_type())}, {"shape", stored.sizes().vec()}});
    archive.write(archive_key(index++), stored, /*is_buffer=*/true);
  }
  std::ostringstream payload_stream;
  archive.save_to(payload_stream);
  const std::string payload = payload_stream.str();

  const json header = {
      {"format_version", kCheckpointFormatVersion},
      {"created", utc_now_iso8601()},
      {"metadata", checkpoint.metadata},
      {"tensors", toc},
      {"payload_size", payload.size()},
      {"payload_crc32c", crc32c(payload)},
  };
  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const json::exception& error) {
    throw std::invalid_argument("cannot save checkpoint '" + path.string() +
                                "': metadata cannot be written as JSON: " + one_line(error.what()));
  }

  std::string preamble(kMagic, kMagicSize);
  put_le(preamble, kCheckpointFormatVersion, 4);
  put_le(preamble, header_text.size(), 8);
  put_le(preamble, crc32c(header_text), 4);
  write_file_atomically(path, std::vector<std::string_view>{preamble, header_text, payload});
}

nlohmann::json read_checkpoint_header(const std::filesystem::path& path) {
  CheckpointFile file(path);
  return read_header(file).document;
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  CheckpointFile file(path);
  Header header = read_header(file);
  const std::string payload = file.read(header.payload_offset, header.payload_size);
  const uint32_t actual_crc = crc32c(payload);
  if (actual_crc != header.payload_crc) {
    file.fail(Kind::kCorrupt,
              "corrupt: payload CRC-32C is " + hex32(actual_crc) + " but the header says " + hex32(header.payload_crc));
  }

  TensorMap stored;
  try {
    stored = read_tensor_archive(payload.data(), payload.size());
  } catch (const std::exception& error) {
    file.fail(Kind::kCorrupt, "corrupt: payload is not a LibTorch archive of tensors (" + one_line(error.what()) + ")");
  }

  Checkpoint checkpoint;
  checkpoint.metadata = std::move(header.document["metadata"]);
  for (std::size_t index = 0; index < header.toc.size(); ++index) {
    const TocEntry& entry = header.toc[index];
    const auto found = stored.find(archive_key(index));
    if (found == stored.end() || !found->second.defined()) {
      file.fail(Kind::kTensorMissing,
                "tensor '" + entry.name + "' is listed in the header but missing from the payload");
    }
    at::Tensor tensor = found->second;
    const std::string dtype = c10::toString(tensor.scalar_type());
    if (dtype != entry.dtype) {
      file.fail(Kind::kCorrupt, "corrupt: tensor '" + entry.name + "' is " + dtype + " in the payload but " +
                                    entry.dtype + " in the header");
    }
    if (tensor.sizes().vec() != entry.shape) {
      file.fail(Kind::kCorrupt,
                "corrupt: tensor '" + entry.name + "' has a different shape in the payload than in the header");
    }
    checkpoint.tensors.emplace(entry.name, std::move(tensor));
  }
  return checkpoint;
}

}  // namespace concord::core
