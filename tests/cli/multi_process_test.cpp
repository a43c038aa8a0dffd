// `concord train --policy multi_learner` as real processes on loopback, started with torchrun's
// variables as `concord launch` or torchrun would: learning, rank 0 owning the run directory,
// resume, and the start-up refusals (a peer that never joins, configs that differ, a
// single-process policy under a launcher); actor_processes and apex with actors in processes.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/concord_process.h"
#include "comm/rank_processes.h"
#include "concord/core/checkpoint.h"
#include "learning_outcome.h"

namespace {

using ::testing::HasSubstr;

const std::string kCartPoleConfig = std::string(CONCORD_SOURCE_DIR) + "/configs/ppo_cartpole.toml";

std::vector<std::string> train_arguments(const std::filesystem::path& root, const std::string& extra) {
  std::vector<std::string> arguments{"train", "--progress", "off", "--run-root", root.string()};
  std::istringstream words(extra);
  for (std::string word; words >> word;) arguments.push_back(word);
  return arguments;
}

// Starts `world_size` ranks of `concord <arguments>`; per_rank_extra[r] is appended to rank r's.
std::vector<concord::test::RankResult> run_training_ranks(int world_size, const std::filesystem::path& root,
                                                          const std::string& extra,
                                                          std::map<int, std::string> per_rank_extra = {},
                                                          std::map<std::string, std::string> variables = {}) {
  const int port = concord::test::free_port();
  std::vector<concord::test::RankProcess> processes;
  for (int rank = 0; rank < world_size; ++rank) {
    auto rank_vars = concord::test::rank_variables(rank, world_size, port);
    for (const auto& [name, value] : variables) rank_vars[name] = value;
    processes.push_back(concord::test::start_process(CONCORD_BINARY,
                                                     train_arguments(root, extra + " " + per_rank_extra[rank]),
                                                     rank_vars, root / ("rank" + std::to_string(rank) + ".log")));
  }
  std::vector<concord::test::RankResult> results;
  for (const auto& process : processes)
    results.push_back(concord::test::finish_rank(process, std::chrono::seconds(240)));
  return results;
}

using concord::test::run_directories;

double eval_mean_return(const std::string& output) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("return (-?[0-9.]+) \\+- "))) return -1e9;
  return std::stod(match[1]);
}

// The shipped PPO config under multi_learner, its 8 envs split over 2 processes. At 40,000 steps
// 7 of 20 seed-kernel runs of the sweep in bench/RESULTS.md ended between 117 and 145, at 100,000
// 1 of 8; at 150,000 every run tried cleared the bar.
TEST(MultiProcessLearning, TwoRanksLearnCartPoleAndRank0OwnsTheRun) {
  const auto train_and_evaluate = [](uint64_t seed) {
    const auto root = concord::test::fresh_dir("multi_process", "learn" + std::to_string(seed));
    const auto ranks =
        run_training_ranks(2, root,
                           "--config " + kCartPoleConfig + " --policy multi_learner --total-timesteps 150000 --seed " +
                               std::to_string(seed));
    EXPECT_EQ(ranks[0].exit_code, 0) << ranks[0].output;
    EXPECT_EQ(ranks[1].exit_code, 0) << ranks[1].output;
    EXPECT_THAT(ranks[0].output, HasSubstr("8 envs in all, 2 ranks"));
    EXPECT_THAT(ranks[1].output, HasSubstr("rank 1 of 2"));
    const auto dirs = run_directories(root);
    EXPECT_EQ(dirs.size(), 1u) << "only rank 0 writes a run directory";
    if (dirs.size() != 1u) return -1e9;
    const concord::test::CommandResult eval = concord::test::run_concord("eval " + dirs[0].string() + " --episodes 20");
    EXPECT_EQ(eval.exit_code, 0) << eval.output;
    return eval_mean_return(eval.output);
  };
  EXPECT_TRUE(concord::test::learns(train_and_evaluate, concord::test::LearningBar{150.0}));
}

// Ape-X with its actors in processes: `concord launch -n 3` of the apex preset makes rank 0 the
// learner and ranks 1 and 2 the actors (Ape-X's epsilons 0.4 and 0.4^8), at most 2 env steps per
// update (as the threads' learning test, apex_test.cpp), transitions in segments of 50 steps.
TEST(MultiProcessLearning, ApexActorRanksFeedALearnerThatLearnsCartPole) {
  const auto train_and_evaluate = [](uint64_t seed) {
    const auto root = concord::test::fresh_dir("multi_process", "apex" + std::to_string(seed));
    const std::string config = std::string(CONCORD_SOURCE_DIR) + "/configs/dqn_apex_cartpole.toml";
    const auto ranks =
        run_training_ranks(3, root,
                           "--config " + config + " --total-timesteps 30000 --seed " + std::to_string(seed) +
                               " --set policy.apex.max_env_steps_per_update=2 --set policy.apex.refresh_every=50 --set "
                               "algo.dqn.target_network_frequency=250 --set comm.timeout_seconds=30");
    for (const auto& rank : ranks) EXPECT_EQ(rank.exit_code, 0) << rank.output;
    EXPECT_THAT(ranks[0].output, HasSubstr("4 envs in all, 3 ranks, policy apex"));
    const auto dirs = run_directories(root);
    EXPECT_EQ(dirs.size(), 1u) << "only rank 0 writes a run directory";
    if (dirs.size() != 1u) return -1e9;
    const auto header = concord::core::read_checkpoint_header(dirs[0] / "checkpoint.ckpt");
    EXPECT_EQ(header.at("metadata").at("global_step").get<int64_t>(), 30000);
    const concord::test::CommandResult eval = concord::test::run_concord("eval " + dirs[0].string() + " --episodes 10");
    EXPECT_EQ(eval.exit_code, 0) << eval.output;
    return eval_mean_return(eval.output);
  };
  EXPECT_TRUE(concord::test::learns(train_and_evaluate, concord::test::LearningBar{80.0}));
}

// `concord launch -n 3` of `train` (a `concord train` command writing under run_root), whose rank
// 2's shell kills its own `concord` with SIGKILL once rank 0 has written two metrics records.
concord::test::CommandResult launch_killing_rank_2(const std::string& run_root, const std::string& train) {
  const std::string script = "if [ $RANK = 2 ]; then (i=0; until [ \"$(cat " + run_root +
                             "/*/metrics.csv 2>/dev/null | wc -l)\" -ge 3 ] || "
                             "[ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; kill -KILL $$) & fi; exec " +
                             train;
  return concord::test::run_concord("launch -n 3 -- sh -c '" + script + "'");
}

// Ape-X's actors are interchangeable: under `concord launch`, an actor rank killed with SIGKILL
// mid-run is dropped by rank 0 (policy.apex.on_actor_failure = "continue", the default), the
// launcher lets the run go on, and the other actor takes it to its end.
TEST(MultiProcess, ConcordLaunchLetsApexOutliveAKilledActor) {
  const auto root = concord::test::fresh_dir("multi_process", "launch_apex_actor_killed");
  const std::string r = root.string();
  const std::string config = std::string(CONCORD_SOURCE_DIR) + "/configs/dqn_apex_cartpole.toml";
  const std::string train = std::string(CONCORD_BINARY) + " train --config " + config +
                            " --total-timesteps 20000 --set comm.timeout_seconds=20 --progress off --run-root " + r;
  const concord::test::CommandResult launched = launch_killing_rank_2(r, train);
  EXPECT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_THAT(launched.output, HasSubstr("policy 'apex': actor rank 2 failed: "));
  EXPECT_THAT(launched.output, HasSubstr("it was dropped (1 actor(s) left)"));
  EXPECT_THAT(launched.output, HasSubstr("was killed by signal 9 (SIGKILL); the run goes on without it"));
  const auto dirs = run_directories(root);
  ASSERT_EQ(dirs.size(), 1u);
  const auto header = concord::core::read_checkpoint_header(dirs[0] / "checkpoint.ckpt");
  EXPECT_EQ(header.at("metadata").at("global_step").get<int64_t>(), 20000);
}

// Under a launcher, apex runs one actor per rank after the learner: a count that disagrees is
// refused on every rank in one line.
TEST(MultiProcess, ApexRefusesActorsThatDisagreeWithTheRanks) {
  const auto root = concord::test::fresh_dir("multi_process", "apex_refusal");
  const std::string config = std::string(CONCORD_SOURCE_DIR) + "/configs/dqn_apex_cartpole.toml";
  const auto ranks =
      run_training_ranks(3, root, "--config " + config + " --set policy.apex.actors=4 --set env.num_envs=4");
  for (const auto& rank : ranks) {
    EXPECT_NE(rank.exit_code, 0);
    EXPECT_THAT(rank.output, HasSubstr("3 ranks make 2 actors, but policy.apex.actors = 4; set it to 2 or launch 5 "
                                       "ranks"));
  }
}

TEST(MultiProcess, ResumeContinuesFromTheGlobalStep) {
  const auto root = concord::test::fresh_dir("multi_process", "resume");
  // 8 envs in all x 32 steps = 256 global steps per update.
  auto ranks =
      run_training_ranks(2, root, "--config " + kCartPoleConfig + " --policy multi_learner --total-timesteps 2048");
  ASSERT_EQ(ranks[0].exit_code, 0) << ranks[0].output;
  ASSERT_EQ(ranks[1].exit_code, 0) << ranks[1].output;
  const auto dirs = run_directories(root);
  ASSERT_EQ(dirs.size(), 1u);
  const int port = concord::test::free_port();
  std::vector<concord::test::RankProcess> processes;
  for (int rank = 0; rank < 2; ++rank) {
    processes.push_back(concord::test::start_process(
        CONCORD_BINARY, {"train", "--resume", dirs[0].string(), "--total-timesteps", "4096", "--progress", "off"},
        concord::test::rank_variables(rank, 2, port), root / ("resume" + std::to_string(rank) + ".log")));
  }
  const auto rank0 = concord::test::finish_rank(processes[0], std::chrono::seconds(120));
  const auto rank1 = concord::test::finish_rank(processes[1], std::chrono::seconds(120));
  ASSERT_EQ(rank0.exit_code, 0) << rank0.output;
  ASSERT_EQ(rank1.exit_code, 0) << rank1.output;
  EXPECT_THAT(rank0.output, HasSubstr("resumed at step 2048"));
  EXPECT_THAT(rank0.output, HasSubstr("4,096"));
  // A rank that counts steps names the step it ended at (one that counts none says only "done").
  EXPECT_THAT(rank1.output, HasSubstr("rank 1 done at step 4096"));
}

TEST(MultiProcess, APeerThatNeverJoinsIsNamed) {
  const auto root = concord::test::fresh_dir("multi_process", "never_joins");
  const int port = concord::test::free_port();
  const auto rank0 = concord::test::finish_rank(
      concord::test::start_process(CONCORD_BINARY,
                                   train_arguments(root, "--policy multi_learner --set comm.timeout_seconds=1.5"),
                                   concord::test::rank_variables(0, 3, port), root / "rank0.log"),
      std::chrono::seconds(60));
  EXPECT_EQ(rank0.exit_code, 1);
  EXPECT_THAT(rank0.output, HasSubstr("concord: error: rendezvous at 127.0.0.1:" + std::to_string(port) +
                                      ": rank(s) 1, 2 of WORLD_SIZE=3 never joined within 1.500 s"));
}

TEST(MultiProcess, RanksWithDifferentConfigsAreRefused) {
  const auto root = concord::test::fresh_dir("multi_process", "mismatch");
  const auto ranks = run_training_ranks(2, root, "--policy multi_learner --set comm.timeout_seconds=20",
                                        {{0, "--seed 1"}, {1, "--seed 2"}});
  for (const auto& rank : ranks) {
    EXPECT_EQ(rank.exit_code, 1);
    EXPECT_THAT(rank.output, HasSubstr("config mismatch"));
  }
  EXPECT_TRUE(run_directories(root).empty());
}

TEST(MultiProcess, ASingleProcessPolicyUnderALauncherIsRefused) {
  const auto root = concord::test::fresh_dir("multi_process", "single");
  const auto rank0 = concord::test::finish_rank(
      concord::test::start_process(CONCORD_BINARY, train_arguments(root, "--policy single"),
                                   concord::test::rank_variables(0, 2, concord::test::free_port()), root / "rank0.log"),
      std::chrono::seconds(60));
  EXPECT_EQ(rank0.exit_code, 1);
  EXPECT_THAT(rank0.output, HasSubstr("policy 'single' runs in one process, but this is rank 0 of WORLD_SIZE=2"));
}

TEST(MultiProcess, WithoutALauncherMultiLearnerIsAWorldOfOne) {
  const auto root = concord::test::fresh_dir("multi_process", "world_of_one");
  const concord::test::CommandResult train = concord::test::run_concord(
      "train --policy multi_learner --total-timesteps 2048 --progress off --run-root " + root.string());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_EQ(run_directories(root).size(), 1u);
}

TEST(MultiProcess, ActorProcessesSurviveAnActorKilledMidRun) {
  const auto root = concord::test::fresh_dir("multi_process", "actor_killed");
  const int port = concord::test::free_port();
  std::vector<concord::test::RankProcess> processes;
  for (int rank = 0; rank < 3; ++rank) {
    processes.push_back(concord::test::start_process(
        CONCORD_BINARY,
        train_arguments(root, "--config " + kCartPoleConfig +
                                  " --policy actor_processes --total-timesteps 60000 --set comm.timeout_seconds=20"),
        concord::test::rank_variables(rank, 3, port), root / ("rank" + std::to_string(rank) + ".log")));
  }
  // Once training runs (the learner's first update: every rank has joined), kill actor 2 without
  // warning.
  EXPECT_TRUE(concord::test::wait_for_metrics_rows(root, 1, std::chrono::seconds(120)));
  ::kill(processes[2].pid, SIGKILL);
  const auto rank0 = concord::test::finish_rank(processes[0], std::chrono::seconds(180));
  const auto rank1 = concord::test::finish_rank(processes[1], std::chrono::seconds(60));
  const auto rank2 = concord::test::finish_rank(processes[2], std::chrono::seconds(10));
  EXPECT_EQ(rank2.exit_code, -SIGKILL);
  ASSERT_EQ(rank0.exit_code, 0) << rank0.output;
  EXPECT_EQ(rank1.exit_code, 0) << rank1.output;
  EXPECT_THAT(rank0.output, HasSubstr("actor rank 2 failed and was dropped (1 actor(s) left)"));
  const auto dirs = run_directories(root);
  ASSERT_EQ(dirs.size(), 1u);
  const concord::test::CommandResult eval = concord::test::run_concord("eval " + dirs[0].string() + " --episodes 3");
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
}

// Under `concord launch`, an actor killed with SIGKILL is dropped by rank 0 (on_actor_failure =
// "continue", the default) and the launcher lets the run go on to its end. Rank 2's shell kills
// its own `concord` once rank 0 has logged two updates.
TEST(MultiProcess, ConcordLaunchLetsActorProcessesSurviveAKilledActor) {
  const auto root = concord::test::fresh_dir("multi_process", "launch_actor_killed");
  const std::string r = root.string();
  const std::string train = std::string(CONCORD_BINARY) + " train --config " + kCartPoleConfig +
                            " --policy actor_processes --total-timesteps 30000 --set comm.timeout_seconds=20 "
                            "--progress off --run-root " +
                            r;
  const concord::test::CommandResult launched = launch_killing_rank_2(r, train);
  EXPECT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_THAT(launched.output, HasSubstr("actor rank 2 failed and was dropped (1 actor(s) left)"));
  EXPECT_THAT(launched.output, HasSubstr("was killed by signal 9 (SIGKILL); the run goes on without it"));
  const auto dirs = run_directories(root);
  ASSERT_EQ(dirs.size(), 1u);
  const auto header = concord::core::read_checkpoint_header(dirs[0] / "checkpoint.ckpt");
  EXPECT_GE(header.at("metadata").at("global_step").get<int64_t>(), 30000);
}

// A SIGSTOPped actor neither dies nor closes its connection. The learner names it within half of
// comm.timeout_seconds and trains on with the other actor, which never times out meanwhile; once
// rank 0 is done the launcher stops the stalled rank after the grace period, and the run succeeds.
TEST(MultiProcess, ConcordLaunchLetsActorProcessesOutliveAStalledActor) {
  const auto root = concord::test::fresh_dir("multi_process", "launch_actor_stalled");
  const std::string r = root.string();
  const std::string train = std::string(CONCORD_BINARY) + " train --config " + kCartPoleConfig +
                            " --policy actor_processes --total-timesteps 30000 --set comm.timeout_seconds=8 "
                            "--progress off --run-root " +
                            r;
  const std::string script = "if [ $RANK = 2 ]; then (i=0; until [ \"$(cat " + r +
                             "/*/metrics.csv 2>/dev/null | wc -l)\" -ge 3 ] || "
                             "[ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; kill -STOP $$) & fi; exec " +
                             train;
  const concord::test::CommandResult launched =
      concord::test::run_concord("launch -n 3 --grace-seconds 2 -- sh -c '" + script + "'");
  EXPECT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_THAT(launched.output, HasSubstr("actor rank 2 failed and was dropped (1 actor(s) left): "));
  EXPECT_THAT(launched.output, HasSubstr("within 4.000000 s (half of comm.timeout_seconds)"));
  EXPECT_THAT(launched.output, HasSubstr("still running 2 s after rank 0 finished; stopping it"));
  EXPECT_THAT(launched.output, ::testing::Not(HasSubstr("[rank 1] concord: error")));
  const auto dirs = run_directories(root);
  ASSERT_EQ(dirs.size(), 1u);
  const auto header = concord::core::read_checkpoint_header(dirs[0] / "checkpoint.ckpt");
  EXPECT_GE(header.at("metadata").at("global_step").get<int64_t>(), 30000);
}

// `concord launch --max-restarts` survives two SIGKILLs of a multi_learner rank: rank 0 in the
// first group, rank 1 in the second, each once the run is some updates past a checkpoint. Each
// group after restarts from rank 0's last checkpoint; the run ends with the full step count, one
// run directory, metrics whose steps only go up, and a checkpoint that `eval` accepts.
TEST(MultiProcess, ConcordLaunchRestartsAfterTwoKilledRanksAndFinishes) {
  const auto root = concord::test::fresh_dir("multi_process", "launch_restarts");
  const std::string r = root.string();
  const std::string train = std::string(CONCORD_BINARY) + " train --config " + kCartPoleConfig +
                            " --policy multi_learner --total-timesteps 20480 "
                            "--set train.checkpoint_interval_steps=1024 --set comm.timeout_seconds=20 "
                            "--progress off --run-root " +
                            r;
  // 256 steps an update, a row each: the kills come at 19 rows (step 4864) and 49 (12544).
  const std::string script =
      "if [ $TORCHELASTIC_RESTART_COUNT -lt 2 ] && [ $RANK = $TORCHELASTIC_RESTART_COUNT ]; then "
      "rows=$((20 + 30 * TORCHELASTIC_RESTART_COUNT)); (i=0; until [ \"$(cat " +
      r +
      "/*/metrics.csv 2>/dev/null | wc -l)\" -ge $rows ] || [ $i -ge 1200 ]; do sleep 0.05; i=$((i+1)); done; "
      "kill -KILL $$) & fi; exec " +
      train;
  const concord::test::CommandResult launched =
      concord::test::run_concord("launch -n 2 --max-restarts 2 --grace-seconds 2 -- sh -c '" + script + "'");
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_THAT(launched.output, HasSubstr("restart 1 of 2: rank 0 (pid "));
  EXPECT_THAT(launched.output, HasSubstr("restart 2 of 2: rank 1 (pid "));
  EXPECT_EQ(launched.output.find("restart 3"), std::string::npos) << launched.output;
  const auto dirs = run_directories(root);
  ASSERT_EQ(dirs.size(), 1u) << launched.output;
  const auto header = concord::core::read_checkpoint_header(dirs[0] / "checkpoint.ckpt");
  EXPECT_EQ(header.at("metadata").at("global_step").get<int64_t>(), 20480);
  EXPECT_EQ(header.at("metadata").at("updates").get<int64_t>(), 80);

  std::vector<int64_t> expected;
  for (int64_t step = 256; step <= 20480; step += 256) expected.push_back(step);
  EXPECT_EQ(concord::test::csv_steps(dirs[0]), expected);

  const concord::test::CommandResult eval = concord::test::run_concord("eval " + dirs[0].string() + " --episodes 2");
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
}

TEST(MultiProcess, ConcordLaunchRunsMultiLearner) {
  const auto root = concord::test::fresh_dir("multi_process", "launch");
  const concord::test::CommandResult launched = concord::test::run_concord(
      "launch -n 2 -- concord train --policy multi_learner --total-timesteps 4096 --progress off --run-root " +
      root.string());
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_THAT(launched.output, HasSubstr("[rank 1] "));
  EXPECT_THAT(launched.output, HasSubstr("in all, 2 ranks"));
  EXPECT_EQ(run_directories(root).size(), 1u);
}

TEST(MultiProcess, MpirunRanksComeFromOpenMpiVariables) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  const auto root = concord::test::fresh_dir("multi_process", "mpirun");
  const std::string command =
      "mpirun --allow-run-as-root --oversubscribe -n 2 -x MASTER_PORT=" + std::to_string(concord::test::free_port()) +
      " " + CONCORD_BINARY + " train --policy multi_learner --total-timesteps 4096 --progress off --run-root " +
      root.string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (size_t read; (read = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, read);
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_THAT(output, HasSubstr("in all, 2 ranks"));
  EXPECT_EQ(run_directories(root).size(), 1u);
}

}  // namespace
