#include "concord/data/fashion_mnist.h"

#include <string>

#include <spdlog/spdlog.h>
#include <torch/data/datasets/mnist.h>

#include "concord/core/timer.h"
#include "concord/data/dataset_error.h"
#include "concord/data/gzip_cache.h"

namespace concord::data {
namespace {

struct IdxFile {
  const char* name;
  ExpectedFile expected;  // decompressed
};

// Sizes are the IDX headers plus one byte per pixel or label; the CRCs are of the files in
// dataset-fashion-mnist 0.0~git20200523.55506a9-1 (the data set has not changed since 2017).
constexpr IdxFile kTrainImages{"train-images-idx3-ubyte", {16 + kFashionMnistTrainSize * 784, 0x7af1f2bfu}};
constexpr IdxFile kTrainLabels{"train-labels-idx1-ubyte", {8 + kFashionMnistTrainSize, 0x219e9393u}};
constexpr IdxFile kTestImages{"t10k-images-idx3-ubyte", {16 + kFashionMnistTestSize * 784, 0xaf8d0264u}};
constexpr IdxFile kTestLabels{"t10k-labels-idx1-ubyte", {8 + kFashionMnistTestSize, 0x0780b6fcu}};

std::string remedy() {
  return std::string("install the Debian package ") + kFashionMnistPackage + " (scripts/setup.sh does)";
}

void check_size(const std::filesystem::path& path, int64_t bytes) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) throw DatasetError("IDX file '" + path.string() + "' cannot be read: " + error.message());
  if (static_cast<int64_t>(size) != bytes) {
    throw DatasetError("IDX file '" + path.string() + "' holds " + std::to_string(size) + " bytes, not " +
                       std::to_string(bytes));
  }
}

}  // namespace

LabelledData read_idx_part(const std::filesystem::path& dir, bool train) {
  const int64_t count = train ? kFashionMnistTrainSize : kFashionMnistTestSize;
  const auto images = dir / (train ? kTrainImages.name : kTestImages.name);
  const auto labels = dir / (train ? kTrainLabels.name : kTestLabels.name);
  check_size(images, 16 + count * 784);
  check_size(labels, 8 + count);
  try {
    torch::data::datasets::MNIST part(
        dir.string(), train ? torch::data::datasets::MNIST::Mode::kTrain : torch::data::datasets::MNIST::Mode::kTest);
    LabelledData data{part.images(), part.targets()};
    if (data.labels.min().item<int64_t>() < 0 || data.labels.max().item<int64_t>() > 9) {
      throw DatasetError("IDX file '" + labels.string() + "' holds a label outside 0..9");
    }
    return data;
  } catch (const c10::Error& error) {
    // LibTorch's message is "Expected to read number N but found M instead" plus a backtrace.
    const std::string what = error.what_without_backtrace();
    throw DatasetError("IDX files in '" + dir.string() +
                       "' were rejected by LibTorch's reader: " + what.substr(0, what.find('\n')));
  }
}

TrainTestSplit load_fashion_mnist(const std::filesystem::path& package_dir, const std::filesystem::path& cache_dir) {
  core::Stopwatch clock;
  for (const IdxFile& file : {kTrainImages, kTrainLabels, kTestImages, kTestLabels}) {
    decompress_verified(package_dir / (std::string(file.name) + ".gz"), cache_dir / file.name, file.expected, remedy());
  }
  TrainTestSplit split{read_idx_part(cache_dir, true), read_idx_part(cache_dir, false)};
  spdlog::debug("Fashion-MNIST: {} + {} images from {} in {:.2f} s", split.train.size(), split.test.size(),
                cache_dir.string(), clock.elapsed_seconds());
  return split;
}

}  // namespace concord::data
