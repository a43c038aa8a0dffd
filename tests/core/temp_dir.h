#pragma once

// A gtest fixture base for tests that write files: each test gets a fresh directory, removed
// after it, plus byte-level helpers for reading, writing and patching those files. Header-only.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace concord::test {

class TempDirTest : public ::testing::Test {
 protected:
  // dir_ will be <tmp>/<prefix><pid>_<random>: unique across tests and processes running at once.
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    std::random_device entropy;
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "_" + std::to_string(entropy()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The whole file, or "" if it cannot be read.
  static std::string read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // Replaces the file's contents with `bytes`.
  static void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // The little-endian unsigned integer of `count` bytes at `offset`.
  static uint64_t get_le(const std::string& bytes, std::size_t offset, int count) {
    uint64_t value = 0;
    for (int i = 0; i < count; ++i) {
      value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
    }
    return value;
  }
  // Overwrites `count` bytes at `offset` with `value`, little-endian.
  static void put_le(std::string& bytes, std::size_t offset, uint64_t value, int count) {
    for (int i = 0; i < count; ++i) {
      bytes[offset + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
    }
  }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace concord::test
