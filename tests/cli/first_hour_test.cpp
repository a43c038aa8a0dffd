// What a new user meets in the first hour, each as they met it: `concord` alone, the launcher
// without '--', an algorithm's bad value, a damaged checkpoint header, the resume hint of a
// launched run.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "concord/cli/commands.h"
#include "concord/cli/config_error_keys.h"
#include "concord/cli/run_config.h"
#include "concord/launch/launch_control.h"

#include "cli/concord_process.h"

namespace {

using concord::test::CommandResult;
using concord::test::run_concord;
using ::testing::HasSubstr;
using ::testing::Not;

std::filesystem::path fresh_dir(const std::string& name) { return concord::test::fresh_dir("first_hour_test", name); }

TEST(FirstHour, ConcordAloneListsTheCommands) {
  const CommandResult result = run_concord("");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(
      result.output,
      HasSubstr("concord: error: a command is required: train, eval, envs, config, rollout, launch, fit, export"));
}

TEST(FirstHour, LaunchWithoutSeparatorSaysToAddIt) {
  const CommandResult result = run_concord("launch -n 2 concord train --total-timesteps 10");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("put '--' before the command the processes run: concord launch -n 2 -- "
                                       "concord train ..."));
}

TEST(FirstHour, AlgorithmValueErrorNamesTheKeyWritten) {
  const auto root = fresh_dir("num_steps");
  const CommandResult result = run_concord("train --set algo.ppo.num_steps=-5 --run-root " + root.string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.output, "concord: error: algo.ppo.num_steps must be at least 1, got -5\n");
}

TEST(FirstHour, WithConfigKeysPrefixesEachKnownField) {
  const concord::core::ConfigSchema schema = concord::cli::concord_schema();
  const std::vector<std::string> sections{"algo.ppo.", "algo."};
  EXPECT_EQ(concord::cli::with_config_keys("invalid PpoConfig: num_steps=-5 must be >= 1; gamma=2 must be in [0, 1]",
                                           schema, sections),
            "algo.ppo.num_steps=-5 must be >= 1; algo.ppo.gamma=2 must be in [0, 1]");
  // A network field lives under algo. itself; an unknown field stays as it was.
  EXPECT_EQ(concord::cli::with_config_keys("invalid network config (algo.<key>): activation=\"x\" must be \"tanh\" or "
                                           "\"relu\"; wobble=1 must be 0",
                                           schema, sections),
            "algo.activation=\"x\" must be \"tanh\" or \"relu\"; wobble=1 must be 0");
  EXPECT_EQ(concord::cli::with_config_keys("make_learner: observation space Box", schema, sections),
            "make_learner: observation space Box");
}

TEST(FirstHour, DamagedHeaderLengthIsCorruptNotTruncated) {
  const auto root = fresh_dir("flip");
  const CommandResult train =
      run_concord("train --total-timesteps 256 --num-envs 4 --progress off --run-root " + root.string());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::filesystem::path run_dir = concord::test::run_directories(root).at(0);
  std::fstream file(run_dir / "checkpoint.ckpt", std::ios::in | std::ios::out | std::ios::binary);
  // The header length is the little-endian u64 after the 12 magic bytes and the u32 version: its
  // fifth byte, flipped, asks for some 2^32 bytes more than the file has.
  file.seekg(16 + 4);
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  file.seekp(16 + 4);
  file.write(&byte, 1);
  file.close();
  const CommandResult eval = run_concord("eval " + run_dir.string());
  EXPECT_EQ(eval.exit_code, 1);
  EXPECT_THAT(eval.output, HasSubstr("corrupt: the preamble gives the header "));
  EXPECT_THAT(eval.output, HasSubstr("(its CRC matches): the length field was damaged"));
  EXPECT_THAT(eval.output, Not(HasSubstr("truncated")));
}

TEST(FirstHour, TruncatedHeaderIsStillTruncated) {
  const auto root = fresh_dir("cut");
  const CommandResult train =
      run_concord("train --total-timesteps 256 --num-envs 4 --progress off --run-root " + root.string());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::filesystem::path checkpoint = concord::test::run_directories(root).at(0) / "checkpoint.ckpt";
  std::filesystem::resize_file(checkpoint, 60);
  const CommandResult eval = run_concord("eval " + checkpoint.string());
  EXPECT_EQ(eval.exit_code, 1);
  EXPECT_THAT(eval.output, HasSubstr("truncated: expected at least"));
}

// The hint a launched run prints after Ctrl-C keeps the launcher: following it without
// `concord launch` would resume as one process.
TEST(FirstHour, ResumeHintOfALaunchedRunKeepsTheLauncher) {
  unsetenv(concord::launch::kLaunchControlVariable);
  EXPECT_EQ(concord::cli::launcher_for_hints("concord"), "");
  setenv(concord::launch::kLaunchControlVariable, "/tmp/control", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("GROUP_WORLD_SIZE", "1", 1);
  EXPECT_EQ(concord::cli::launcher_for_hints("build/concord"), "build/concord launch -n 2 -- ");
  setenv("GROUP_WORLD_SIZE", "3", 1);
  EXPECT_EQ(concord::cli::launcher_for_hints("concord"),
            "concord launch -n 2 --nnodes 3 --node-rank <this node's> --master-addr <rank 0's node> -- ");
  unsetenv(concord::launch::kLaunchControlVariable);
  unsetenv("LOCAL_WORLD_SIZE");
  unsetenv("GROUP_WORLD_SIZE");
}

}  // namespace
