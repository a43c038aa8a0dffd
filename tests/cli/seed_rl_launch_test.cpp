// `concord launch -n 3 -- concord train --policy seed_rl`: real processes on loopback, ranks 1
// and 2 stepping the envs, rank 0 acting for all of them and learning. PPO and DQN learn
// CartPole-v1 to the bars they clear under `single` (train_test.cpp, off_policy_learn_test.cpp),
// and only rank 0 writes the run. Rank 0's loop is `single`'s, exactly (seed_rl_test.cpp shows it
// to the bit), so these tests check the processes' wiring, not the algorithm: one seed must clear
// the bar, a second is tried only if the first does not (every env step is a round trip between
// processes, the suite's dearest kind of step).
#include <filesystem>
#include <regex>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/concord_process.h"
#include "concord/core/checkpoint.h"
#include "learning_outcome.h"

namespace {

using ::testing::HasSubstr;

double eval_mean_return(const std::string& output) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("return (-?[0-9.]+) \\+- "))) return -1e9;
  return std::stod(match[1]);
}

// Launches `concord train <flags> --policy seed_rl` on 3 ranks, then evaluates rank 0's run.
double launch_and_evaluate(const std::string& name, const std::string& flags, int64_t steps, uint64_t seed,
                           int episodes) {
  const auto root = concord::test::fresh_dir("seed_rl_launch", name + std::to_string(seed));
  const concord::test::CommandResult launched = concord::test::run_concord(
      "launch -n 3 -- concord train " + flags + " --policy seed_rl --total-timesteps " + std::to_string(steps) +
      " --seed " + std::to_string(seed) + " --progress off --run-root " + root.string());
  EXPECT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_THAT(launched.output, HasSubstr("in all, 3 ranks, policy seed_rl"));
  const auto dirs = concord::test::run_directories(root);
  EXPECT_EQ(dirs.size(), 1u) << "only rank 0 writes a run directory";
  if (dirs.size() != 1u) return -1e9;
  const auto header = concord::core::read_checkpoint_header(dirs[0] / "checkpoint.ckpt");
  EXPECT_GE(header.at("metadata").at("global_step").get<int64_t>(), steps);  // whole rollouts
  const concord::test::CommandResult eval =
      concord::test::run_concord("eval " + dirs[0].string() + " --episodes " + std::to_string(episodes));
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  return eval_mean_return(eval.output);
}

// The shipped PPO config (8 envs: 4 per actor rank) at train_test.cpp's budget and bar.
TEST(SeedRlLaunchLearning, PpoLearnsCartPole) {
  const std::string config = std::string(CONCORD_SOURCE_DIR) + "/configs/ppo_cartpole.toml";
  EXPECT_TRUE(concord::test::learns(
      [&](uint64_t seed) { return launch_and_evaluate("ppo", "--config " + config, 100'000, seed, 20); },
      concord::test::LearningBar{150.0, 2, 1}));
}

// off_policy_learn_test.cpp's fast DQN (a gradient step every env step from 1,000 on), 4 envs as
// its sync_vector case: two per actor rank.
TEST(SeedRlLaunchLearning, DqnLearnsCartPole) {
  const std::string flags =
      "--algo dqn --env CartPole-v1 --num-envs 4 --set algo.hidden_sizes=[64,64] --set algo.activation=relu "
      "--set algo.dqn.learning_starts=1000 --set algo.dqn.train_frequency=1 --set algo.dqn.batch_size=64 "
      "--set algo.dqn.learning_rate=1e-3 --set algo.dqn.target_network_frequency=250 "
      "--set algo.dqn.exploration_fraction=0.3";
  EXPECT_TRUE(concord::test::learns([&](uint64_t seed) { return launch_and_evaluate("dqn", flags, 30'000, seed, 10); },
                                    concord::test::LearningBar{80.0, 2, 1}));
}

}  // namespace
