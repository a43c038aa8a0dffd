// Runs the real `concord` binary as a user would and checks what it prints and leaves behind.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "concord/cli/training_session.h"
#include "concord/core/allocator.h"
#include "concord/core/tensorboard_reader.h"

#include "cli/concord_process.h"

namespace {

using concord::test::CommandResult;
using concord::test::run_concord;

constexpr const char* kSuite = "cli_test";

std::filesystem::path fresh_dir(const std::string& name) { return concord::test::fresh_dir(kSuite, name); }

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Each bad input ends in exactly one line, "concord: error: ...", naming the problem.
void expect_one_line_error(const std::string& arguments, const std::string& needle, int exit_code) {
  const CommandResult result = run_concord(arguments);
  EXPECT_EQ(result.exit_code, exit_code) << arguments << "\n" << result.output;
  EXPECT_EQ(count_lines(result.output), 1) << arguments << "\n" << result.output;
  EXPECT_THAT(result.output, ::testing::StartsWith("concord: error: ")) << arguments;
  EXPECT_THAT(result.output, ::testing::HasSubstr(needle)) << arguments;
}

TEST(Cli, EnvsListsEveryEnvironmentWithSpaces) {
  const CommandResult result = run_concord("envs");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* id : {"CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"}) {
    EXPECT_THAT(result.output, ::testing::HasSubstr(id));
  }
  EXPECT_THAT(result.output, ::testing::HasSubstr("Discrete(2)"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("Box(-2, 2, (1,), float32)"));
}

// The numerics a run depends on, for bug reports and scripts/kernel_check.sh: the BLAS and the
// OpenBLAS kernel set, which OPENBLAS_CORETYPE forces; then malloc's settings.
TEST(Cli, VersionNamesLibTorchTheBlasItsKernelAndMalloc) {
  const CommandResult result = run_concord("--version");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, ::testing::StartsWith("concord "));
  EXPECT_THAT(result.output, ::testing::HasSubstr(", LibTorch 1."));
  EXPECT_THAT(result.output, ::testing::HasSubstr(", BLAS "));
  EXPECT_THAT(result.output, ::testing::HasSubstr(", kernel "));
  // The concord binary links as this test does (CMakeLists.txt, concord_executable).
  const bool tcmalloc = concord::core::tcmalloc_linked();
  EXPECT_THAT(result.output, ::testing::HasSubstr(tcmalloc ? "tcmalloc (keeps freed memory in its own caches)"
                                                           : "malloc keeps freed memory"));
  const CommandResult defaults = run_concord("--version", "CONCORD_MALLOC=default");
  EXPECT_THAT(defaults.output,
              ::testing::HasSubstr(tcmalloc ? "tcmalloc" : "glibc malloc as the user set it (CONCORD_MALLOC=default)"));
  const CommandResult unknown = run_concord("--version", "CONCORD_MALLOC=fast");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.output, "concord: CONCORD_MALLOC='fast' is not understood (known: concord, default)\n");
  const CommandResult forced = run_concord("--version", "OPENBLAS_CORETYPE=Sandybridge");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  if (forced.output.find("OpenBLAS") != std::string::npos) {
    EXPECT_THAT(forced.output, ::testing::HasSubstr(", kernel Sandybridge"));
  }
}

TEST(Cli, BadInputGetsOneClearLine) {
  const std::string root = "--run-root " + fresh_dir("bad_input").string();
  expect_one_line_error("bogus", "unknown command 'bogus'", 2);
  expect_one_line_error("rollout --no-such-flag", "--no-such-flag", 2);
  expect_one_line_error("rollout --num-envs abc " + root, "abc", 2);
  expect_one_line_error("rollout --num-envs 0 " + root, "--num-envs", 2);
  expect_one_line_error("rollout --env NoSuchEnv-v0 " + root, "unknown environment 'NoSuchEnv-v0'", 1);
  expect_one_line_error("rollout --set env.nope=3 " + root, "unknown config key 'env.nope'", 1);
  expect_one_line_error("rollout --set env.num_envs=many " + root, "env.num_envs", 1);
  expect_one_line_error("rollout --config /no/such/file.toml " + root, "/no/such/file.toml", 2);
  expect_one_line_error("rollout --set env.batch_size=99 " + root, "batch_size", 1);
  // None of these failed runs left a run directory behind.
  EXPECT_TRUE(std::filesystem::is_empty(fresh_dir("bad_input")));
}

// Sizes no machine can hold are refused before anything is allocated, in one line: counts beyond
// what the engine indexes, and buffers larger than the memory available (1e9 CartPole envs x 128
// steps need terabytes, and so do 8 envs x 1e11 steps).
TEST(Cli, AbsurdSizesAreRefusedUpFront) {
  const auto dir = fresh_dir("absurd_sizes");
  const std::string root = "--run-root " + dir.string();
  expect_one_line_error("train --set env.num_envs=99999999999 " + root, "env.num_envs=99999999999 is too large", 1);
  expect_one_line_error("rollout --set env.num_envs=99999999999 " + root, "env.num_envs=99999999999 is too large", 1);
  expect_one_line_error("train --set env.num_envs=1000000000 " + root, "of memory available; lower env.num_envs", 1);
  expect_one_line_error("train --set env.num_envs=8 --set algo.ppo.num_steps=100000000000 " + root,
                        "with algo.ppo.num_steps=100000000000 needs about", 1);
  // The envs themselves count, measured: a million CartPoles with their rollouts do not fit in the
  // memory of a machine of this project's kind (they grew to 23 GB before the OOM killer came).
  expect_one_line_error("train --algo dqn --set env.num_envs=100000000 " + root, "(envs ", 1);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

// MinAtar's settings and networks are checked before any training starts.
TEST(Cli, BadMinAtarSettingsAndNetworksGetOneClearLine) {
  const std::string root = "--run-root " + fresh_dir("bad_minatar").string();
  expect_one_line_error("train --env MinAtar/Pong-v0 " + root, "unknown environment 'MinAtar/Pong-v0'", 1);
  expect_one_line_error("train --env MinAtar/Breakout-v1 --set env.sticky_action_probability=1.5 " + root,
                        "env.sticky_action_probability = 1.5 must lie in [0, 1]", 1);
  expect_one_line_error("train --env MinAtar/Breakout-v1 --set env.sticky_action_probability=-0.1 " + root,
                        "env.sticky_action_probability = -0.1", 1);
  expect_one_line_error("train --env MinAtar/Breakout-v1 --set env.max_episode_steps=-1 " + root,
                        "env.max_episode_steps must be at least 0, got -1 (0: the environment's own limit)", 1);
  expect_one_line_error("train --env CartPole-v1 --set env.difficulty_ramping=false " + root,
                        "env.difficulty_ramping is set, but CartPole-v1 has no such setting", 1);
  expect_one_line_error("train --env CartPole-v1 --set algo.torso=cnn " + root,
                        "torso=cnn does not fit observations of shape [4]", 1);
  expect_one_line_error("train --env CartPole-v1 --set algo.torso=grid_cnn " + root,
                        "torso=grid_cnn does not fit observations of shape [4]", 1);
  expect_one_line_error("train --env MinAtar/Breakout-v1 --set algo.torso=cnn " + root,
                        "torso=cnn does not fit observations of shape [10, 10, 4]", 1);
  expect_one_line_error("train --env MinAtar/Breakout-v1 --set algo.torso=resnet " + root, "torso=\"resnet\"", 1);
  expect_one_line_error(
      "train --config ppo_minatar_breakout --set algo.torso=grid_cnn " + root,
      "hidden_sizes=[256, 256] applies only to torso=mlp, and torso is \"grid_cnn\": leave it at its default [64, 64]",
      1);
}

TEST(Cli, UnknownKeyInConfigFileNamesKeyAndFile) {
  const auto dir = fresh_dir("config_file");
  const auto file = dir / "bad.toml";
  std::ofstream(file) << "[env]\nnum_env = 4\n";
  expect_one_line_error("rollout --config " + file.string() + " --run-root " + dir.string(), "'env.num_env'", 1);
  expect_one_line_error("config --config " + file.string(), file.string(), 1);
}

TEST(Cli, RolloutWritesARunDirectory) {
  const auto root = fresh_dir("rollout");
  const auto config_file = root / "rollout.toml";
  std::ofstream(config_file) << "[env]\nnum_envs = 8\n[log]\ninterval_seconds = 0.0\n";
  const CommandResult result = run_concord("rollout --env CartPole-v1 --steps 20000 --threads 2 --seed 7 --config " +
                                           config_file.string() + " --run-root " + root.string() + " --progress plain");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("steps/s"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("20,000/20,000"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("8 envs, 2 threads, sync"));

  std::filesystem::path run_dir;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_directory()) run_dir = entry.path();
  }
  ASSERT_FALSE(run_dir.empty());
  EXPECT_THAT(run_dir.filename().string(), ::testing::StartsWith("CartPole-v1__rollout__7__"));

  std::ifstream config_in(run_dir / "config.toml");
  std::stringstream resolved;
  resolved << config_in.rdbuf();
  EXPECT_THAT(resolved.str(), ::testing::HasSubstr("num_envs = 8\n"));
  EXPECT_THAT(resolved.str(), ::testing::HasSubstr("num_threads = 2\n"));
  EXPECT_THAT(resolved.str(), ::testing::HasSubstr("seed = 7\n"));

  // The resolved config is itself a valid config file.
  const CommandResult reread = run_concord("config --config " + (run_dir / "config.toml").string());
  EXPECT_EQ(reread.exit_code, 0) << reread.output;
  EXPECT_EQ(reread.output, resolved.str());

  std::ifstream csv_in(run_dir / "metrics.csv");
  std::string header;
  std::getline(csv_in, header);
  EXPECT_THAT(header, ::testing::StartsWith("step,wall_time,"));
  EXPECT_THAT(header, ::testing::HasSubstr("rollout/steps_per_second"));

  std::filesystem::path event_file;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) event_file = entry.path();
  }
  ASSERT_FALSE(event_file.empty());
  const auto events = concord::core::read_event_file(event_file);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front().file_version(), "brain.Event:2");
  bool saw_return = false;
  for (const auto& event : events) {
    for (const auto& value : event.summary().value())
      saw_return = saw_return || value.tag() == "rollout/episode_return";
  }
  EXPECT_TRUE(saw_return);
  EXPECT_TRUE(std::filesystem::exists(run_dir / "log.txt"));
}

TEST(Cli, AsyncRolloutOnContinuousEnv) {
  const auto root = fresh_dir("async");
  const CommandResult result = run_concord(
      "rollout --env Pendulum-v1 --num-envs 8 --set env.batch_size=4 "
      "--steps 4000 --progress off --run-root " +
      root.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("async batch 4"));
  // Pendulum never terminates: every episode is truncated at 200 steps.
  EXPECT_THAT(result.output, ::testing::HasSubstr("length         200.0"));
}

// A mistyped name gets the name it was nearly: commands, flags, config keys, env ids and presets;
// a bad value names the flag or key the user wrote.
TEST(Cli, MistypedNamesGetASuggestion) {
  const std::string root = "--run-root " + fresh_dir("mistyped").string();
  expect_one_line_error("trian", "did you mean train?", 2);
  expect_one_line_error("train --totl-timesteps 5000 " + root, "did you mean --total-timesteps for --totl-timesteps?",
                        2);
  expect_one_line_error("train --set algo.ppo.learning_rte=0.1 " + root, "did you mean algo.ppo.learning_rate?", 1);
  expect_one_line_error("rollout --env CartPol-v1 " + root, "did you mean CartPole-v1?", 1);
  expect_one_line_error("train --config ppo_cartpol " + root, "did you mean ppo_cartpole?", 2);
  expect_one_line_error("rollout --num-envs abc " + root, "--num-envs: expects a whole number from 1 to", 2);
  expect_one_line_error("rollout --set env.num_envs=-4 " + root, "env.num_envs must be at least 1, got -4", 1);
  expect_one_line_error("config polcy", "unknown config section 'polcy' (did you mean policy?", 1);
  EXPECT_TRUE(std::filesystem::is_empty(fresh_dir("mistyped")));
}

// Shipped presets resolve by name from any working directory, and `concord config SECTION` prints
// one section (and the sections below it).
TEST(Cli, PresetsResolveByNameAndConfigPrintsOneSection) {
  const CommandResult preset = concord::test::run_shell("cd / && " + std::string(CONCORD_BINARY) +
                                                        " config --config ppo_minatar_breakout env 2>&1");
  ASSERT_EQ(preset.exit_code, 0) << preset.output;
  EXPECT_THAT(preset.output, ::testing::StartsWith("[env]\n"));
  EXPECT_THAT(preset.output, ::testing::HasSubstr("id = 'MinAtar/Breakout-v1'"));
  EXPECT_THAT(preset.output, ::testing::Not(::testing::HasSubstr("[train]")));
  const CommandResult by_path = concord::test::run_shell("cd / && " + std::string(CONCORD_BINARY) +
                                                         " config --config configs/ppo_minatar_breakout.toml env 2>&1");
  EXPECT_EQ(by_path.output, preset.output);
  const CommandResult policies = run_concord("config policy");
  ASSERT_EQ(policies.exit_code, 0) << policies.output;
  EXPECT_THAT(policies.output, ::testing::HasSubstr("[policy.central_inference]\n"));
  EXPECT_THAT(policies.output, ::testing::HasSubstr("[policy.apex]\n"));
  EXPECT_THAT(policies.output, ::testing::Not(::testing::HasSubstr("[algo.ppo]")));
}

// A run that will do nothing, or nearly nothing, says so.
TEST(Cli, RunsThatDoNothingSaySo) {
  const auto root = fresh_dir("no_op");
  const CommandResult short_dqn = run_concord(
      "train --algo dqn --total-timesteps 500 --num-envs 2 --progress off "
      "--run-root " +
      root.string());
  ASSERT_EQ(short_dqn.exit_code, 0) << short_dqn.output;
  EXPECT_THAT(short_dqn.output, ::testing::HasSubstr("the learner will make no update"));
  EXPECT_THAT(short_dqn.output, ::testing::HasSubstr("(algo.dqn.learning_starts)"));
  const auto runs = concord::test::run_directories(root);
  ASSERT_EQ(runs.size(), 1u);
  const CommandResult finished = run_concord("train --resume " + runs.front().string() + " --progress off");
  ASSERT_EQ(finished.exit_code, 0) << finished.output;
  EXPECT_THAT(finished.output, ::testing::HasSubstr("nothing to train: the run is at step 500"));
  // The hint a run prints is a command that runs from here: the program's path, not a bare name.
  EXPECT_THAT(finished.output, ::testing::HasSubstr("evaluate with"));
  EXPECT_THAT(finished.output, ::testing::Not(::testing::HasSubstr(" concord eval")));
  // A learner that its actors starved (apex) is named, with the share of the updates it made.
  EXPECT_EQ(concord::cli::starved_learner_warning(34, 1000, 20000, 10, "policy.apex.max_env_steps_per_update"),
            "the learner made 34 updates in 20000 env steps, 3% of the 1000 that train_frequency=10 asks for: the "
            "actors outran it, and the agent learned from fewer samples per step than configured "
            "(policy.apex.max_env_steps_per_update bounds env steps per update)");
  EXPECT_EQ(concord::cli::starved_learner_warning(300, 1000, 20000, 10, ""), "");
  EXPECT_EQ(concord::cli::starved_learner_warning(0, 30, 400, 10, ""), "");
}

// SIGTERM while a run sets up (here: 300,000 envs, their first rollout and the first update)
// ends it at once, in one line, with the status of the signal: there is nothing to save before
// the first update. (Before, the flag it set was read only after the first update, minutes later.)
TEST(Cli, SigtermDuringSetUpEndsTheRunAtOnce) {
  const auto root = fresh_dir("sigterm_set_up");
  const CommandResult result = concord::test::run_shell(
      "timeout -s KILL 60 timeout --preserve-status -s TERM 4 " + std::string(CONCORD_BINARY) +
      " train --set env.num_envs=300000 --set algo.ppo.num_steps=16 --total-timesteps 1000000000 --progress off "
      "--run-root " +
      root.string() + " 2>&1");
  EXPECT_EQ(result.exit_code, 128 + SIGTERM) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("concord: stopped by a signal before the first update"));
}

}  // namespace
