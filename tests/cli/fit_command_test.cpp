// `concord fit` end to end, as a user runs it.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/concord_process.h"

namespace concord::test {
namespace {

TEST(FitCommandTest, TrainsAndWritesMetricsAndACheckpoint) {
  const auto root = fresh_dir("fit", "runs");
  const CommandResult result = run_concord(
      "fit --dataset mnist --model mlp --strategy allreduce --workers 2 --steps 60 "
      "--set fit.eval_interval=30 --progress off --run-root " +
      root.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("test accuracy"), std::string::npos) << result.output;
  int runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    ++runs;
    EXPECT_TRUE(std::filesystem::exists(entry.path() / "metrics.csv"));
    EXPECT_TRUE(std::filesystem::exists(entry.path() / "checkpoint.ckpt"));
    EXPECT_TRUE(std::filesystem::exists(entry.path() / "config.toml"));
  }
  EXPECT_EQ(runs, 1);
}

// One name per concept: synchronous SGD is `allreduce`, as in sync.strategy. The old spelling
// still runs, with one warning line saying so.
TEST(FitCommandTest, TheOldSyncSpellingStillRunsWithADeprecationLine) {
  const auto root = fresh_dir("fit", "deprecated");
  const CommandResult result = run_concord(
      "fit --strategy sync --workers 2 --steps 4 --set fit.eval_interval=4 "
      "--progress off --run-root " +
      root.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("fit.strategy = \"sync\" is deprecated; it is \"allreduce\""), std::string::npos)
      << result.output;
}

// `--schedule abs --epochs N` trains the epochs, logs the schedule beside the accuracy and
// reports the final batch.
TEST(FitCommandTest, AdaptiveBatchScheduleLogsItsEigenvalueAndBatch) {
  const auto root = fresh_dir("fit", "abs");
  const CommandResult result = run_concord(
      "fit --schedule abs --epochs 2 --set fit.abs.force_after_epochs=1 --set fit.abs.hessian_batch=64 "
      "--set fit.eval_interval=1000 --progress off --run-root " +
      root.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("top eigenvalue"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("final batch          128 rows per worker"), std::string::npos) << result.output;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    std::ifstream csv(entry.path() / "metrics.csv");
    std::string header;
    std::getline(csv, header);
    EXPECT_NE(header.find("fit/top_eigenvalue"), std::string::npos) << header;
    EXPECT_NE(header.find("fit/batch_size"), std::string::npos) << header;
  }

  const CommandResult absa = run_concord("fit --schedule absa --run-root " + root.string());
  EXPECT_NE(absa.exit_code, 0);
  EXPECT_NE(absa.output.find("fit.epochs"), std::string::npos) << absa.output;
  const CommandResult unknown = run_concord("fit --schedule huge --run-root " + root.string());
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("fit.schedule"), std::string::npos) << unknown.output;
}

TEST(FitCommandTest, BadKeysAndMissingDataAreOneLineErrors) {
  const auto root = fresh_dir("fit", "errors");
  CommandResult result = run_concord("fit --set fit.no_such_key=1 --run-root " + root.string());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("fit.no_such_key"), std::string::npos) << result.output;

  result = run_concord("fit --set fit.data_dir=" + (root / "nowhere").string() + " --run-root " + root.string());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("scripts/setup.sh"), std::string::npos) << result.output;

  result = run_concord("fit --strategy easgd --set sync.easgd.alpha=0.9 --workers 4 --run-root " + root.string());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("alpha"), std::string::npos) << result.output;
  EXPECT_TRUE(std::filesystem::is_empty(root));
}

}  // namespace
}  // namespace concord::test
