#include "concord/core/atomic_file.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device entropy;
    dir_ = fs::temp_directory_path() /
           ("concord_atomic_file_test_" + std::to_string(::getpid()) + "_" + std::to_string(entropy()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }

  fs::path dir_;
};

TEST_F(AtomicFileTest, CreatesTheFileAndLeavesNoTemporary) {
  const fs::path target = dir_ / "out.bin";
  write_file_atomically(target, "hello");
  EXPECT_EQ(read(target), "hello");
  EXPECT_EQ(entries(), std::vector<std::string>{"out.bin"});
}

TEST_F(AtomicFileTest, ReplacesAnExistingFile) {
  const fs::path target = dir_ / "out.bin";
  write_file_atomically(target, "a much longer first version");
  write_file_atomically(target, "short");
  EXPECT_EQ(read(target), "short");
  EXPECT_EQ(entries().size(), 1U);
}

TEST_F(AtomicFileTest, WritesBinaryAndEmptyContents) {
  const std::string binary("\0\1\2\xff\0", 5);
  write_file_atomically(dir_ / "binary", binary);
  EXPECT_EQ(read(dir_ / "binary"), binary);
  write_file_atomically(dir_ / "empty", "");
  EXPECT_TRUE(fs::exists(dir_ / "empty"));
  EXPECT_EQ(fs::file_size(dir_ / "empty"), 0U);
}

TEST_F(AtomicFileTest, JoinsPieces) {
  write_file_atomically(dir_ / "pieces", std::vector<std::string_view>{"ab", "", "cde"});
  EXPECT_EQ(read(dir_ / "pieces"), "abcde");
}

TEST_F(AtomicFileTest, RelativePathInTheCurrentDirectory) {
  const fs::path previous = fs::current_path();
  fs::current_path(dir_);
  write_file_atomically("relative.txt", "here");
  fs::current_path(previous);
  EXPECT_EQ(read(dir_ / "relative.txt"), "here");
}

TEST_F(AtomicFileTest, MissingDirectoryThrowsNamingThePathAndReason) {
  const fs::path target = dir_ / "no_such_dir" / "out.bin";
  try {
    write_file_atomically(target, "x");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find((dir_ / "no_such_dir").string()), std::string::npos) << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  }
}

TEST_F(AtomicFileTest, FailedRenameRemovesTheTemporary) {
  // A non-empty directory in the way: the rename fails after the temporary was written.
  const fs::path target = dir_ / "occupied";
  fs::create_directories(target / "child");
  try {
    write_file_atomically(target, "x");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(target.string()), std::string::npos) << error.what();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"occupied"});
}

TEST_F(AtomicFileTest, ConcurrentWritersEachLandWhole) {
  const fs::path target = dir_ / "contended";
  constexpr int kThreads = 4;
  constexpr int kWrites = 25;
  std::vector<std::string> contents;
  for (int t = 0; t < kThreads; ++t) {
    contents.push_back(std::string(4096 + t, static_cast<char>('a' + t)));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        try {
          write_file_atomically(target, contents[t]);
        } catch (const std::exception&) {
          ++failures;
        }
        const std::string seen = read(target);
        bool whole = false;
        for (const std::string& candidate : contents) {
          whole = whole || seen == candidate;
        }
        if (!whole) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(entries(), std::vector<std::string>{"contended"});
}

// A killed writer (SIGKILL, or SIGXFSZ past `ulimit -f`) leaves its temporary behind; the next
// start removes it, but never a temporary whose writer is still running.
TEST_F(AtomicFileTest, RemovesOnlyTheTemporariesOfDeadWriters) {
  // A child that has exited and been reaped: its pid names no process now.
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(dead, &status, 0), dead);
  const std::string dead_tmp = ".checkpoint.ckpt." + std::to_string(dead) + ".0.tmp";
  const std::string dead_config_tmp = ".config.toml." + std::to_string(dead) + ".3.tmp";
  const std::string own_tmp = ".checkpoint.ckpt." + std::to_string(::getpid()) + ".7.tmp";
  const std::string parent_tmp = ".checkpoint.ckpt." + std::to_string(::getppid()) + ".1.tmp";
  const std::vector<std::string> kept = {"checkpoint.ckpt", own_tmp, parent_tmp, ".hidden.tmp", "notes.1.2.tmp"};
  for (const std::string& name : kept) std::ofstream(dir_ / name) << "x";
  std::ofstream(dir_ / dead_tmp) << "partial";
  std::ofstream(dir_ / dead_config_tmp) << "partial";

  EXPECT_EQ(remove_stale_temporaries(dir_), 2);
  std::vector<std::string> left = entries();
  std::sort(left.begin(), left.end());
  std::vector<std::string> expected = kept;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(left, expected);
  EXPECT_EQ(remove_stale_temporaries(dir_ / "missing"), 0);
}

}  // namespace
// A temporary made some other way (keep_checkpoint's hard link) carries the same name, so the
// sweep recognises it once its writer has died; two names are never the same.
TEST_F(AtomicFileTest, TemporaryPathsAreUniqueAndInTheSweptForm) {
  const std::filesystem::path first = temporary_path(dir_ / "checkpoint-500.ckpt");
  const std::filesystem::path second = temporary_path(dir_ / "checkpoint-500.ckpt");
  EXPECT_NE(first, second);
  EXPECT_EQ(first.parent_path(), dir_);
  const std::string prefix = ".checkpoint-500.ckpt." + std::to_string(::getpid()) + ".";
  EXPECT_EQ(first.filename().string().rfind(prefix, 0), 0u) << first;
  EXPECT_EQ(first.extension(), ".tmp");
  std::ofstream(first) << "x";
  EXPECT_EQ(remove_stale_temporaries(dir_), 0) << "a live writer's temporary stays";
  EXPECT_TRUE(std::filesystem::exists(first));
}

}  // namespace concord::core
