#include "concord/data/dataset_registry.h"

#include "concord/core/registry.h"
#include "concord/data/fashion_mnist.h"
#include "concord/data/mnist.h"

namespace concord::data {
namespace {

using DatasetLoader = TrainTestSplit (*)(const std::filesystem::path& data_dir);

TrainTestSplit fashion_mnist(const std::filesystem::path& data_dir) {
  return load_fashion_mnist(kFashionMnistPackageDir, data_dir / "data" / "fashion-mnist");
}

const core::Registry<DatasetLoader>& datasets() {
  static const core::Registry<DatasetLoader> registry("dataset",
                                                      {{"mnist", load_mnist}, {"fashion_mnist", fashion_mnist}});
  return registry;
}

}  // namespace

std::vector<std::string> dataset_names() { return datasets().names(); }

TrainTestSplit load_dataset(const std::string& name, const std::filesystem::path& data_dir) {
  return datasets().at(name)(data_dir.empty() ? default_data_dir() : data_dir);
}

}  // namespace concord::data
