// concord train: trains an algorithm on an environment under the distribution policy the config
// names (train.policy), with live progress, metrics, periodic atomic checkpoints and --resume.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/commands.h"
#include "concord/cli/run_config.h"
#include "concord/cli/signal_stop.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/cli/training_session.h"
#include "concord/core/progress_bar.h"
#include "concord/core/registry.h"
#include "concord/policies/policy_registry.h"

namespace concord::cli {
namespace {

void run_train(const TrainFlags& flags) {
  // From here on SIGINT and SIGTERM end the command at once until the first update, through the
  // set-up of the envs and the first rollout, which can take minutes at sizes nobody meant.
  SignalStop::exit_at_once_before_first_update();
  SignalStop signals_during_set_up;
  const TrainingOutcome outcome = run_training_session(flags);
  // A rank other than 0 writes nothing.
  if (outcome.run_dir.empty()) {
    if (outcome.stop_signal != 0) throw ExitStatus{signal_exit_status(outcome.stop_signal)};
    return;
  }
  std::vector<SummaryLine> summary{{"trained", outcome.algo + " on " + outcome.env_id},
                                   {"steps", core::format_count(outcome.state.global_step) + " (" +
                                                 counted(outcome.state.updates, "update", "updates") + ")"}};
  summary.insert(summary.end(), outcome.verdict.begin(), outcome.verdict.end());
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f s", outcome.wall_seconds);
  const std::string program = program_for_hints();
  summary.push_back({"wall time", seconds});
  summary.push_back({"checkpoint", checkpoint_path(outcome.run_dir).string()});
  summary.push_back({"evaluate with", program + " eval " + outcome.run_dir.string()});
  if (outcome.stop_signal != 0) {
    summary.push_back(
        {"continue with", launcher_for_hints(program) + program + " train --resume " + outcome.run_dir.string()});
  }
  std::string text = "\n";
  for (const SummaryLine& line : summary) {
    char label[32];
    std::snprintf(label, sizeof(label), "%-16s ", line.label.c_str());
    text += label + line.text + "\n";
  }
  std::fputs(text.c_str(), stdout);
  // log.txt keeps the summary too (spdlog has flushed every line it wrote there).
  std::ofstream(outcome.run_dir / "log.txt", std::ios::app) << text.substr(1);
  if (outcome.stop_signal != 0) {
    std::fflush(stdout);
    throw ExitStatus{signal_exit_status(outcome.stop_signal)};
  }
}

}  // namespace

void add_train_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("train", "Train an agent (PPO, A2C, DQN or SAC) with live progress and checkpoints");
  auto flags = std::make_shared<TrainFlags>();
  add_run_flags(*command, flags->run);
  command->add_option("--algo", flags->algo, "Algorithm (train.algo): " + core::joined_names(algos::algorithm_names()));
  command->add_option("--policy", flags->policy,
                      "Distribution policy (train.policy): " + core::joined_names(policies::policy_names()));
  command
      ->add_option("--total-timesteps", flags->total_timesteps,
                   "Environment steps to train for (train.total_timesteps)")
      ->transform(count_between(1, int64_t{1} << 50));
  command->add_flag("--capture-video", flags->capture_video,
                    "Film one episode of the agent into RUN/videos/ at each checkpoint and at the end "
                    "(train.capture_video)");
  command->add_option("--resume", flags->resume, "Continue the run in this directory from its last checkpoint");
  command->callback([flags] { run_train(*flags); });
}

}  // namespace concord::cli
