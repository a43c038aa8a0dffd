#pragma once

#include <filesystem>

#include "concord/data/labelled_data.h"

namespace concord::data {

// Fashion-MNIST (Xiao, Rasul and Vollgraf 2017; Zalando, MIT licence) as Debian's package
// `dataset-fashion-mnist` ships it: four gzipped IDX files, 60,000 training and 10,000 test 28x28
// greyscale images of ten kinds of clothing, the same shape as MNIST.
//
// The files are decompressed once into <cache_dir> (LibTorch's reader wants plain files), each
// checked against its pinned size and CRC-32C, and read with LibTorch's own IDX reader,
// torch::data::datasets::MNIST:
//   train: images [60000, 1, 28, 28] float32 in [0, 1], labels [60000] int64 in 0..9
//   test:  images [10000, 1, 28, 28],                   labels [10000]
// The split is the data set's own.
inline constexpr char kFashionMnistPackage[] = "dataset-fashion-mnist";
inline constexpr char kFashionMnistPackageDir[] = "/usr/share/datasets/fashion-mnist";
inline constexpr int64_t kFashionMnistTrainSize = 60000;
inline constexpr int64_t kFashionMnistTestSize = 10000;

// Throws DatasetError in one line, naming the file and the package, when a file is missing or
// corrupt (in the package or in the cache, which is then rebuilt), or the cache cannot be written.
TrainTestSplit load_fashion_mnist(const std::filesystem::path& package_dir, const std::filesystem::path& cache_dir);

// One part from plain IDX files in `dir` (train-images-idx3-ubyte and train-labels-idx1-ubyte,
// or the t10k- pair), through torch::data::datasets::MNIST, which expects exactly 60,000 training
// or 10,000 test images. Checks the files' sizes first, since that reader does not check its
// reads; throws DatasetError naming the file for a size or header it rejects.
LabelledData read_idx_part(const std::filesystem::path& dir, bool train);

}  // namespace concord::data
