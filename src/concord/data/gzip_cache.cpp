#include "concord/data/gzip_cache.h"

#include <zlib.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "concord/core/atomic_file.h"
#include "concord/core/crc32c.h"
#include "concord/data/dataset_error.h"

namespace concord::data {
namespace {

std::string hex(uint32_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

// Reads the whole file into `bytes`; false when it cannot be opened or read.
bool read_whole_file(const std::filesystem::path& path, std::string& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

std::string problem_with(const std::string& bytes, const ExpectedFile& expected) {
  if (static_cast<int64_t>(bytes.size()) != expected.bytes) {
    return "holds " + std::to_string(bytes.size()) + " bytes, not " + std::to_string(expected.bytes);
  }
  const uint32_t crc = core::crc32c(bytes);
  if (crc != expected.crc32c) return "its CRC-32C is " + hex(crc) + ", not " + hex(expected.crc32c);
  return {};
}

std::string gunzip(const std::filesystem::path& gz, const ExpectedFile& expected, const std::string& remedy) {
  if (!std::filesystem::is_regular_file(gz)) {
    throw DatasetError("'" + gz.string() + "' is missing; " + remedy);
  }
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(gz.c_str(), "rb"), gzclose);
  if (!file) throw DatasetError("'" + gz.string() + "' cannot be opened; " + remedy);
  std::string bytes;
  // One byte more than expected, so that an over-long stream is noticed.
  bytes.resize(static_cast<size_t>(expected.bytes) + 1);
  size_t filled = 0;
  while (filled < bytes.size()) {
    const auto chunk = static_cast<unsigned>(std::min<size_t>(bytes.size() - filled, 1u << 30));
    const int got = gzread(file.get(), bytes.data() + filled, chunk);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      throw DatasetError("'" + gz.string() + "' is not a readable gzip file (" + message + "); " + remedy);
    }
    if (got == 0) break;
    filled += static_cast<size_t>(got);
  }
  // gzread returns short without an error on a truncated stream; gzclose_r reports it.
  int code = 0;
  gzerror(file.get(), &code);
  if (code != Z_OK && code != Z_BUF_ERROR) {
    throw DatasetError("'" + gz.string() + "' is a damaged gzip stream; " + remedy);
  }
  if (gzclose_r(file.release()) != Z_OK) {
    throw DatasetError("'" + gz.string() + "' is a truncated or damaged gzip stream; " + remedy);
  }
  bytes.resize(filled);
  const std::string problem = problem_with(bytes, expected);
  if (!problem.empty())
    throw DatasetError("'" + gz.string() + "' decompresses to the wrong file: it " + problem + "; " + remedy);
  return bytes;
}

}  // namespace

std::filesystem::path decompress_verified(const std::filesystem::path& gz, const std::filesystem::path& cached,
                                          const ExpectedFile& expected, const std::string& remedy) {
  std::string bytes;
  if (std::filesystem::is_regular_file(cached) &&
      static_cast<int64_t>(std::filesystem::file_size(cached)) == expected.bytes && read_whole_file(cached, bytes) &&
      problem_with(bytes, expected).empty()) {
    return cached;
  }
  bytes = gunzip(gz, expected, remedy);
  try {
    std::filesystem::create_directories(cached.parent_path());
    core::write_file_atomically(cached, bytes);
  } catch (const std::exception& error) {
    throw DatasetError("cannot write the decompressed cache '" + cached.string() + "': " + error.what());
  }
  return cached;
}

}  // namespace concord::data
