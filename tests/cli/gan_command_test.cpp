// `concord fit --task gan` end to end, as a user runs it: a short GAP run writes its PNG grids,
// metrics and quality table; bad flags end with one error line and no run directory.
#include <fstream>
#include <iterator>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/concord_process.h"
#include "concord/core/checkpoint.h"

namespace concord::test {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int non_empty_lines(const std::string& text) {
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line);) count += !line.empty();
  return count;
}

TEST(GanCommandTest, ShortGapRunWritesGridsMetricsAndScores) {
  const auto root = fresh_dir("gan", "runs");
  const CommandResult result = run_concord(
      "fit --task gan --gans 2 --swap-every 5 --steps 20 --seed 3 --set gan.eval_interval=10 "
      "--set gan.sample_interval=10 --set gan.hidden_units=64 --set gan.score_samples=200 "
      "--set gan.classifier_steps=100 --progress off --run-root " +
      root.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("inception-style score"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("(3 swaps)"), std::string::npos) << result.output;
  int runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    ++runs;
    EXPECT_NE(entry.path().filename().string().find("mnist-gan-mlp-gap__fit__3__"), std::string::npos);
    const std::string metrics = read_file(entry.path() / "metrics.csv");
    EXPECT_NE(metrics.find("train/discriminator_loss"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("quality/inception_score_pair1"), std::string::npos) << metrics;
    for (const char* grid : {"samples/step_0000010.png", "samples/step_0000020.png"}) {
      const std::string png = read_file(entry.path() / grid);
      EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << grid;
    }
    bool events = false;
    for (const auto& file : std::filesystem::directory_iterator(entry.path())) {
      events |= file.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    }
    EXPECT_TRUE(events);
  }
  EXPECT_EQ(runs, 1);
}

// The line of the final table that starts with `label`.
std::string table_line(const std::string& output, const std::string& label) {
  const size_t start = output.find(label);
  return start == std::string::npos ? "" : output.substr(start, output.find('\n', start) - start);
}

TEST(GanCommandTest, PairsAsProcessesTrainExactlyAsPairsAsThreads) {
  const auto root = fresh_dir("gan", "launch");
  const std::string run =
      "fit --task gan --swap-every 5 --steps 20 --set gan.eval_interval=10 "
      "--set gan.score_samples=0 --set gan.hidden_units=64 --progress off --run-root " +
      root.string();
  const CommandResult threads = run_concord(run + " --gans 2");
  const CommandResult processes = run_concord("launch -n 2 -- concord " + run);
  ASSERT_EQ(threads.exit_code, 0) << threads.output;
  ASSERT_EQ(processes.exit_code, 0) << processes.output;
  EXPECT_NE(processes.output.find("over processes (gloo)"), std::string::npos) << processes.output;
  for (const std::string label : {"D / G loss", "samples  ", "updates per pair"}) {
    EXPECT_FALSE(table_line(threads.output, label).empty()) << threads.output;
    EXPECT_EQ(table_line(threads.output, label), table_line(processes.output, label));
  }
}

TEST(GanCommandTest, BadFlagsAreOneLineErrorsNamingTheProblem) {
  const auto root = fresh_dir("gan", "errors");
  const std::string run_root = " --run-root " + root.string();
  const std::pair<std::string, std::string> cases[] = {
      {"fit --task gan --gans 1", "gan.pairs = 1"},
      {"fit --task gan --set gan.swap_every=0", "gan.swap_every = 0"},
      {"fit --task gan --model resnet", "gan.model = resnet"},
      {"fit --set fit.task=diffusion", "fit.task = diffusion"},
      {"fit --gans 3", "--gans needs --task gan"},
      {"fit --task gan --strategy easgd", "--strategy applies to --task classifier"},
      {"fit --task gan --schedule abs", "--schedule applies to --task classifier"},
      {"fit --task gan --epochs 3", "--epochs applies to --task classifier"},
      {"fit --task picture", "--task"},
  };
  for (const auto& [arguments, expected] : cases) {
    const CommandResult result = run_concord(arguments + run_root);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_NE(result.output.find(expected), std::string::npos) << arguments << ": " << result.output;
    EXPECT_EQ(non_empty_lines(result.output), 1) << arguments << ": " << result.output;
  }
  EXPECT_TRUE(std::filesystem::is_empty(root));
}

// `concord fit --resume` continues a GAP run where its checkpoint left it: a run of 10 updates
// (which ends at a swap step, so skips that swap) resumed to 20, by threads and by processes under
// `concord launch`, ends exactly as a run of 20, and metrics.csv holds each record step once.
TEST(GanCommandTest, AResumedRunEndsExactlyAsAnUninterruptedOne) {
  const auto root = fresh_dir("gan", "resume");
  const std::string run =
      "fit --task gan --gans 2 --swap-every 5 --set gan.eval_interval=10 --set gan.score_samples=0 "
      "--set gan.hidden_units=64 --progress off";
  const CommandResult whole = run_concord(run + " --steps 20 --run-root " + (root / "whole").string());
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  for (const std::string launcher : {"", "launch -n 2 -- concord "}) {
    const std::filesystem::path runs = root / (launcher.empty() ? "threads" : "processes");
    const CommandResult first = run_concord(launcher + run + " --steps 10 --run-root " + runs.string());
    ASSERT_EQ(first.exit_code, 0) << first.output;
    const std::filesystem::path run_dir = std::filesystem::directory_iterator(runs)->path();
    const CommandResult resumed =
        run_concord(launcher + "fit --resume " + run_dir.string() + " --steps 20 --progress off");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed at steps 10"), std::string::npos) << resumed.output;
    for (const std::string label : {"D / G loss", "samples  ", "updates per pair"}) {
      EXPECT_FALSE(table_line(whole.output, label).empty()) << whole.output;
      EXPECT_EQ(table_line(resumed.output, label), table_line(whole.output, label)) << launcher;
    }
    EXPECT_EQ(csv_steps(run_dir), (std::vector<int64_t>{10, 20})) << launcher;
    EXPECT_EQ(core::read_checkpoint_header(run_dir / "checkpoint.ckpt").at("metadata").at("steps"), 20);
  }
}

// SIGINT ends a GAP run at its next record step with a checkpoint there and exit status 130; the
// run resumed from it ends as one that was never stopped.
TEST(GanCommandTest, SigintStopsAtARecordStepAndTheRunResumesFromThere) {
  const auto root = fresh_dir("gan", "sigint");
  const std::string run =
      "fit --task gan --gans 2 --swap-every 5 --set gan.eval_interval=10 --set gan.score_samples=0 "
      "--set gan.sample_interval=0 --set gan.hidden_units=64 --progress off";
  const std::filesystem::path runs = root / "stopped";
  const std::string status =
      signal_once_running(run + " --steps 100000000 --run-root " + runs.string(), runs, root / "out.txt", "INT");
  const std::string output = read_file(root / "out.txt");
  EXPECT_EQ(status, "exit 130\n") << output;
  EXPECT_NE(output.find("stopped by signal at step"), std::string::npos) << output;
  EXPECT_NE(output.find("concord fit --resume"), std::string::npos) << output;
  const std::filesystem::path run_dir = std::filesystem::directory_iterator(runs)->path();
  const int64_t steps =
      core::read_checkpoint_header(run_dir / "checkpoint.ckpt").at("metadata").at("steps").get<int64_t>();
  ASSERT_GT(steps, 0);
  ASSERT_LT(steps, 100000000);
  EXPECT_EQ(steps % 10, 0) << "a record step";

  const std::string longer = " --steps " + std::to_string(steps + 10);
  const CommandResult resumed = run_concord("fit --resume " + run_dir.string() + longer + " --progress off");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const CommandResult whole = run_concord(run + longer + " --run-root " + (root / "whole").string());
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  for (const std::string label : {"D / G loss", "samples  ", "updates per pair"}) {
    EXPECT_FALSE(table_line(whole.output, label).empty()) << whole.output;
    EXPECT_EQ(table_line(resumed.output, label), table_line(whole.output, label));
  }
}

// A GAP resume refuses, in one line, a changed config and the classifier's length flags.
TEST(GanCommandTest, AResumeRefusesAChangedConfigInOneLine) {
  const auto root = fresh_dir("gan", "resume_errors");
  const CommandResult first = run_concord(
      "fit --task gan --steps 5 --swap-every 5 --set gan.eval_interval=5 --set gan.score_samples=0 "
      "--set gan.hidden_units=16 --progress off --run-root " +
      root.string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::filesystem::path run_dir = std::filesystem::directory_iterator(root)->path();
  const std::pair<std::string, std::string> cases[] = {
      {"fit --resume " + run_dir.string() + " --gans 3", "--resume continues a run with its own config.toml"},
      {"fit --resume " + run_dir.string() + " --set gan.batch_size=8",
       "--resume continues a run with its own config.toml"},
      {"fit --resume " + run_dir.string() + " --rounds 3", "--rounds applies to --task classifier"},
  };
  for (const auto& [arguments, expected] : cases) {
    const CommandResult result = run_concord(arguments);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_NE(result.output.find(expected), std::string::npos) << arguments << ": " << result.output;
    EXPECT_EQ(non_empty_lines(result.output), 1) << arguments << ": " << result.output;
  }
}

}  // namespace
}  // namespace concord::test
