// actor_processes: throughput of the `actor_processes` policy (rank 0 learns, ranks 1..A act and
// send their rollouts by c10d send/recv) at 1, 2, 3, 4 actor processes.
//
// Each actor steps the same number of envs (--envs-per-actor), so every added actor adds acting
// capacity and the learner's batch grows with it, as in IMPALA-style actor-learner systems; the
// run lasts the same number of learner updates at every actor count. The 1-actor run is the
// baseline, measured in the same invocation. World size = actors + 1.
//
//   actor_processes                    1 to 4 actors, 3 runs each, the median reported
//   actor_processes --asynchronous     actors collect the next rollout while the learner trains
//   actor_processes --quick            1 and 2 actors, 2 updates, 1 run: the ctest smoke run

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "concord/cli/run_config.h"
#include "concord/comm/launch_environment.h"
#include "machine_load.h"
#include "training_ranks.h"

namespace {

struct Options {
  int max_actors = 4;
  std::vector<int> actors;  // --actors: the counts to measure instead of 1..max_actors
  int runs = 3;
  int64_t envs_per_actor = 8;
  int64_t num_steps = 128;
  int64_t updates = 20;
  std::string hidden = "[64, 64]";
  bool asynchronous = false;
  int64_t timeout_seconds = 900;
  bool quick = false;
  bool hidden_given = false;       // --hidden was passed: it applies whatever the torso
  std::vector<std::string> extra;  // --set key=value, applied after the defaults
};

// PPO on CartPole-v1 (4 epochs x 4 minibatches per update) with `actors` actor processes.
std::vector<std::string> config_overrides(const Options& options, int actors) {
  const int64_t num_envs = options.envs_per_actor * actors;
  std::vector<std::string> overrides = {
      "train.policy=\"actor_processes\"",
      "train.algo=\"ppo\"",
      "env.id=\"CartPole-v1\"",
      "env.num_envs=" + std::to_string(num_envs),
      "algo.ppo.num_steps=" + std::to_string(options.num_steps),
      "algo.ppo.num_minibatches=4",
      "algo.ppo.update_epochs=4",
      "train.total_timesteps=" + std::to_string(options.updates * num_envs * options.num_steps),
      std::string("policy.actor_processes.synchronous=") + (options.asynchronous ? "false" : "true"),
      "run.torch_threads=1",
      "run.seed=1"};
  if (options.hidden_given || !concord::bench::picks_another_torso(options.extra))
    overrides.push_back("algo.hidden_sizes=" + options.hidden);
  // --set assignments come last, so they replace the defaults above (e.g. another env and torso).
  overrides.insert(overrides.end(), options.extra.begin(), options.extra.end());
  return overrides;
}

int launch_sweep(const Options& options, const std::vector<std::string>& arguments) {
  std::printf(
      "actor_processes: PPO on %s, rank 0 learns, %lld envs per actor, %lld updates of %lld steps "
      "per actor, %s, median of %d run(s) per actor count\n",
      concord::bench::env_id_of(config_overrides(options, 1)).c_str(), static_cast<long long>(options.envs_per_actor),
      static_cast<long long>(options.updates), static_cast<long long>(options.envs_per_actor * options.num_steps),
      options.asynchronous ? "asynchronous (one update of policy lag)" : "synchronous (on-policy)", options.runs);
  std::printf("each rank runs (A actors): %s\n",
              concord::bench::as_train_command(config_overrides(options, 1)).c_str());
  std::printf("  with env.num_envs = %lld x A and train.total_timesteps scaled with it\n",
              static_cast<long long>(options.envs_per_actor));
  std::printf("machine: %u hardware threads, load average at start %s\n", std::thread::hardware_concurrency(),
              concord::bench::load_average().c_str());
  std::printf(
      "steps/s: env steps of all actors / wall time of train() on rank 0 (start-up and rendezvous excluded)\n\n");
  std::printf("%6s %9s %9s %10s %8s %10s  %s\n", "actors", "processes", "steps", "steps/s", "vs 1", "cores busy",
              "steps/s of each run");
  std::fflush(stdout);

  std::vector<int> actor_counts = options.actors;
  if (actor_counts.empty()) {
    for (int actors = 1; actors <= options.max_actors; ++actors) actor_counts.push_back(actors);
  }
  double baseline = 0.0;
  bool all_ran = true;
  for (const int actors : actor_counts) {
    std::vector<double> rates, cores;
    std::string per_run;
    int64_t steps = 0;
    for (int run = 0; run < options.runs; ++run) {
      const auto throughput =
          concord::bench::launch_training(actors + 1, arguments, std::chrono::seconds(options.timeout_seconds));
      if (!throughput) {
        all_ran = false;
        break;
      }
      rates.push_back(throughput->steps_per_second());
      cores.push_back(throughput->cores_busy());
      steps = throughput->steps;
      per_run += (per_run.empty() ? "" : " ") + std::to_string(static_cast<long long>(rates.back()));
    }
    if (rates.empty()) continue;
    std::sort(rates.begin(), rates.end());
    std::sort(cores.begin(), cores.end());
    const double rate = rates[rates.size() / 2];
    const double cores_busy = cores[cores.size() / 2];
    if (actors == 1) baseline = rate;
    std::printf("%6d %9d %9lld %10.0f %7.2fx %10.2f  %s\n", actors, actors + 1, static_cast<long long>(steps), rate,
                baseline > 0.0 ? rate / baseline : 0.0, cores_busy, per_run.c_str());
    std::fflush(stdout);
  }
  std::printf(
      "\nvs 1: median steps/s over the 1-actor median; cores busy: CPU time of train() summed over all "
      "processes / its wall time (median over runs)\n");
  std::printf("load average at end: %s\n", concord::bench::load_average().c_str());
  return all_ran ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actor_processes: actor-learner PPO throughput at 1 to N actor processes"};
  Options options;
  app.add_option("--max-actors", options.max_actors, "Largest number of actor processes (the sweep runs 1..N)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--actors", options.actors, "Actor counts to measure instead of 1..--max-actors, e.g. 1 2 4 8")
      ->check(CLI::Range(1, 1024));
  app.add_option("--runs", options.runs, "Runs per actor count (the median is reported)")->check(CLI::Range(1, 100));
  app.add_option("--envs-per-actor", options.envs_per_actor, "Environments each actor steps")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  app.add_option("--num-steps", options.num_steps, "Steps per env per rollout (algo.ppo.num_steps)")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  app.add_option("--updates", options.updates, "Learner updates per run")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  app.add_option("--hidden", options.hidden, "algo.hidden_sizes, as TOML (e.g. \"[64, 64]\")");
  app.add_option("--set", options.extra,
                 "Another config assignment for every rank, after the defaults (repeatable), e.g. "
                 "--set env.id=MinAtar/Breakout-v1 --set algo.torso=grid_cnn");
  app.add_flag("--asynchronous", options.asynchronous, "policy.actor_processes.synchronous = false");
  app.add_option("--timeout", options.timeout_seconds, "Seconds one run may take before its ranks are killed")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  app.add_flag("--quick", options.quick, "Smoke run: 1 and 2 actors, 2 updates, 1 run");
  CLI11_PARSE(app, argc, argv);
  options.hidden_given = app.count("--hidden") > 0;
  if (options.quick) {
    if (app.count("--max-actors") == 0) options.max_actors = 2;
    if (app.count("--updates") == 0) options.updates = 2;
    if (app.count("--num-steps") == 0) options.num_steps = 32;
    if (app.count("--runs") == 0) options.runs = 1;
    if (app.count("--timeout") == 0) options.timeout_seconds = 120;
  }

  try {
    if (concord::bench::started_as_rank()) {
      // The launcher's world is the learner plus the actors.
      const int actors = std::max(1, concord::comm::LaunchEnvironment::from_environment().world_size - 1);
      concord::core::Config config(concord::cli::concord_schema());
      for (const std::string& assignment : config_overrides(options, actors)) {
        config.apply_override(assignment, "actor_processes");
      }
      concord::bench::train_as_rank(config);
      return 0;
    }
    return launch_sweep(options, std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "actor_processes: error: %s\n", error.what());
    return 1;
  }
}
