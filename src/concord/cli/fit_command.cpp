// concord fit: supervised data-parallel training of an MNIST classifier under a synchronisation
// strategy (sync, local_sgd, easgd, gossip, fedavg, fedsgd), with workers as threads of this
// process or, under `concord launch -n W -- concord fit ...`, as processes joined over Gloo.
// Rank 0 owns the run directory: progress, metrics (CSV + TensorBoard), checkpoints, which hold
// every rank's state so that `--resume RUN_DIR` continues as `concord train --resume` does.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/fit_checkpoint.h"
#include "concord/cli/gan_fit.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/signal_stop.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/comm/launch_environment.h"
#include "concord/core/checkpoint.h"
#include "concord/core/progress_bar.h"
#include "concord/data/dataset_registry.h"
#include "concord/launch/launched_ranks.h"
#include "concord/supervised/fit.h"

namespace concord::cli {
namespace {

struct FitFlags {
  RunFlags run;
  std::string task;
  std::string dataset;
  std::string model;
  std::string strategy;
  int64_t workers = 0;
  int64_t steps = 0;
  int64_t rounds = 0;
  int64_t epochs = 0;
  std::string schedule;
  int64_t gans = 0;
  int64_t swap_every = 0;
  std::string resume;
};

// A resumed fit keeps its run's config.toml; only the length of training and the progress mode
// may change, as under `concord train --resume`.
const std::set<std::string> kResumeMayChange = {"fit.steps", "fit.fedavg.rounds", "fit.epochs", "run.progress"};

core::Config resumed_fit_config(const FitFlags& flags) {
  if (!flags.run.config_files.empty() || !flags.run.overrides.empty() || flags.run.seed >= 0 ||
      !flags.run.run_root.empty() || !flags.task.empty() || !flags.dataset.empty() || !flags.model.empty() ||
      !flags.strategy.empty() || flags.workers > 0 || !flags.schedule.empty() || flags.gans > 0 ||
      flags.swap_every > 0) {
    throw core::ConfigError(
        "--resume continues a run with its own config.toml; only --steps, --rounds and --epochs may change");
  }
  core::Config config = resumed_run_config(flags.resume);
  if (!flags.run.progress.empty()) config.set("run.progress", flags.run.progress, "--progress");
  if (config.get_string("fit.task") == "gan") {
    if (flags.rounds > 0 || flags.epochs > 0) {
      throw std::invalid_argument(std::string(flags.rounds > 0 ? "--rounds" : "--epochs") +
                                  " applies to --task classifier; a GAN run's length is --steps");
    }
    if (flags.steps > 0) config.set("gan.steps", flags.steps, "--steps");
    return config;
  }
  if (flags.steps > 0) config.set("fit.steps", flags.steps, "--steps");
  if (flags.rounds > 0) config.set("fit.fedavg.rounds", flags.rounds, "--rounds");
  if (flags.epochs > 0) config.set("fit.epochs", flags.epochs, "--epochs");
  return config;
}

core::Config fit_command_config(const FitFlags& flags) {
  if (!flags.resume.empty()) return resumed_fit_config(flags);
  core::Config config = resolve_config(flags.run);
  if (!flags.task.empty()) config.set("fit.task", flags.task, "--task");
  const bool gan = config.get_string("fit.task") == "gan";
  if (!gan && (flags.gans > 0 || flags.swap_every > 0)) {
    throw std::invalid_argument(std::string(flags.gans > 0 ? "--gans" : "--swap-every") + " needs --task gan");
  }
  if (gan) {
    if (!flags.strategy.empty() || flags.workers > 0 || flags.rounds > 0 || flags.epochs > 0 ||
        !flags.schedule.empty()) {
      const std::string flag = !flags.strategy.empty() ? "--strategy"
                               : flags.workers > 0     ? "--workers"
                               : flags.rounds > 0      ? "--rounds"
                               : flags.epochs > 0      ? "--epochs"
                                                       : "--schedule";
      throw std::invalid_argument(flag + " applies to --task classifier; GAN pairs are --gans");
    }
    if (!flags.model.empty()) config.set("gan.model", flags.model, "--model");
    if (flags.gans > 0) config.set("gan.pairs", flags.gans, "--gans");
    if (flags.swap_every > 0) config.set("gan.swap_every", flags.swap_every, "--swap-every");
    if (flags.steps > 0) config.set("gan.steps", flags.steps, "--steps");
    return config;
  }
  if (!flags.dataset.empty()) config.set("fit.dataset", flags.dataset, "--dataset");
  if (!flags.model.empty()) config.set("fit.model", flags.model, "--model");
  if (!flags.strategy.empty()) config.set("fit.strategy", flags.strategy, "--strategy");
  if (flags.workers > 0) config.set("fit.workers", flags.workers, "--workers");
  if (flags.steps > 0) config.set("fit.steps", flags.steps, "--steps");
  if (flags.rounds > 0) config.set("fit.fedavg.rounds", flags.rounds, "--rounds");
  if (flags.epochs > 0) config.set("fit.epochs", flags.epochs, "--epochs");
  if (!flags.schedule.empty()) config.set("fit.schedule", flags.schedule, "--schedule");
  return config;
}

std::map<std::string, double> record_metrics(const supervised::FitRecord& record) {
  return {{"test/accuracy", record.test.accuracy},
          {"test/loss", record.test.loss},
          {"train/loss", record.train_loss},
          {"sync/bytes", static_cast<double>(record.sync.bytes)},
          {"sync/rounds", static_cast<double>(record.sync.rounds)},
          {"fit/samples", static_cast<double>(record.samples)},
          {"time/seconds", record.seconds},
          {"fit/batch_size", static_cast<double>(record.batch_size)},
          {"fit/learning_rate", record.learning_rate},
          {"fit/top_eigenvalue", record.top_eigenvalue}};
}

void run_fit(const FitFlags& flags) {
  core::Config config = fit_command_config(flags);
  if (config.get_string("fit.task") == "gan") return run_gan_fit(std::move(config), flags.resume);
  supervised::FitConfig fit = supervised::fit_config_from(config);
  set_torch_threads(config);

  const comm::LaunchEnvironment launch = comm::LaunchEnvironment::from_environment();
  fit.workers = concord::launch::launched_ranks(launch, config, "fit.workers", fit.workers);
  // Everything that can reject the run (the data set above all) comes before the run directory.
  supervised::check_strategy(fit, config);
  const data::TrainTestSplit data = data::load_dataset(fit.dataset, fit.data_dir);
  std::unique_ptr<comm::Communicator> communicator;
  if (launch.is_distributed()) {
    comm::ConnectOptions options = connect_options(config);
    options.config_fingerprint = config.digest();
    options.timeout = fit.timeout();
    communicator = comm::connect(launch, options);
  }
  const bool leader = launch.rank == 0;
  const std::string steps_name = fit.federated() ? "rounds" : "steps";
  const int64_t total = fit.federated() ? fit.rounds : supervised::step_budget(fit, data.train.size());

  const FitResume resume = find_fit_resume(flags.resume, config, kResumeMayChange, fit.workers, steps_name);

  std::optional<RunContext> run;
  std::unique_ptr<core::ProgressBar> progress;
  if (leader) {
    run.emplace(start_run(std::move(config), "fit", resume.reused_run_dir(),
                          fit.dataset + "-" + fit.model + "-" + fit.strategy));
    if (resume.state) spdlog::info("resumed at {} {}", steps_name, resume.step);
    // At step 0 for a restart without a checkpoint: the failed group's rows go.
    if (!resume.reused_run_dir().empty()) run->metrics->resume_at(resume.step);
    spdlog::info("fitting {} on {} ({} train / {} test images) with {} over {} {}, {} {}", fit.model, fit.dataset,
                 data.train.size(), data.test.size(), fit.strategy, fit.workers,
                 communicator ? "processes (" + communicator->backend() + ")" : std::string("threads"), total,
                 steps_name);
    progress = run->make_progress_bar(total, fit.dataset + " " + fit.model + " " + fit.strategy, resume.step);
  }
  const core::Config& run_config = run ? run->config : config;

  supervised::FitCallbacks callbacks;
  callbacks.on_step = [&](int64_t step) {
    if (progress) progress->update(step);
  };
  callbacks.on_evaluation = [&](const supervised::FitRecord& record) {
    run->metrics->log(record.step, record_metrics(record));
    spdlog::info("{} {}: test accuracy {:.4f}, train loss {:.4f}, {} sync rounds, {} bytes{}", steps_name, record.step,
                 record.test.accuracy, record.train_loss, record.sync.rounds, record.sync.bytes,
                 fit.schedule == "fixed" ? std::string()
                                         : fmt::format(", batch {} x {}, lr {:.3g}, top eigenvalue {:.4g}", fit.workers,
                                                       record.batch_size, record.learning_rate, record.top_eigenvalue));
  };
  callbacks.on_checkpoint = [&](int64_t step, const core::Checkpoint& state) {
    save_fit_checkpoint(*run, state, {{steps_name, step}, {"model", fit.model}, {"strategy", fit.strategy}});
  };

  // SIGINT/SIGTERM end the fit within about a quarter second of steps (FitCallbacks::should_stop),
  // that step evaluated and checkpointed, as they end `concord train`; a line says so at once,
  // since evaluating a large model takes a few seconds more.
  std::optional<supervised::FitResult> fitted;
  int stop_signal = 0;
  {
    SignalStop signals;
    bool announced = false;
    callbacks.should_stop = [&signals, &announced] {
      if (!signals.requested()) return false;
      if (!announced) spdlog::warn("stopping: evaluating this step and saving a checkpoint");
      announced = true;
      return true;
    };
    const core::Checkpoint* resume_from = resume.state ? &*resume.state : nullptr;
    try {
      fitted.emplace(communicator
                         ? supervised::fit_replica(fit, run_config, data, *communicator, callbacks, resume_from)
                         : supervised::fit_with_threads(fit, run_config, data, callbacks, resume_from));
    } catch (const core::CheckpointError& error) {
      if (resume.run_dir.empty()) throw;
      throw error.with_path(checkpoint_path(resume.run_dir));
    }
    stop_signal = signals.signal();
  }
  const supervised::FitResult& result = *fitted;
  if (!leader) {
    if (stop_signal != 0) throw ExitStatus{signal_exit_status(stop_signal)};
    return;
  }
  if (progress) progress->finish();
  if (stop_signal != 0) spdlog::warn("stopped by signal at {} {}; checkpoint saved", steps_name, result.final.step);

  const supervised::FitRecord& last = result.final;
  std::printf("\n%-20s %s %s on %s, %d workers\n", "fitted", fit.model.c_str(), fit.strategy.c_str(),
              fit.dataset.c_str(), fit.workers);
  std::printf("%-20s %lld\n", steps_name.c_str(), static_cast<long long>(last.step));
  std::printf("%-20s %.4f\n", "test accuracy", last.test.accuracy);
  if (fit.target_accuracy > 0.0) {
    std::printf("%-20s %lld %s\n", "to target", static_cast<long long>(result.steps_to_target), steps_name.c_str());
  }
  if (fit.schedule != "fixed") {
    std::printf("%-20s %lld rows per worker, learning rate %.3g\n", "final batch",
                static_cast<long long>(last.batch_size), last.learning_rate);
  }
  std::printf("%-20s %lld rounds, %s bytes (rank 0)\n", "communicated", static_cast<long long>(last.sync.rounds),
              core::format_count(last.sync.bytes).c_str());
  std::printf("%-20s %.1f s\n", "wall time", last.seconds);
  std::printf("%-20s %s\n", "run directory", run->run_dir.string().c_str());
  if (stop_signal != 0) {
    std::printf("%-20s %s%s fit --resume %s\n", "continue with", launcher_for_hints(program_for_hints()).c_str(),
                program_for_hints().c_str(), run->run_dir.string().c_str());
    std::fflush(stdout);
    throw ExitStatus{signal_exit_status(stop_signal)};
  }
}

}  // namespace

void add_fit_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("fit",
                                         "Supervised data-parallel training (MNIST, Fashion-MNIST) under a sync "
                                         "strategy, or GAP: GANs swapping discriminators");
  auto flags = std::make_shared<FitFlags>();
  command->add_option("-c,--config", flags->run.config_files, "TOML config file(s), merged in order")
      ->check(CLI::ExistingFile);
  command->add_option("--set", flags->run.overrides, "Override a config key: --set fit.batch_size=64 (repeatable)");
  command->add_option("--seed", flags->run.seed, "Seed (run.seed)")->transform(count_between(0, int64_t{1} << 62));
  command->add_option("--run-root", flags->run.run_root, "Directory for run directories (run.root)");
  command->add_option("--progress", flags->run.progress, "auto, bar, plain or off (run.progress)")
      ->check(CLI::IsMember({"auto", "bar", "plain", "off"}));
  command->add_option("--task", flags->task, "What to train (fit.task): classifier or gan")
      ->check(CLI::IsMember({"classifier", "gan"}));
  command->add_option("--dataset", flags->dataset, "Data set (fit.dataset): mnist or fashion_mnist");
  command->add_option("--model", flags->model,
                      "Classifier (fit.model): mlp, cnn, fedavg_cnn or resnet20; --task gan: gan.model, mlp or conv");
  command->add_option("--strategy", flags->strategy,
                      "Sync strategy (fit.strategy): sync, local_sgd, easgd, gossip, fedavg or fedsgd");
  command->add_option("--workers", flags->workers, "Worker threads (fit.workers)")->transform(count_between(1, 1024));
  command->add_option("--resume", flags->resume, "Continue the fit in this run directory from its last checkpoint");
  command->add_option("--steps", flags->steps, "Optimiser steps per worker (fit.steps; --task gan: gan.steps)")
      ->transform(count_between(1, int64_t{1} << 40));
  command->add_option("--rounds", flags->rounds, "Federated rounds (fit.fedavg.rounds)")
      ->transform(count_between(1, int64_t{1} << 40));
  command->add_option("--epochs", flags->epochs, "Epochs of the training set (fit.epochs; per-step strategies)")
      ->transform(count_between(1, int64_t{1} << 30));
  command->add_option("--schedule", flags->schedule,
                      "Batch size schedule (fit.schedule): fixed, abs (Hessian-adaptive) or absa (abs + FGSM)");
  command->add_option("--gans", flags->gans, "--task gan: generator/discriminator pairs G (gan.pairs)")
      ->transform(count_between(1, 1024));
  command
      ->add_option("--swap-every", flags->swap_every,
                   "--task gan: updates S between discriminator swaps (gan.swap_every)")
      ->transform(count_between(1, int64_t{1} << 40));
  command->callback([flags] { run_fit(*flags); });
}

}  // namespace concord::cli
