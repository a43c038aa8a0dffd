#pragma once

// Throughput of a multi-process training run, for the scaling benchmarks: the program starts
// itself as the run's ranks (self_launch.h); each rank trains the same config along `concord
// train`'s path (cli::TrainingRun, which joins the ranks from torchrun's variables) and prints
// one line with the steps, the wall seconds and the CPU seconds (all its threads) that train()
// took, which the launching process reads back. Rendezvous and process start-up are outside the
// timed span. The CPU seconds tell a slow run on a busy machine (the ranks got less than a core
// each) from a slow run that used its cores. Header-only.

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "concord/cli/training_run.h"
#include "concord/core/config.h"
#include "concord/core/timer.h"
#include "self_launch.h"

namespace concord::bench {

struct Throughput {
  int64_t steps = 0;         // environment steps over all ranks
  double seconds = 0.0;      // wall time of train() on rank 0
  double cpu_seconds = 0.0;  // CPU time of train(), summed over ranks
  double cores_busy() const { return seconds > 0.0 ? cpu_seconds / seconds : 0.0; }
  double steps_per_second() const { return seconds > 0.0 ? static_cast<double>(steps) / seconds : 0.0; }
};

// The line rank 0 prints, and the launching process looks for.
inline const char* throughput_marker() { return "concord-bench-throughput:"; }

// CPU time of every thread of this process so far.
inline double process_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Trains `config` as this rank (joining the others) and prints its throughput line.
inline void train_as_rank(const core::Config& config) {
  cli::TrainingRun training(config);
  policies::TrainingState state;
  const core::Stopwatch clock;
  const double cpu_start = process_cpu_seconds();
  training.train(state, {});
  const double seconds = clock.elapsed_seconds();
  std::printf("%s %lld %.6f %.6f\n", throughput_marker(), static_cast<long long>(state.global_step), seconds,
              process_cpu_seconds() - cpu_start);
  std::fflush(stdout);
}

// The throughput line in `output`, if any: steps, wall seconds, CPU seconds.
inline std::optional<Throughput> parse_throughput(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(throughput_marker(), 0) != 0) continue;
    std::istringstream fields(line.substr(std::string(throughput_marker()).size()));
    Throughput throughput;
    long long steps = 0;
    if (fields >> steps >> throughput.seconds >> throughput.cpu_seconds) {
      throughput.steps = steps;
      return throughput;
    }
  }
  return std::nullopt;
}

// Runs this program as `world_size` ranks (each calling train_as_rank on the config its
// arguments describe) and returns rank 0's steps and seconds with every rank's CPU seconds;
// nothing when a rank failed, whose output then went to stderr.
//
// `independent_worlds`: the control run instead, `world_size` separate worlds of one rank each at
// once (see run_self_as_ranks); the steps are then summed over them, and the seconds are the
// longest run's.
inline std::optional<Throughput> launch_training(int world_size, const std::vector<std::string>& arguments,
                                                 std::chrono::seconds timeout, bool independent_worlds = false) {
  const std::vector<RankOutcome> outcomes =
      run_self_as_ranks(world_size, arguments, /*echo_rank0=*/false, timeout, independent_worlds);
  if (!report_rank_failures(outcomes)) return std::nullopt;
  std::optional<Throughput> total;
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    const std::optional<Throughput> mine = parse_throughput(outcomes[rank].output);
    if (!mine) {
      std::fprintf(stderr, "rank %zu printed no throughput line; its output:\n%s", rank, outcomes[rank].output.c_str());
      return std::nullopt;
    }
    if (rank == 0) {
      total = mine;
    } else {
      total->cpu_seconds += mine->cpu_seconds;
      if (independent_worlds) {
        total->steps += mine->steps;
        total->seconds = std::max(total->seconds, mine->seconds);
      }
    }
  }
  return total;
}

// The env id the last `env.id=...` assignment of `overrides` names, unquoted (for the header).
inline std::string env_id_of(const std::vector<std::string>& overrides) {
  std::string id = "?";
  for (const std::string& assignment : overrides) {
    if (assignment.rfind("env.id=", 0) != 0) continue;
    id = assignment.substr(7);
    if (id.size() >= 2 && id.front() == '"' && id.back() == '"') id = id.substr(1, id.size() - 2);
  }
  return id;
}

// Whether `assignments` pick another torso than the MLP: the benchmark's MLP width then does not
// apply (the network config refuses hidden_sizes beside another torso), unless asked for.
inline bool picks_another_torso(const std::vector<std::string>& assignments) {
  for (const std::string& assignment : assignments) {
    if (assignment.rfind("algo.torso=", 0) == 0 && assignment != "algo.torso=mlp" && assignment != "algo.torso=\"mlp\"")
      return true;
  }
  return false;
}

// The `concord train` command line equivalent to `overrides` (for the benchmark's header).
inline std::string as_train_command(const std::vector<std::string>& overrides) {
  std::string command = "concord train";
  for (const std::string& assignment : overrides) command += " --set '" + assignment + "'";
  return command;
}

}  // namespace concord::bench
