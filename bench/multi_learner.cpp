// multi_learner: throughput of the `multi_learner` policy (K processes, data parallel, bucketed
// gradient allreduce) at 1, 2, 4, ... ranks on one compute-bound PPO configuration.
//
// Strong scaling: the global batch is fixed (env.num_envs envs in all, split across the ranks,
// the same number of gradient steps per update), so each rank computes 1/K of every gradient and
// pays one allreduce per gradient step. The 1-rank run is the baseline, measured in the same
// invocation as a Gloo world of one. Target (cluster issue): at least 1.7x at 2 processes on this
// machine. On a bigger machine, `--max-ranks N` extends the sweep.
//
// On a shared machine the ranks may not get a core each. A control row per rank count runs K
// separate copies of the 1-rank job at once, which never communicate: its speedup is the most
// K processes could reach on the machine as it was loaded, and multi_learner's row is to be
// read against it.
//
//   multi_learner                      1 and 2 ranks, 3 runs each, the median reported
//   multi_learner --max-ranks 8        1, 2, 4, 8 ranks
//   multi_learner --quick              a small network, 2 updates, 1 run: the ctest smoke run

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "concord/cli/run_config.h"
#include "machine_load.h"
#include "training_ranks.h"

namespace {

struct Options {
  int max_ranks = 2;
  int runs = 3;
  int64_t num_envs = 16;
  int64_t num_steps = 128;
  int64_t updates = 8;
  std::string hidden = "[512, 512]";
  int64_t timeout_seconds = 900;
  bool control = true;
  bool quick = false;
  bool hidden_given = false;       // --hidden was passed: it applies whatever the torso
  std::vector<std::string> extra;  // --set key=value, applied after the defaults
};

// The run every rank count trains: PPO on CartPole-v1 with wide layers, so that the gradient
// computation (4 epochs x 4 minibatches per update), not env stepping, dominates the step.
std::vector<std::string> config_overrides(const Options& options) {
  std::vector<std::string> overrides = {
      "train.policy=\"multi_learner\"",
      "train.algo=\"ppo\"",
      "env.id=\"CartPole-v1\"",
      "env.num_envs=" + std::to_string(options.num_envs),
      "algo.ppo.num_steps=" + std::to_string(options.num_steps),
      "algo.ppo.num_minibatches=4",
      "algo.ppo.update_epochs=4",
      "train.total_timesteps=" + std::to_string(options.updates * options.num_envs * options.num_steps),
      "run.torch_threads=1",
      "policy.multi_learner.check_every=0",
      "run.seed=1"};
  if (options.hidden_given || !concord::bench::picks_another_torso(options.extra))
    overrides.push_back("algo.hidden_sizes=" + options.hidden);
  // --set assignments come last, so they replace the defaults above (e.g. another env and torso).
  overrides.insert(overrides.end(), options.extra.begin(), options.extra.end());
  return overrides;
}

// 1, 2, 4, ... up to max_ranks, and max_ranks itself.
std::vector<int> rank_counts(int max_ranks) {
  std::vector<int> counts;
  for (int ranks = 1; ranks < max_ranks; ranks *= 2) counts.push_back(ranks);
  counts.push_back(max_ranks);
  return counts;
}

// The median over runs of one row of the table.
struct Row {
  bool ran = false;
  int64_t steps = 0;
  double steps_per_second = 0.0;
  double cores_busy = 0.0;
  std::string per_run;  // steps/s of each run
};

Row measure(int processes, bool independent_worlds, const Options& options, const std::vector<std::string>& arguments) {
  Row row;
  std::vector<double> rates, cores;
  for (int run = 0; run < options.runs; ++run) {
    const auto throughput = concord::bench::launch_training(
        processes, arguments, std::chrono::seconds(options.timeout_seconds), independent_worlds);
    if (!throughput) return row;
    rates.push_back(throughput->steps_per_second());
    cores.push_back(throughput->cores_busy());
    row.steps = throughput->steps;
    row.per_run += (row.per_run.empty() ? "" : " ") + std::to_string(static_cast<long long>(rates.back()));
  }
  std::sort(rates.begin(), rates.end());
  std::sort(cores.begin(), cores.end());
  row.ran = true;
  row.steps_per_second = rates[rates.size() / 2];
  row.cores_busy = cores[cores.size() / 2];
  return row;
}

void print_row(const std::string& label, int processes, int64_t envs_per_process, const Row& row, double baseline) {
  const double speedup = baseline > 0.0 ? row.steps_per_second / baseline : 0.0;
  std::printf("%-22s %9lld %9lld %10.0f %7.2fx %9.0f%% %10.2f  %s\n", label.c_str(),
              static_cast<long long>(envs_per_process), static_cast<long long>(row.steps), row.steps_per_second,
              speedup, 100.0 * speedup / processes, row.cores_busy, row.per_run.c_str());
  std::fflush(stdout);
}

int launch_sweep(const Options& options, const std::vector<std::string>& arguments) {
  const std::vector<std::string> overrides = config_overrides(options);
  std::printf(
      "multi_learner: PPO on %s, %lld envs in all split across the ranks, %lld updates of %lld steps, "
      "median of %d run(s) per row\n",
      concord::bench::env_id_of(overrides).c_str(), static_cast<long long>(options.num_envs),
      static_cast<long long>(options.updates), static_cast<long long>(options.num_envs * options.num_steps),
      options.runs);
  std::printf("each rank runs: %s\n", concord::bench::as_train_command(overrides).c_str());
  std::printf("machine: %u hardware threads, load average at start %s\n", std::thread::hardware_concurrency(),
              concord::bench::load_average().c_str());
  std::printf("steps/s: env steps of all ranks / wall time of train() on rank 0 (start-up and rendezvous excluded)\n");
  if (options.control) {
    std::printf(
        "control \"K x 1 rank, apart\": K separate 1-rank runs of the whole job at once, no communication; "
        "steps summed, longest wall time: the parallel speed this machine gives K processes now\n");
  }
  std::printf("\n%-22s %9s %9s %10s %8s %10s %10s  %s\n", "run", "envs/rank", "steps", "steps/s", "speedup",
              "efficiency", "cores busy", "steps/s of each run");
  std::fflush(stdout);

  double baseline = 0.0;
  bool all_ran = true;
  for (const int ranks : rank_counts(options.max_ranks)) {
    if (options.num_envs % ranks != 0) {
      std::printf("%d ranks skipped: env.num_envs = %lld is not divisible by %d\n", ranks,
                  static_cast<long long>(options.num_envs), ranks);
      continue;
    }
    const Row row = measure(ranks, /*independent_worlds=*/false, options, arguments);
    if (!row.ran) {
      all_ran = false;
      continue;
    }
    if (ranks == 1) baseline = row.steps_per_second;
    print_row(std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks"), ranks, options.num_envs / ranks, row,
              baseline);
    if (!options.control || ranks == 1) continue;
    const Row control = measure(ranks, /*independent_worlds=*/true, options, arguments);
    if (!control.ran) {
      all_ran = false;
      continue;
    }
    print_row(std::to_string(ranks) + " x 1 rank, apart", ranks, options.num_envs, control, baseline);
  }
  std::printf(
      "\nspeedup: median steps/s over the 1-rank median; efficiency: speedup / processes; cores busy: CPU "
      "time of train() summed over processes / its wall time (median over runs): below the process count, "
      "they waited (for each other, or for a CPU that other work held)\n");
  std::printf("load average at end: %s\n", concord::bench::load_average().c_str());
  return all_ran ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"multi_learner: data-parallel PPO throughput at 1, 2, ... processes"};
  Options options;
  app.add_option("--max-ranks", options.max_ranks, "Largest number of ranks (the sweep doubles from 1)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--runs", options.runs, "Runs per rank count (the median is reported)")->check(CLI::Range(1, 100));
  app.add_option("--num-envs", options.num_envs, "Environments in all, split across the ranks")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  app.add_option("--num-steps", options.num_steps, "Steps per env per rollout (algo.ppo.num_steps)")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  app.add_option("--updates", options.updates, "Learner updates per run")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  app.add_option("--hidden", options.hidden, "algo.hidden_sizes, as TOML (e.g. \"[512, 512]\")");
  app.add_option("--set", options.extra,
                 "Another config assignment for every rank, after the defaults (repeatable), e.g. "
                 "--set env.id=MinAtar/Breakout-v1 --set algo.torso=grid_cnn");
  app.add_option("--timeout", options.timeout_seconds, "Seconds one run may take before its ranks are killed")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  app.add_flag("!--no-control", options.control, "Skip the control rows (K separate 1-rank runs at once)");
  app.add_flag("--quick", options.quick, "Smoke run: 64-wide layers, 2 updates, 1 run, 1 and 2 ranks");
  CLI11_PARSE(app, argc, argv);
  options.hidden_given = app.count("--hidden") > 0;
  if (options.quick) {
    if (!options.hidden_given) options.hidden = "[64, 64]";
    if (app.count("--updates") == 0) options.updates = 2;
    if (app.count("--num-steps") == 0) options.num_steps = 32;
    if (app.count("--runs") == 0) options.runs = 1;
    if (app.count("--timeout") == 0) options.timeout_seconds = 120;
  }

  try {
    if (concord::bench::started_as_rank()) {
      concord::core::Config config(concord::cli::concord_schema());
      for (const std::string& assignment : config_overrides(options))
        config.apply_override(assignment, "multi_learner");
      concord::bench::train_as_rank(config);
      return 0;
    }
    return launch_sweep(options, std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "multi_learner: error: %s\n", error.what());
    return 1;
  }
}
