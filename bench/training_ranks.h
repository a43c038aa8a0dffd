#pragma once

// Throughput of a multi-process training run, for the scaling benchmarks: the program starts
// itself as the run's ranks (self_launch.h); each rank trains the same config along `concord
// train`'s path (cli::TrainingRun, which joins the ranks from torchrun's variables), and rank 0
// prints one line with the steps and the seconds that train() took, which the launching
// process reads back. Rendezvous and process start-up are outside the timed span. Header-only.

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
  int64_t steps = 0;  // environment steps over all ranks
  double seconds = 0.0;
  double steps_per_second() const { return seconds > 0.0 ? static_cast<double>(steps) / seconds : 0.0; }
};

// The line rank 0 prints, and the launching process looks for.
inline const char* throughput_marker() { return "concord-bench-throughput:"; }

// Trains `config` as this rank (joining the others) and, on rank 0, prints the throughput line.
inline void train_as_rank(const core::Config& config) {
  cli::TrainingRun training(config);
  policies::TrainingState state;
  const core::Stopwatch clock;
  training.train(state, {});
  const double seconds = clock.elapsed_seconds();
  if (training.rank() == 0) {
    std::printf("%s %lld %.6f\n", throughput_marker(), static_cast<long long>(state.global_step), seconds);
    std::fflush(stdout);
  }
}

// Runs this program as `world_size` ranks (each calling train_as_rank on the config its
// arguments describe) and returns rank 0's throughput; nothing when a rank failed, whose output
// then went to stderr.
inline std::optional<Throughput> launch_training(int world_size, const std::vector<std::string>& arguments,
                                                 std::chrono::seconds timeout) {
  const std::vector<RankOutcome> outcomes = run_self_as_ranks(world_size, arguments, /*echo_rank0=*/false, timeout);
  if (!report_rank_failures(outcomes)) return std::nullopt;
  std::istringstream lines(outcomes[0].output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(throughput_marker(), 0) != 0) continue;
    std::istringstream fields(line.substr(std::string(throughput_marker()).size()));
    Throughput throughput;
    long long steps = 0;
    if (fields >> steps >> throughput.seconds) {
      throughput.steps = steps;
      return throughput;
    }
  }
  std::fprintf(stderr, "rank 0 printed no throughput line; its output:\n%s", outcomes[0].output.c_str());
  return std::nullopt;
}

// The `concord train` command line equivalent to `overrides` (for the benchmark's header).
inline std::string as_train_command(const std::vector<std::string>& overrides) {
  std::string command = "concord train";
  for (const std::string& assignment : overrides) command += " --set '" + assignment + "'";
  return command;
}

}  // namespace concord::bench
