// The verdict at the end of `concord train`: its lines, exactly as a user reads them.
#include "concord/cli/training_verdict.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/concord_process.h"

namespace {

using concord::cli::never_left_start;
using concord::cli::presets_not_given;
using concord::cli::ReturnTrack;
using concord::cli::SummaryLine;
using concord::cli::training_verdict;
using concord::cli::VerdictFacts;

// Episodes with these returns, sampled as an update would after each group.
ReturnTrack track(const std::vector<std::vector<double>>& groups) {
  ReturnTrack returns;
  for (const auto& group : groups) {
    for (double value : group) returns.add_episode(value, 10);
    returns.sample();
  }
  returns.finish();
  return returns;
}

std::string text_of(const std::vector<SummaryLine>& lines, const std::string& label) {
  std::string text;
  for (const SummaryLine& line : lines) {
    if (line.label == label) text += (text.empty() ? "" : " | ") + line.text;
  }
  return text;
}

VerdictFacts cartpole_facts() {
  VerdictFacts facts;
  facts.steps = 100096;
  facts.updates = 391;
  facts.reward_threshold = 475.0;
  facts.update_schedule = "each takes algo.ppo.num_steps x env.num_envs = 128 x 8 = 1,024 env steps";
  facts.sooner_settings = "algo.ppo.num_steps";
  return facts;
}

TEST(TrainingVerdict, SolvedRunReportsReturnsAndThreshold) {
  VerdictFacts facts = cartpole_facts();
  facts.returns = track({{20.0, 24.0}, {300.0, 500.0, 500.0}, {500.0}});
  const auto lines = training_verdict(facts);
  ASSERT_EQ(lines.size(), 2u);
  // Means over the latest episodes at each update: 22, then 1344/5 = 268.8, then 1844/6 = 307.3.
  EXPECT_EQ(text_of(lines, "return"),
            "last 307.3, best 307.3, first 22.0 (mean of the latest 6 episodes, at each update)");
  EXPECT_EQ(text_of(lines, "threshold"),
            "475: not reached in training (best 307.3; training explores, concord eval measures the greedy policy)");
  EXPECT_EQ(text_of(lines, "warning"), "");
}

TEST(TrainingVerdict, ThresholdReachedByTheBestMeanAndWindowOfOneHundred) {
  VerdictFacts facts = cartpole_facts();
  std::vector<double> early(150, 20.0);
  std::vector<double> late(100, 500.0);
  std::vector<double> worse(10, 400.0);
  facts.returns = track({early, late, worse});
  const auto lines = training_verdict(facts);
  EXPECT_EQ(text_of(lines, "return"),
            "last 490.0, best 500.0, first 20.0 (mean of the latest 100 of 260 episodes, at each update)");
  EXPECT_EQ(text_of(lines, "threshold"), "475: reached");
  EXPECT_EQ(text_of(lines, "warning"), "");
}

TEST(TrainingVerdict, NoUpdateSaysWhatToChange) {
  VerdictFacts facts;
  facts.steps = 500;
  facts.updates = 0;
  facts.reward_threshold = 475.0;
  facts.update_schedule = "the first comes after algo.dqn.learning_starts=1000 env steps";
  facts.sooner_settings = "algo.dqn.learning_starts";
  facts.returns = track({{20.0, 1.0}});
  const auto lines = training_verdict(facts);
  EXPECT_EQ(text_of(lines, "return"), "last 10.5, best 10.5, first 10.5 (mean of the latest 2 episodes)");
  EXPECT_EQ(text_of(lines, "warning"),
            "the learner made no update in 500 env steps (the first comes after algo.dqn.learning_starts=1000 env "
            "steps), so the agent is untrained: train for more steps (--total-timesteps) or lower "
            "algo.dqn.learning_starts");
}

TEST(TrainingVerdict, OneUpdateIsSingularAndBarelyTrained) {
  VerdictFacts facts = cartpole_facts();
  facts.steps = 1024;
  facts.updates = 1;
  facts.returns = track({{20.0}});
  EXPECT_EQ(text_of(training_verdict(facts), "warning"),
            "the learner made only 1 update in 1,024 env steps (each takes algo.ppo.num_steps x env.num_envs = 128 x "
            "8 = 1,024 env steps), so the agent has barely trained: train for more steps (--total-timesteps) or "
            "lower algo.ppo.num_steps");
}

TEST(TrainingVerdict, NoEpisodeEnded) {
  VerdictFacts facts;
  facts.steps = 1;
  facts.updates = 12;
  facts.reward_threshold = 475.0;
  const auto lines = training_verdict(facts);
  EXPECT_EQ(text_of(lines, "return"), "no episode ended in 1 env step");
  EXPECT_EQ(text_of(lines, "threshold"), "475: not reached (no episode ended)");
  EXPECT_EQ(text_of(lines, "warning"), "");
}

TEST(TrainingVerdict, ReturnThatNeverLeftTheStartSuggestsPresets) {
  VerdictFacts facts;
  facts.steps = 100000;
  facts.updates = 48;
  facts.reward_threshold = -110.0;
  facts.presets = {"ppo_mountain_car"};
  facts.returns = track({{-200.0}, {-200.0}, {-199.0}});
  const auto lines = training_verdict(facts);
  EXPECT_EQ(text_of(lines, "threshold"),
            "-110: not reached in training (best -199.7; training explores, concord eval measures the greedy policy)");
  EXPECT_EQ(text_of(lines, "warning"),
            "the mean return never left the untrained policy's level (first -200.0, best -199.7), so the agent "
            "learned nothing visible: train for more steps (--total-timesteps) or start from a shipped preset for "
            "this env (--config ppo_mountain_car)");
}

TEST(TrainingVerdict, DoesNotSuggestThePresetTheRunWasGiven) {
  const std::vector<std::string> cartpole{"a2c_cartpole", "dqn_apex_cartpole", "dqn_cartpole", "ppo_cartpole"};
  EXPECT_EQ(presets_not_given(cartpole, {"dqn_apex_cartpole"}),
            (std::vector<std::string>{"a2c_cartpole", "dqn_cartpole", "ppo_cartpole"}));
  EXPECT_EQ(presets_not_given(cartpole, {"/x/configs/ppo_cartpole.toml", "mine.toml"}),
            (std::vector<std::string>{"a2c_cartpole", "dqn_apex_cartpole", "dqn_cartpole"}));
  EXPECT_EQ(presets_not_given(cartpole, {}), cartpole);
}

TEST(TrainingVerdict, NeverLeftStartMargins) {
  // A tenth of the way to the threshold: 9 of CartPole's 453 from 22 is not learning, 50 is.
  EXPECT_TRUE(never_left_start(22.0, 31.0, 475.0));
  EXPECT_FALSE(never_left_start(22.0, 72.0, 475.0));
  // No threshold: a tenth of |first|, at least 0.5 (MinAtar's rewards are whole numbers).
  EXPECT_TRUE(never_left_start(-1200.0, -1100.0, std::nullopt));
  EXPECT_FALSE(never_left_start(-1200.0, -200.0, std::nullopt));
  EXPECT_TRUE(never_left_start(0.0, 0.4, std::nullopt));
  EXPECT_FALSE(never_left_start(0.0, 2.0, std::nullopt));
  // A threshold already below the start: judged without it.
  EXPECT_TRUE(never_left_start(10.0, 10.5, 5.0));
}

TEST(TrainingVerdict, Plurals) {
  EXPECT_EQ(concord::cli::counted(1, "update", "updates"), "1 update");
  EXPECT_EQ(concord::cli::counted(0, "update", "updates"), "0 updates");
  EXPECT_EQ(concord::cli::counted(12345, "env", "envs"), "12,345 envs");
}

// The end of a real run: `concord train` prints the verdict and keeps it in log.txt.
TEST(TrainVerdict, DqnWithoutUpdatesWarnsOnScreenAndInTheLog) {
  const auto root = concord::test::fresh_dir("training_verdict_test", "dqn500");
  const concord::test::CommandResult train = concord::test::run_concord(
      "train --algo dqn --num-envs 4 --total-timesteps 500 --progress off --run-root " + root.string());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string warning =
      "warning          the learner made no update in 500 env steps (the first comes after "
      "algo.dqn.learning_starts=10000 env steps), so the agent is untrained: train for more steps "
      "(--total-timesteps) or lower algo.dqn.learning_starts\n";
  EXPECT_THAT(train.output, ::testing::HasSubstr("steps            500 (0 updates)\n"));
  EXPECT_THAT(train.output, ::testing::HasSubstr(warning));
  EXPECT_THAT(train.output, ::testing::HasSubstr("threshold        475: not reached"));
  EXPECT_THAT(train.output, ::testing::HasSubstr("(4 envs, policy single"));
  const std::vector<std::filesystem::path> runs = concord::test::run_directories(root);
  ASSERT_EQ(runs.size(), 1u);
  std::ifstream log(runs[0] / "log.txt");
  const std::string logged{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  EXPECT_THAT(logged, ::testing::HasSubstr("trained          dqn on CartPole-v1\n"));
  EXPECT_THAT(logged, ::testing::HasSubstr(warning));
}

}  // namespace
