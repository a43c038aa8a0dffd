// exploration: does the count-based bonus (explore/, Tang et al. 2017) explore where the plain
// agent cannot? Every run trains along `concord train`'s own path (cli::TrainingRun) with PPO.
//
// DeepSea(N), bsuite's criterion: a dithering agent needs about 2^N episodes to see the
// treasure once. For each N, bonus and seed it reports the episode that first reached the
// treasure, and whether the agent solved the task: 90 of its last 100 episodes reach it (the
// run stops there, or at the episode budget).
//
// Sparse MountainCar, CartPole swing-up and the sparse half-cheetah (MuJoCo/SparseHalfCheetah-v0,
// 1 per step with the centre of mass past 5 m): success rate and mean return of the final greedy
// policy (20 evaluation episodes per seed), for no bonus, SimHash with k in {16, 64, 256}, and
// AE-SimHash (--variants picks some). The cheetah observes its x (the 18-wide observation, as
// VIME's and #Exploration's rllab cheetah observed its centre of mass) and its observations are
// normalised for the policy; the hash sees them raw.
//
// Under `--policy multi_learner` the program starts itself as --ranks processes on loopback
// (self_launch.h) for every run, and compares counts shared across the ranks (merged every 10
// updates) with counts each rank keeps alone (policy.multi_learner.merge_counts_every = 0).
// Episodes are counted over all ranks (every DeepSea episode lasts N steps and the ranks run in
// lockstep, so rank 0's count times the ranks is exact at each update).
//
//   exploration --task deepsea --sizes 10,20,30 --seeds 3 [--policy hogwild | multi_learner]
//   exploration --task mountaincar --seeds 3 --steps 300000
//   exploration --task cheetah --seeds 3 --steps 200000 --variants baseline,simhash64
//   exploration --quick              a smoke run (DeepSea 10, one seed, a small budget)
//   any run: --set key=value (repeatable) overrides the config, as `concord train --set`

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_run.h"
#include "concord/core/config.h"
#include "concord/core/timer.h"
#include "concord/policies/runtime/evaluation.h"
#include "self_launch.h"

namespace {

using concord::core::Config;

struct Options {
  std::string task = "deepsea";
  std::vector<int> sizes{10, 20, 30};
  int64_t seeds = 3;
  int64_t episode_budget = 20000;  // DeepSea: episodes per run
  int64_t steps = 300000;          // MountainCar, swing-up: environment steps per run
  std::string policy = "single";
  std::vector<std::string> bonuses{"none", "simhash"};  // DeepSea
  std::vector<std::string> variants;                    // sparse tasks: keys of kVariants; empty: all
  std::vector<std::string> overrides;
  bool quick = false;
  int64_t ranks = 2;  // multi_learner: processes per run
  // Set in the rank processes multi_learner starts: the one run they take part in.
  struct RankRun {
    int size = 0;
    std::string bonus;
    int64_t seed = 0;
    bool shared_counts = true;
  };
  std::optional<RankRun> rank_run;
};

// The line rank 0 of a multi_learner run prints, which the launching process reads back.
constexpr const char* kRankResultMarker = "concord-bench-deepsea:";

// What every run shares: PPO without learning-rate annealing (runs stop at different points).
Config base_config(const Options& options, const std::string& env_id, int64_t seed) {
  Config config(concord::cli::concord_schema());
  config.set("env.id", env_id, "bench");
  config.set("run.seed", seed, "bench");
  config.set("train.algo", std::string("ppo"), "bench");
  config.set("train.policy", options.policy, "bench");
  config.set("train.checkpoint_interval_steps", int64_t{1} << 40, "bench");
  for (const char* assignment : {"env.num_envs=16", "algo.ppo.num_steps=32", "algo.ppo.anneal_lr=false",
                                 "algo.ppo.learning_rate=1e-3", "explore.sketch.table_size=100000"}) {
    config.apply_override(assignment, "bench");
  }
  if (options.policy == "hogwild") {
    // Two workers (one per core here), each update one gradient step and each worker 8 of the 16
    // envs: the setting of the records in bench/RESULTS.md (hogwild ran PPO no other way before
    // 2026-11-27, and split env.num_envs among its workers before 2026-11-29).
    for (const char* assignment :
         {"algo.ppo.update_epochs=1", "algo.ppo.num_minibatches=1", "policy.hogwild.actors=2", "env.num_envs=8"}) {
      config.apply_override(assignment, "bench");
    }
  }
  return config;
}

// --- DeepSea ---

struct DeepSeaResult {
  std::optional<int64_t> first_treasure;  // episode index (1-based) of the first treasure
  std::optional<int64_t> solved_at;       // episode at which 90 of the last 100 reached it
  int64_t episodes = 0;
  double seconds = 0.0;
};

DeepSeaResult run_deep_sea(const Options& options, int size, const std::string& bonus, int64_t seed,
                           bool shared_counts = true) {
  Config config = base_config(options, "DeepSea" + std::to_string(size) + "-v0", seed);
  // This process sees 1 / world of the episodes (multi_learner ranks in lockstep).
  const int64_t world = options.policy == "multi_learner" ? options.ranks : 1;
  if (options.policy == "multi_learner") {
    config.set("policy.multi_learner.merge_counts_every", shared_counts ? int64_t{10} : int64_t{0}, "bench");
  }
  config.set("explore.bonus", bonus, "bench");
  // Tuned on DeepSea(25..50), one seed each (bench/RESULTS.md): less entropy or a smaller beta
  // stalls beyond N = 20.
  config.apply_override("explore.beta=0.5", "bench");
  config.apply_override("algo.ppo.ent_coef=0.1", "bench");
  for (const std::string& assignment : options.overrides) config.apply_override(assignment);
  config.set("train.total_timesteps", options.episode_budget * size, "bench");

  concord::cli::TrainingRun training(config);
  DeepSeaResult result;
  std::deque<bool> recent;
  int64_t recent_treasures = 0;
  concord::policies::TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double episode_return, int64_t) {
    const bool treasure = episode_return > 0.5;
    ++result.episodes;
    if (treasure && !result.first_treasure) result.first_treasure = result.episodes;
    recent.push_back(treasure);
    recent_treasures += treasure;
    if (recent.size() > 100) {
      recent_treasures -= recent.front();
      recent.pop_front();
    }
    if (recent.size() == 100 && recent_treasures >= 90 && !result.solved_at) result.solved_at = result.episodes;
  };
  // Only rank 0's episodes decide "solved" (the others see other envs and would stop the run on
  // their own count); every rank stops at the budget.
  const char* rank = std::getenv("RANK");
  const bool judge = rank == nullptr || std::string(rank) == "0";
  callbacks.should_stop = [&] {
    return (judge && result.solved_at.has_value()) || result.episodes * world >= options.episode_budget;
  };
  concord::core::Stopwatch clock;
  concord::policies::TrainingState state;
  training.train(state, callbacks);
  result.seconds = clock.elapsed_seconds();
  result.episodes *= world;
  if (result.first_treasure) *result.first_treasure *= world;
  if (result.solved_at) *result.solved_at *= world;
  return result;
}

// multi_learner: one run as options.ranks processes; rank 0's result line read back.
DeepSeaResult run_deep_sea_as_ranks(const Options& options, int size, const std::string& bonus, int64_t seed,
                                    bool shared_counts) {
  std::vector<std::string> arguments{"--task",
                                     "deepsea",
                                     "--policy",
                                     "multi_learner",
                                     "--ranks",
                                     std::to_string(options.ranks),
                                     "--episodes",
                                     std::to_string(options.episode_budget),
                                     "--rank-run",
                                     std::to_string(size),
                                     bonus,
                                     std::to_string(seed),
                                     shared_counts ? "shared" : "alone"};
  for (const std::string& assignment : options.overrides) {
    arguments.push_back("--set");
    arguments.push_back(assignment);
  }
  const auto outcomes =
      concord::bench::run_self_as_ranks(static_cast<int>(options.ranks), arguments, false, std::chrono::seconds(3600));
  if (!concord::bench::report_rank_failures(outcomes)) throw std::runtime_error("a multi_learner run failed");
  const std::string& output = outcomes[0].output;
  const size_t at = output.find(kRankResultMarker);
  if (at == std::string::npos) throw std::runtime_error("rank 0 printed no result line:\n" + output);
  long long first = -1, solved = -1, episodes = 0;
  double seconds = 0.0;
  if (std::sscanf(output.c_str() + at + std::strlen(kRankResultMarker), "%lld %lld %lld %lf", &first, &solved,
                  &episodes, &seconds) != 4) {
    throw std::runtime_error("rank 0's result line is malformed:\n" + output.substr(at));
  }
  DeepSeaResult result;
  if (first > 0) result.first_treasure = first;
  if (solved > 0) result.solved_at = solved;
  result.episodes = episodes;
  result.seconds = seconds;
  return result;
}

// In a rank process: take part in the run, and on rank 0 print its result line.
void deep_sea_rank(const Options& options) {
  const Options::RankRun& run = *options.rank_run;
  const DeepSeaResult result = run_deep_sea(options, run.size, run.bonus, run.seed, run.shared_counts);
  const char* rank = std::getenv("RANK");
  if (rank != nullptr && std::string(rank) == "0") {
    std::printf(
        "%s %lld %lld %lld %.3f\n", kRankResultMarker, static_cast<long long>(result.first_treasure.value_or(-1)),
        static_cast<long long>(result.solved_at.value_or(-1)), static_cast<long long>(result.episodes), result.seconds);
    std::fflush(stdout);
  }
}

std::string episode_text(const std::optional<int64_t>& episode) {
  return episode ? std::to_string(*episode) : std::string("-");
}

void deep_sea_table(const Options& options) {
  std::printf("DeepSea(N), PPO, policy %s, %lld seeds, budget %lld episodes per run\n", options.policy.c_str(),
              static_cast<long long>(options.seeds), static_cast<long long>(options.episode_budget));
  const bool ranks = options.policy == "multi_learner";
  if (ranks) {
    std::printf("%lld processes per run on loopback; counts: shared = merged every 10 updates, alone = never merged\n",
                static_cast<long long>(options.ranks));
  }
  // Under multi_learner a bonus runs twice: counts shared across the ranks, and each rank's alone.
  struct Variant {
    std::string bonus;
    bool shared_counts;
    std::string label;
  };
  std::vector<Variant> variants;
  for (const std::string& bonus : options.bonuses) {
    if (!ranks || bonus == "none") {
      variants.push_back({bonus, true, bonus});
    } else {
      variants.push_back({bonus, true, bonus + " shared"});
      variants.push_back({bonus, false, bonus + " alone"});
    }
  }
  std::printf("%4s %-14s %5s %14s %10s %9s %8s %10s\n", "N", "bonus", "seed", "first treasure", "solved at", "episodes",
              "seconds", "2^N");
  for (const int size : options.sizes) {
    for (const Variant& variant : variants) {
      int64_t solved = 0;
      std::vector<int64_t> firsts;
      for (int64_t seed = 1; seed <= options.seeds; ++seed) {
        const DeepSeaResult result =
            ranks ? run_deep_sea_as_ranks(options, size, variant.bonus, seed, variant.shared_counts)
                  : run_deep_sea(options, size, variant.bonus, seed);
        solved += result.solved_at.has_value();
        if (result.first_treasure) firsts.push_back(*result.first_treasure);
        std::printf("%4d %-14s %5lld %14s %10s %9lld %8.1f %10.3g\n", size, variant.label.c_str(),
                    static_cast<long long>(seed), episode_text(result.first_treasure).c_str(),
                    episode_text(result.solved_at).c_str(), static_cast<long long>(result.episodes), result.seconds,
                    std::pow(2.0, size));
        std::fflush(stdout);
      }
      std::sort(firsts.begin(), firsts.end());
      std::printf("%4d %-14s solved %lld/%lld, median first treasure %s\n", size, variant.label.c_str(),
                  static_cast<long long>(solved), static_cast<long long>(options.seeds),
                  firsts.empty() ? "-" : std::to_string(firsts[firsts.size() / 2]).c_str());
    }
  }
}

// --- Sparse MountainCar, CartPole swing-up ---

struct Variant {
  const char* key;  // --variants
  const char* name;
  const char* bonus;
  int64_t bits;
};
const Variant kVariants[] = {{"baseline", "baseline", "none", 64},
                             {"simhash16", "simhash k=16", "simhash", 16},
                             {"simhash64", "simhash k=64", "simhash", 64},
                             {"simhash256", "simhash k=256", "simhash", 256},
                             {"ae_simhash", "ae_simhash", "ae_simhash", 64}};

// `task_settings` come before --set, which can override them.
void sparse_task_table(const Options& options, const std::string& env_id,
                       const std::vector<std::string>& task_settings = {}) {
  std::vector<Variant> variants;
  for (const Variant& variant : kVariants) {
    if (options.variants.empty() ||
        std::find(options.variants.begin(), options.variants.end(), variant.key) != options.variants.end()) {
      variants.push_back(variant);
    }
  }
  const int64_t episodes = options.quick ? 2 : 20;
  std::printf("%s, PPO, policy %s, %lld steps per run, greedy evaluation over %lld episodes per seed\n", env_id.c_str(),
              options.policy.c_str(), static_cast<long long>(options.steps), static_cast<long long>(episodes));
  std::printf("%-14s %5s %12s %12s %8s\n", "variant", "seed", "success", "eval return", "seconds");
  for (const Variant& variant : variants) {
    double success_sum = 0.0;
    double return_sum = 0.0;
    for (int64_t seed = 1; seed <= options.seeds; ++seed) {
      Config config = base_config(options, env_id, seed);
      config.set("explore.bonus", std::string(variant.bonus), "bench");
      config.set("explore.simhash.k", variant.bits, "bench");
      for (const std::string& assignment : task_settings) config.apply_override(assignment, "bench");
      for (const std::string& assignment : options.overrides) config.apply_override(assignment);
      config.set("train.total_timesteps", options.steps, "bench");
      concord::cli::TrainingRun training(config);
      concord::core::Stopwatch clock;
      concord::policies::TrainingState state;
      training.train(state, concord::policies::TrainingCallbacks{});
      const double seconds = clock.elapsed_seconds();
      concord::envs::VectorEnvConfig eval_env = concord::cli::vector_env_config(config);
      eval_env.seed = static_cast<uint64_t>(seed + concord::policies::runtime::kEvalSeedOffset);
      const std::vector<double> returns =
          concord::policies::runtime::evaluate_episodes(training.learner(), eval_env, episodes);
      double successes = 0.0;
      double total = 0.0;
      for (const double value : returns) {
        successes += value > 0.0;
        total += value;
      }
      const double success = successes / static_cast<double>(returns.size());
      const double mean_return = total / static_cast<double>(returns.size());
      success_sum += success;
      return_sum += mean_return;
      std::printf("%-14s %5lld %11.0f%% %12.2f %8.1f\n", variant.name, static_cast<long long>(seed), 100 * success,
                  mean_return, seconds);
      std::fflush(stdout);
    }
    const double n = static_cast<double>(options.seeds);
    std::printf("%-14s  mean %11.0f%% %12.2f\n", variant.name, 100 * success_sum / n, return_sum / n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "Count-based exploration: DeepSea, sparse MountainCar, CartPole swing-up and half-cheetah, with and without "
      "bonus"};
  app.add_option("--task", options.task, "deepsea, mountaincar, swingup, cheetah")
      ->check(CLI::IsMember({"deepsea", "mountaincar", "swingup", "cheetah"}));
  app.add_option("--sizes", options.sizes, "DeepSea sizes N (registered: 5, 10, ..., 50)")->delimiter(',');
  app.add_option("--seeds", options.seeds, "Seeds per configuration");
  app.add_option("--episodes", options.episode_budget, "DeepSea: episode budget per run");
  app.add_option("--steps", options.steps, "Sparse tasks: environment steps per run");
  app.add_option("--bonuses", options.bonuses, "DeepSea: explore.bonus values to compare")->delimiter(',');
  std::vector<std::string> variant_keys;
  for (const Variant& variant : kVariants) variant_keys.push_back(variant.key);
  app.add_option("--variants", options.variants, "Sparse tasks: the variants to run (default all)")
      ->delimiter(',')
      ->check(CLI::IsMember(variant_keys));
  app.add_option("--policy", options.policy, "Distribution policy (train.policy)");
  app.add_option("--set", options.overrides, "Config override key=value (repeatable)");
  app.add_flag("--quick", options.quick, "Smoke run: DeepSea 10, one seed, small budgets");
  app.add_option("--ranks", options.ranks, "multi_learner: processes per run")->check(CLI::Range(2, 64));
  std::vector<std::string> rank_run;
  app.add_option("--rank-run", rank_run, "(internal) the run a rank process takes part in: N bonus seed shared|alone")
      ->expected(4);
  CLI11_PARSE(app, argc, argv);
  if (!rank_run.empty()) {
    options.rank_run =
        Options::RankRun{std::stoi(rank_run[0]), rank_run[1], std::stoll(rank_run[2]), rank_run[3] == "shared"};
  }
  if (options.quick) {
    options.sizes = {10};
    options.seeds = 1;
    options.episode_budget = 300;
    options.steps = 4096;
  }
  try {
    if (options.rank_run) {
      deep_sea_rank(options);
      return 0;
    }
    if (options.task == "deepsea") deep_sea_table(options);
    if (options.task == "mountaincar") sparse_task_table(options, "SparseMountainCar-v0");
    if (options.task == "swingup") sparse_task_table(options, "CartPoleSwingUp-v0");
    if (options.task == "cheetah") {
      sparse_task_table(options, "MuJoCo/SparseHalfCheetah-v0",
                        {"env.exclude_current_positions_from_observation=false", "algo.normalize_observations=true"});
    }
    if (options.quick && options.policy != "multi_learner") sparse_task_table(options, "SparseMountainCar-v0");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "exploration: %s\n", error.what());
    return 1;
  }
  return 0;
}
