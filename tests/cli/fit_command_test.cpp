// `concord fit` end to end, as a user runs it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/concord_process.h"
#include "concord/core/checkpoint.h"

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

// SIGTERM (as Ctrl-C's SIGINT) ends a fit at its next evaluation step with a checkpoint there, and
// the exit status is 128 + 15, as for `concord train`. The signal goes once the fit is running
// (its first evaluation is in metrics.csv); every wait in the script is bounded.
TEST(FitCommandTest, SigtermStopsTheFitWithACheckpoint) {
  const auto root = fresh_dir("fit", "sigterm");
  const std::string status = signal_once_running(
      "fit --strategy allreduce --workers 2 --steps 1000000 --set fit.eval_interval=20 --progress off --run-root " +
          root.string(),
      root, root / "out.txt", "TERM");
  std::ifstream out_file(root / "out.txt");
  const std::string output((std::istreambuf_iterator<char>(out_file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(status, "exit 143\n") << output;
  EXPECT_NE(output.find("stopping: evaluating this step and saving a checkpoint"), std::string::npos) << output;
  EXPECT_NE(output.find("stopped by signal at steps"), std::string::npos) << output;
  int runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    ++runs;
    ASSERT_TRUE(std::filesystem::exists(entry.path() / "checkpoint.ckpt")) << output;
    const int64_t steps =
        core::read_checkpoint_header(entry.path() / "checkpoint.ckpt").at("metadata").at("steps").get<int64_t>();
    EXPECT_GT(steps, 0);
    EXPECT_LT(steps, 1000000);
  }
  EXPECT_EQ(runs, 1);
}

using concord::test::csv_steps;

// `concord fit --resume RUN_DIR` continues the step count from the checkpoint, with a longer
// --steps; a checkpoint older than metrics.csv (a run killed between the two) drops the rows after
// it, so no step appears twice.
TEST(FitCommandTest, ResumeContinuesTheStepsWithoutRepeatingMetricRows) {
  const auto root = fresh_dir("fit", "resume");
  const CommandResult first = run_concord(
      "fit --strategy local_sgd --workers 2 --steps 20 --set fit.checkpoint_interval=10 "
      "--set fit.eval_interval=10 --progress off --run-root " +
      root.string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::filesystem::path run_dir = std::filesystem::directory_iterator(root)->path();
  std::filesystem::copy_file(run_dir / "checkpoint.ckpt", root / "at20.ckpt");

  const CommandResult resumed = run_concord("fit --resume " + run_dir.string() + " --steps 40 --progress off");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed at steps 20"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("steps                40"), std::string::npos) << resumed.output;
  EXPECT_EQ(csv_steps(run_dir), (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(core::read_checkpoint_header(run_dir / "checkpoint.ckpt").at("metadata").at("steps"), 40);

  std::filesystem::copy_file(root / "at20.ckpt", run_dir / "checkpoint.ckpt",
                             std::filesystem::copy_options::overwrite_existing);
  const CommandResult again = run_concord("fit --resume " + run_dir.string() + " --steps 30 --progress off");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(csv_steps(run_dir), (std::vector<int64_t>{10, 20, 30}));
}

// What a resume refuses, each in one line: another config (a task flag included), a run directory
// without a checkpoint, a missing directory.
TEST(FitCommandTest, ResumeRefusesAChangedConfigAndAMissingCheckpoint) {
  const auto root = fresh_dir("fit", "resume_errors");
  const CommandResult first =
      run_concord("fit --workers 2 --steps 4 --set fit.eval_interval=4 --progress off --run-root " + root.string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::filesystem::path run_dir = std::filesystem::directory_iterator(root)->path();
  const auto expect_error = [](const std::string& arguments, const std::string& message) {
    const CommandResult result = run_concord(arguments);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_NE(result.output.find(message), std::string::npos) << arguments << ": " << result.output;
  };
  expect_error("fit --resume " + run_dir.string() + " --set fit.learning_rate=0.5",
               "--resume continues a run with its own config.toml");
  expect_error("fit --resume " + run_dir.string() + " --strategy easgd",
               "--resume continues a run with its own config.toml");
  expect_error("fit --resume " + (root / "missing").string(), "does not exist");
  expect_error("fit --task gan --resume " + run_dir.string(), "--resume continues a run with its own config.toml");
  std::filesystem::remove(run_dir / "checkpoint.ckpt");
  expect_error("fit --resume " + run_dir.string(), "checkpoint.ckpt");
}

}  // namespace
}  // namespace concord::test
