// learning: does training reach published returns? For each config and each seed it trains in
// this process along `concord train`'s own path (cli::TrainingRun: same config schema, seeding,
// environments, learner and `single` policy), then evaluates the final policy deterministically
// over K episodes as `concord eval` does (policies::evaluate_episodes, environments seeded
// run.seed + 1000). It prints, per config, the mean +- std over seeds of the mean evaluation
// return, each seed's return, the steps and wall time used, and the published reference.
//
//   learning                                   every tuned config, 3 seeds
//   learning --configs configs/ppo_acrobot.toml --seeds 5
//   learning --configs configs/ppo_acrobot.toml --set algo.ppo.update_epochs=4   (one change)
//   learning --quick                           a smoke run: 1 seed, a few updates, 2 episodes

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_run.h"
#include "concord/core/config.h"
#include "concord/core/timer.h"
#include "concord/policies/runtime/evaluation.h"

namespace {

using concord::core::Config;
using concord::policies::runtime::ReturnSummary;

// Published final returns of tuned agents. RL Baselines3 Zoo's benchmark.md: one trained agent
// per row, evaluated deterministically for about 150k steps, quoted, not measured here.
struct Reference {
  const char* env_id;
  const char* algo;
  const char* text;
};
const Reference kReferences[] = {
    {"CartPole-v1", "ppo", "500 (RL Zoo PPO, 100k steps)"},
    {"CartPole-v1", "a2c", "500 (RL Zoo A2C, 500k steps)"},
    {"Acrobot-v1", "ppo", "-73.5 (RL Zoo PPO, 1M steps)"},
    {"Pendulum-v1", "ppo", "-172 (RL Zoo PPO + gSDE, 100k steps)"},
    {"MountainCarContinuous-v0", "ppo", "88.3 (RL Zoo PPO + gSDE, 20k steps)"},
    {"MountainCar-v0", "ppo", "-110 (RL Zoo PPO, normalised, 1M steps)"},
    // MinAtar: last-100-episode training return at 5M frames, read off MinAtar's published figures
    // (DQN, AC(lambda)) and gymnax's PPO at 10M steps; compare the last-100 column.
    {"MinAtar/Asterix-v1", "ppo", "DQN ~17, AC(lambda) ~19.5, gymnax PPO 15 (10M)"},
    {"MinAtar/Breakout-v1", "ppo", "DQN ~10, AC(lambda) ~17.5, gymnax PPO 28 (10M)"},
    {"MinAtar/Freeway-v1", "ppo", "DQN ~50, AC(lambda) ~47, gymnax PPO 58 (10M)"},
    {"MinAtar/Seaquest-v1", "ppo", "DQN ~20, AC(lambda) ~15.5"},
    {"MinAtar/SpaceInvaders-v1", "ppo", "DQN ~45, AC(lambda) ~183, gymnax PPO 131 (10M)"},
    {"CartPole-v1", "dqn", "500 (RL Zoo DQN, 50k steps); CleanRL dqn.py 500k"},
    {"CartPoleNoVel-v1", "ppo", "500 +- 0 (RL Zoo ppo_lstm, 100k steps)"},
    {"CartPoleNoVel-v1", "dqn", "475 (issue 67's bar for R2D2; no published figure)"},
    {"Pendulum-v1", "sac", "-176 (RL Zoo SAC, 20k steps)"},
    {"MountainCarContinuous-v0", "sac", "94.7 +- 1.1 (RL Zoo SAC + gSDE, 50k steps)"},
    {"MinAtar/Asterix-v1", "dqn", "MinAtar DQN ~17 (5M frames)"},
    {"MinAtar/Breakout-v1", "dqn", "MinAtar DQN ~10 (5M frames)"},
    {"MinAtar/Freeway-v1", "dqn", "MinAtar DQN ~50 (5M frames)"},
    {"MinAtar/Seaquest-v1", "dqn", "MinAtar DQN ~20 (5M frames)"},
    {"MinAtar/SpaceInvaders-v1", "dqn", "MinAtar DQN ~45 (5M frames)"},
    // MuJoCo: CleanRL's benchmark of ppo_continuous_action.py on Gymnasium's v4 tasks, 1M steps, the
    // mean over 3 seeds of the training episodes' return at the end (compare the last-100 column).
    {"MuJoCo/HalfCheetah-v5", "ppo", "1442 (CleanRL PPO, v4, 1M steps)"},
    {"MuJoCo/Hopper-v5", "ppo", "2383 (CleanRL PPO, v4, 1M steps)"},
    {"MuJoCo/Walker2d-v5", "ppo", "2288 (CleanRL PPO, v4, 1M steps)"},
};

std::string reference_for(const std::string& env_id, const std::string& algo) {
  for (const Reference& reference : kReferences) {
    if (env_id == reference.env_id && algo == reference.algo) return reference.text;
  }
  return "-";
}

const char* const kDefaultConfigs[] = {
    "configs/ppo_cartpole.toml",
    "configs/a2c_cartpole.toml",
    "configs/ppo_acrobot.toml",
    "configs/ppo_pendulum.toml",
    "configs/ppo_mountain_car_continuous.toml",
    "configs/ppo_mountain_car.toml",
    "configs/dqn_cartpole.toml",
    "configs/sac_pendulum.toml",
    "configs/ppo_lstm_cartpole_novel.toml",
    "configs/r2d2_cartpole_novel.toml",
};

// Not in the default set (1M steps: 3 minutes per seed on a quiet core here, 16 at load 6): name
// them with --configs or --mujoco.
const char* const kMujocoConfigs[] = {
    "configs/ppo_half_cheetah.toml",
    "configs/ppo_hopper.toml",
    "configs/ppo_walker2d.toml",
};

// Not in the default set (5M steps each, minutes per seed): name them with --configs or --minatar.
const char* const kMinAtarConfigs[] = {
    "configs/ppo_minatar_asterix.toml",  "configs/ppo_minatar_breakout.toml",       "configs/ppo_minatar_freeway.toml",
    "configs/ppo_minatar_seaquest.toml", "configs/ppo_minatar_space_invaders.toml",
};
const char* const kMinAtarDqnConfigs[] = {
    "configs/dqn_minatar_asterix.toml",  "configs/dqn_minatar_breakout.toml",       "configs/dqn_minatar_freeway.toml",
    "configs/dqn_minatar_seaquest.toml", "configs/dqn_minatar_space_invaders.toml",
};

struct Options {
  std::vector<std::string> configs;
  int64_t seeds = 3;
  int64_t episodes = 20;
  bool quick = false;
  bool stochastic_eval = false;
  int64_t total_timesteps = 0;         // 0: each config's own
  std::vector<std::string> overrides;  // --set KEY=VALUE, after the config file
};

// One training run and its evaluation.
struct SeedResult {
  int64_t seed = 0;
  double eval_return = 0.0;  // mean over the evaluation episodes
  double last_100 = 0.0;     // mean training return of the last 100 episodes (MinAtar's metric)
  int64_t steps = 0;
  double train_seconds = 0.0;
};

// All seeds of one config.
struct ConfigResult {
  std::string file;
  std::string env_id;
  std::string algo;
  std::vector<SeedResult> seeds;
};

// --quick: enough steps for two updates, so that the whole path (update, statistics, evaluation)
// runs, and nothing is learned. Off-policy algorithms (no num_steps) first fill their replay up to
// learning_starts, and need a batch in it.
int64_t quick_steps(const Config& config) {
  const std::string algo = config.get_string("train.algo");
  const std::string prefix = "algo." + algo + ".";
  if (!config.schema().contains(prefix + "num_steps")) {
    const int64_t starts = std::max(config.get_int(prefix + "learning_starts"), config.get_int(prefix + "batch_size"));
    return starts + 2 * config.get_int(prefix + "train_frequency") * config.get_int("env.num_envs");
  }
  const int64_t per_update = config.get_int("env.num_envs") * config.get_int(prefix + "num_steps");
  return 2 * per_update;
}

SeedResult train_and_evaluate(const std::string& file, int64_t seed, const Options& options) {
  Config config(concord::cli::concord_schema());
  config.merge_file(file);
  config.set("run.seed", seed, "--seeds");
  for (const std::string& assignment : options.overrides) config.apply_override(assignment);
  if (options.total_timesteps > 0) config.set("train.total_timesteps", options.total_timesteps, "--total-timesteps");
  if (options.quick) config.set("train.total_timesteps", quick_steps(config), "--quick");

  concord::core::Stopwatch clock;
  concord::cli::TrainingRun training(config);
  concord::policies::TrainingState state;
  std::vector<double> episode_returns;
  concord::policies::TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double episode_return, int64_t) { episode_returns.push_back(episode_return); };
  training.train(state, callbacks);
  SeedResult result;
  result.seed = seed;
  result.steps = state.global_step;
  result.train_seconds = clock.elapsed_seconds();
  const size_t last = std::min<size_t>(100, episode_returns.size());
  for (size_t i = episode_returns.size() - last; i < episode_returns.size(); ++i) result.last_100 += episode_returns[i];
  if (last > 0) result.last_100 /= static_cast<double>(last);

  concord::envs::VectorEnvConfig eval_env = concord::cli::vector_env_config(config);
  eval_env.seed = static_cast<uint64_t>(seed + concord::policies::runtime::kEvalSeedOffset);
  result.eval_return = concord::policies::runtime::summarize_returns(
                           concord::policies::runtime::evaluate_episodes(training.learner(), eval_env, options.episodes,
                                                                         options.stochastic_eval))
                           .mean;
  return result;
}

std::string format_mean_std(const ReturnSummary& summary) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f +- %.1f", summary.mean, summary.std);
  return text;
}

void print_table(const std::vector<ConfigResult>& results, const Options& options) {
  std::printf("\n%-26s %-4s %-20s %-34s %-16s %9s %9s  %s\n", "env", "algo", "eval return (seeds)", "per seed",
              "last-100 (seeds)", "steps", "time/seed", "reference");
  for (const ConfigResult& result : results) {
    std::vector<double> returns, last_100;
    std::string per_seed;
    double seconds = 0.0;
    int64_t steps = 0;
    for (const SeedResult& seed : result.seeds) {
      returns.push_back(seed.eval_return);
      last_100.push_back(seed.last_100);
      char text[32];
      std::snprintf(text, sizeof(text), "%s%.1f", per_seed.empty() ? "" : " ", seed.eval_return);
      per_seed += text;
      seconds += seed.train_seconds;
      steps = std::max(steps, seed.steps);
    }
    const ReturnSummary summary = concord::policies::runtime::summarize_returns(returns);
    std::printf("%-26s %-4s %-20s %-34s %-16s %9lld %8.1fs  %s\n", result.env_id.c_str(), result.algo.c_str(),
                format_mean_std(summary).c_str(), per_seed.c_str(),
                format_mean_std(concord::policies::runtime::summarize_returns(last_100)).c_str(),
                static_cast<long long>(steps), seconds / static_cast<double>(result.seeds.size()),
                reference_for(result.env_id, result.algo).c_str());
  }
  std::printf(
      "\neval return: %s policy, mean over %lld episodes per seed, then mean +- std (population) "
      "over seeds 1..%lld; last-100: mean training return of each seed's last 100 episodes\n",
      options.stochastic_eval ? "stochastic" : "deterministic", static_cast<long long>(options.episodes),
      static_cast<long long>(options.seeds));
  std::printf("time/seed: training wall time per seed (evaluation excluded); steps: environment steps trained\n");
  std::printf(
      "reference: RL Baselines3 Zoo benchmark.md; MinAtar: the MinAtar paper's figures and gymnax; MuJoCo: CleanRL's "
      "benchmark (quoted, not measured here)\n");
}

int run(const Options& options) {
  std::printf("learning: %zu config(s) x %lld seed(s)%s\n", options.configs.size(),
              static_cast<long long>(options.seeds), options.quick ? ", quick (2 updates each)" : "");
  std::vector<ConfigResult> results;
  for (const std::string& file : options.configs) {
    Config config(concord::cli::concord_schema());
    config.merge_file(file);
    for (const std::string& assignment : options.overrides) config.apply_override(assignment);
    ConfigResult result;
    result.file = file;
    result.env_id = config.get_string("env.id");
    result.algo = config.get_string("train.algo");
    for (int64_t seed = 1; seed <= options.seeds; ++seed) {
      const SeedResult seed_result = train_and_evaluate(file, seed, options);
      std::printf("  %-36s seed %lld: return %8.2f (last 100 training episodes %.2f) after %lld steps in %.1f s\n",
                  std::filesystem::path(file).filename().string().c_str(), static_cast<long long>(seed),
                  seed_result.eval_return, seed_result.last_100, static_cast<long long>(seed_result.steps),
                  seed_result.train_seconds);
      std::fflush(stdout);
      result.seeds.push_back(seed_result);
    }
    results.push_back(std::move(result));
  }
  print_table(results, options);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"learning: train tuned configs over several seeds and compare the final returns with RL Zoo's"};
  Options options;
  app.add_option("--configs", options.configs, "Config files to train (default: every tuned config under configs/)")
      ->delimiter(',')
      ->check(CLI::ExistingFile);
  app.add_option("--seeds", options.seeds, "Seeds 1..N per config")->check(CLI::Range(int64_t{1}, int64_t{100}));
  app.add_option("--episodes", options.episodes, "Evaluation episodes per seed")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  app.add_flag("--quick", options.quick, "Smoke run: 2 updates per config, 1 seed, 2 episodes");
  bool minatar = false;
  app.add_flag("--minatar", minatar, "Train the five MinAtar configs instead of the default set");
  bool mujoco = false;
  app.add_flag("--mujoco", mujoco, "Train the three MuJoCo PPO configs (CleanRL's settings, 1M steps) instead");
  bool minatar_dqn = false;
  app.add_flag("--minatar-dqn", minatar_dqn, "Train the five MinAtar DQN configs instead of the default set");
  app.add_flag("--stochastic-eval", options.stochastic_eval, "Evaluate with sampled actions instead of the mode");
  app.add_option("--total-timesteps", options.total_timesteps, "Train every config this many steps (0: its own)");
  app.add_option("--set", options.overrides, "KEY=VALUE over every config, as concord train's --set (repeatable)");
  CLI11_PARSE(app, argc, argv);
  if (options.quick) {
    if (app.count("--seeds") == 0) options.seeds = 1;
    if (app.count("--episodes") == 0) options.episodes = 2;
  }
  if (options.configs.empty() && minatar_dqn) {
    for (const char* file : kMinAtarDqnConfigs) options.configs.push_back(std::string(CONCORD_SOURCE_DIR) + "/" + file);
  }
  if (options.configs.empty() && mujoco) {
    for (const char* file : kMujocoConfigs) options.configs.push_back(std::string(CONCORD_SOURCE_DIR) + "/" + file);
  }
  if (options.configs.empty() && minatar) {
    for (const char* file : kMinAtarConfigs) options.configs.push_back(std::string(CONCORD_SOURCE_DIR) + "/" + file);
  }
  if (options.configs.empty()) {
    for (const char* file : kDefaultConfigs) options.configs.push_back(std::string(CONCORD_SOURCE_DIR) + "/" + file);
  }
  try {
    return run(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "learning: error: %s\n", error.what());
    return 1;
  }
}
