#include "concord/core/run_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace concord::core {
namespace {

std::filesystem::path fresh_root(const std::string& name) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / ("concord_run_dir_test_" + name);
  std::filesystem::remove_all(root);
  return root;
}

TEST(RunDir, IsOneFolderUnderTheRootEvenForIdsWithSlashes) {
  const std::filesystem::path root = fresh_root("slashes");
  const std::filesystem::path dir = create_run_dir(root, "MinAtar/Breakout-v1__train__1");
  EXPECT_EQ(dir.parent_path(), root);
  EXPECT_EQ(dir.filename().string().rfind("MinAtar_Breakout-v1__train__1__", 0), 0u) << dir;
  EXPECT_TRUE(std::filesystem::is_directory(dir));
}

TEST(RunDir, TwoRunsInTheSameSecondGetTwoFolders) {
  const std::filesystem::path root = fresh_root("twice");
  const std::filesystem::path first = create_run_dir(root, "CartPole-v1");
  const std::filesystem::path second = create_run_dir(root, "CartPole-v1");
  EXPECT_NE(first, second);
  EXPECT_TRUE(std::filesystem::is_directory(first));
  EXPECT_TRUE(std::filesystem::is_directory(second));
}

}  // namespace
}  // namespace concord::core
