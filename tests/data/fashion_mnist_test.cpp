#include "concord/data/fashion_mnist.h"

#include <zlib.h>

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/core/crc32c.h"
#include "concord/data/dataset_error.h"
#include "concord/data/dataset_registry.h"
#include "concord/data/gzip_cache.h"
#include "core/temp_dir.h"

namespace concord::data {
namespace {

void append_u32_big_endian(std::string& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>((value >> shift) & 0xFF));
}

// IDX files written by hand: image i's pixel p is (7 i + p) mod 256, its label i mod 10.
std::string idx_images(int64_t count, uint32_t magic = 2051) {
  std::string bytes;
  append_u32_big_endian(bytes, magic);
  append_u32_big_endian(bytes, static_cast<uint32_t>(count));
  append_u32_big_endian(bytes, 28);
  append_u32_big_endian(bytes, 28);
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t p = 0; p < 784; ++p) bytes.push_back(static_cast<char>((7 * i + p) % 256));
  }
  return bytes;
}

std::string idx_labels(int64_t count) {
  std::string bytes;
  append_u32_big_endian(bytes, 2049);
  append_u32_big_endian(bytes, static_cast<uint32_t>(count));
  for (int64_t i = 0; i < count; ++i) bytes.push_back(static_cast<char>(i % 10));
  return bytes;
}

void write_gzip(const std::filesystem::path& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb1");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

ExpectedFile expected_for(const std::string& bytes) {
  return {static_cast<int64_t>(bytes.size()), core::crc32c(bytes)};
}

// The error's text, or "" when `action` does not throw DatasetError.
template <typename Action>
std::string dataset_error(Action action) {
  try {
    action();
  } catch (const DatasetError& error) {
    return error.what();
  }
  return "";
}

class IdxFilesTest : public test::TempDirTest {
 protected:
  IdxFilesTest() : TempDirTest("concord_idx_") {}
};

// LibTorch's reader takes exactly 10,000 test images, so the hand-made test part has that many.
TEST_F(IdxFilesTest, HandMadeTestPartReadsBackExactly) {
  write_bytes(dir_ / "t10k-images-idx3-ubyte", idx_images(kFashionMnistTestSize));
  write_bytes(dir_ / "t10k-labels-idx1-ubyte", idx_labels(kFashionMnistTestSize));
  const LabelledData part = read_idx_part(dir_, false);
  ASSERT_EQ(part.images.sizes(), (std::vector<int64_t>{kFashionMnistTestSize, 1, 28, 28}));
  ASSERT_EQ(part.labels.sizes(), (std::vector<int64_t>{kFashionMnistTestSize}));
  EXPECT_EQ(part.labels.dtype(), torch::kInt64);
  for (const int64_t i : {0, 1, 4321, 9999}) {
    EXPECT_EQ(part.labels[i].item<int64_t>(), i % 10);
    const torch::Tensor pixels = part.images[i].reshape({-1});
    for (const int64_t p : {0, 1, 300, 783}) {
      EXPECT_FLOAT_EQ(pixels[p].item<float>(), static_cast<float>((7 * i + p) % 256) / 255.0f) << i << " " << p;
    }
  }
}

TEST_F(IdxFilesTest, WrongSizeOrHeaderIsOneLineNamingTheFile) {
  write_bytes(dir_ / "t10k-labels-idx1-ubyte", idx_labels(kFashionMnistTestSize));
  write_bytes(dir_ / "t10k-images-idx3-ubyte", idx_images(kFashionMnistTestSize).substr(0, 5000));
  std::string error = dataset_error([&] { read_idx_part(dir_, false); });
  EXPECT_NE(error.find("t10k-images-idx3-ubyte"), std::string::npos) << error;
  EXPECT_NE(error.find("bytes"), std::string::npos) << error;

  write_bytes(dir_ / "t10k-images-idx3-ubyte", idx_images(kFashionMnistTestSize, 2052));
  error = dataset_error([&] { read_idx_part(dir_, false); });
  EXPECT_NE(error.find("LibTorch"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;

  std::filesystem::remove(dir_ / "t10k-labels-idx1-ubyte");
  error = dataset_error([&] { read_idx_part(dir_, false); });
  EXPECT_NE(error.find("t10k-labels-idx1-ubyte"), std::string::npos) << error;
}

TEST_F(IdxFilesTest, DecompressesOnceAndVerifies) {
  const std::string labels = idx_labels(1000);
  write_gzip(dir_ / "l.gz", labels);
  const auto cached = dir_ / "cache" / "l";
  EXPECT_EQ(decompress_verified(dir_ / "l.gz", cached, expected_for(labels), "reinstall it"), cached);
  EXPECT_EQ(read_bytes(cached), labels);

  // A damaged cache is rebuilt from the package.
  write_bytes(cached, std::string(labels.size(), 'x'));
  decompress_verified(dir_ / "l.gz", cached, expected_for(labels), "reinstall it");
  EXPECT_EQ(read_bytes(cached), labels);

  // With a good cache the package is not read again.
  std::filesystem::remove(dir_ / "l.gz");
  EXPECT_EQ(decompress_verified(dir_ / "l.gz", cached, expected_for(labels), "reinstall it"), cached);
}

TEST_F(IdxFilesTest, BadPackageFilesAreOneLineNamingFileAndRemedy) {
  const std::string labels = idx_labels(1000);
  const auto cached = dir_ / "cache" / "l";
  const auto check = [&](const std::string& what, const std::string& expected_text, const ExpectedFile& expected) {
    const std::string error =
        dataset_error([&] { decompress_verified(dir_ / "l.gz", cached, expected, "install the package P"); });
    EXPECT_NE(error.find("l.gz"), std::string::npos) << what << ": " << error;
    EXPECT_NE(error.find("install the package P"), std::string::npos) << what << ": " << error;
    EXPECT_NE(error.find(expected_text), std::string::npos) << what << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << what << ": " << error;
    EXPECT_FALSE(std::filesystem::exists(cached)) << what;
  };
  check("missing", "missing", expected_for(labels));

  write_gzip(dir_ / "l.gz", labels);
  ExpectedFile wrong_crc = expected_for(labels);
  wrong_crc.crc32c ^= 1;
  check("other contents", "CRC-32C", wrong_crc);
  ExpectedFile longer = expected_for(labels);
  longer.bytes += 1;
  check("shorter than expected", "bytes", longer);

  const std::string gz = read_bytes(dir_ / "l.gz");
  write_bytes(dir_ / "l.gz", gz.substr(0, gz.size() / 2));
  check("truncated", "gzip", expected_for(labels));

  std::string flipped = gz;
  flipped[flipped.size() - 6] = static_cast<char>(flipped[flipped.size() - 6] ^ 0x40);  // the stream's CRC
  write_bytes(dir_ / "l.gz", flipped);
  check("gzip CRC", "gzip", expected_for(labels));

  write_bytes(dir_ / "l.gz", labels);  // not compressed at all: zlib passes plain files through
  check("plain", "CRC-32C", ExpectedFile{static_cast<int64_t>(labels.size()), core::crc32c(labels) ^ 1});
}

TEST_F(IdxFilesTest, MissingPackageNamesTheDebianPackage) {
  const std::string error = dataset_error([&] { load_fashion_mnist(dir_ / "nowhere", dir_ / "cache"); });
  EXPECT_NE(error.find("train-images-idx3-ubyte.gz"), std::string::npos) << error;
  EXPECT_NE(error.find("dataset-fashion-mnist"), std::string::npos) << error;
}

TEST(DatasetRegistryTest, UnknownNameListsTheKnownOnes) {
  try {
    load_dataset("cifar10");
    FAIL() << "an unknown data set was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("fashion_mnist"), std::string::npos) << error.what();
  }
}

// The real data set, installed by scripts/setup.sh: its own split, balanced classes, and the
// first labels and pixel sums of the published files.
TEST(FashionMnistTest, DebianPackageLoadsWithItsOwnSplit) {
  const TrainTestSplit split = load_dataset("fashion_mnist");
  ASSERT_EQ(split.train.images.sizes(), (std::vector<int64_t>{60000, 1, 28, 28}));
  ASSERT_EQ(split.test.images.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  EXPECT_TRUE(torch::equal(torch::bincount(split.train.labels), torch::full({10}, 6000, torch::kInt64)));
  EXPECT_TRUE(torch::equal(torch::bincount(split.test.labels), torch::full({10}, 1000, torch::kInt64)));
  EXPECT_TRUE(torch::equal(split.train.labels.slice(0, 0, 5), torch::tensor({9, 0, 0, 3, 0}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(split.test.labels.slice(0, 0, 5), torch::tensor({9, 2, 1, 1, 6}, torch::kInt64)));
  EXPECT_EQ(split.train.images[0].mul(255).round().sum().item<double>(), 76247.0);
  EXPECT_EQ(split.train.images[59999].mul(255).round().sum().item<double>(), 16684.0);
  EXPECT_GE(split.train.images.min().item<float>(), 0.0f);
  EXPECT_LE(split.train.images.max().item<float>(), 1.0f);
}

}  // namespace
}  // namespace concord::data
