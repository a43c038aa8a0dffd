#include "concord/cli/gan_fit.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "concord/cli/commands.h"
#include "concord/cli/fit_checkpoint.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/signal_stop.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/comm/launch_environment.h"
#include "concord/core/image_grid.h"
#include "concord/data/dataset_registry.h"
#include "concord/launch/launched_ranks.h"
#include "concord/supervised/fit_config.h"
#include "concord/supervised/gan_config.h"
#include "concord/supervised/gan_training.h"
#include "concord/supervised/sample_quality.h"

namespace concord::cli {
namespace {

// Samples to a row of the PNG grids.
constexpr int64_t kGridColumns = 8;

// A resumed GAN run keeps its run's config.toml; only its length and the progress mode may change.
const std::set<std::string> kResumeMayChange = {"gan.steps", "run.progress"};

std::map<std::string, double> record_metrics(const supervised::GanRecord& record) {
  return {{"train/discriminator_loss", record.discriminator_loss},
          {"train/generator_loss", record.generator_loss},
          {"samples/mean", record.sample_mean},
          {"samples/std", record.sample_std},
          {"gap/swaps", static_cast<double>(record.swaps)},
          {"time/seconds", record.seconds}};
}

std::filesystem::path grid_path(const std::filesystem::path& run_dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%07lld.png", static_cast<long long>(step));
  return run_dir / "samples" / name;
}

}  // namespace

void run_gan_fit(core::Config config, const std::string& resume_flag) {
  supervised::GanConfig gan = supervised::gan_config_from(config);
  const supervised::FitConfig fit = supervised::fit_config_from(config);  // fit.data_dir, and fit.* stays valid
  set_torch_threads(config);

  const comm::LaunchEnvironment launch = comm::LaunchEnvironment::from_environment();
  if (launch.is_distributed()) {
    gan.pairs = concord::launch::launched_ranks(launch, config, "gan.pairs", gan.pairs);
    supervised::validate(gan);
  }
  const FitResume resume = find_fit_resume(resume_flag, config, kResumeMayChange, gan.pairs, "steps");
  // Everything that can reject the run (the data set above all) comes before the run directory.
  const data::TrainTestSplit data = data::load_dataset(fit.dataset, fit.data_dir);
  std::unique_ptr<comm::Communicator> communicator;
  if (launch.is_distributed()) {
    comm::ConnectOptions options = connect_options(config);
    options.config_fingerprint = config.digest();
    options.timeout = fit.timeout();
    communicator = comm::connect(launch, options);
  }
  const bool leader = launch.rank == 0;
  const std::string pairing = gan.swapping() ? "gap" : "independent";

  std::optional<RunContext> run;
  std::unique_ptr<core::ProgressBar> progress;
  if (leader) {
    run.emplace(start_run(std::move(config), "fit", resume.reused_run_dir(),
                          fit.dataset + "-gan-" + gan.model + "-" + pairing));
    std::filesystem::create_directories(run->run_dir / "samples");
    if (resume.state) spdlog::info("resumed at steps {}", resume.step);
    // At step 0 for a restart without a checkpoint: the failed group's rows go.
    if (!resume.reused_run_dir().empty()) run->metrics->resume_at(resume.step);
  }
  std::unique_ptr<supervised::DigitJudge> judge;
  if (gan.score_samples > 0) {
    judge = std::make_unique<supervised::DigitJudge>(data, gan.classifier_steps, gan.seed);
    if (leader) spdlog::info("sample judge: mlp classifier, test accuracy {:.4f}", judge->test_accuracy());
  }
  if (leader) {
    spdlog::info("GAP: {} {} GAN pairs over {}, {} updates each, {}", gan.pairs, gan.model,
                 communicator ? "processes (" + communicator->backend() + ")" : std::string("threads"), gan.steps,
                 gan.swapping() ? "discriminators swapped every " + std::to_string(gan.swap_every) + " updates"
                                : std::string("no swaps"));
    progress = run->make_progress_bar(gan.steps, fit.dataset + " gan " + gan.model + " " + pairing, resume.step);
  }

  supervised::GanCallbacks callbacks;
  callbacks.on_step = [&](int64_t step) {
    if (progress) progress->update(step);
  };
  callbacks.on_record = [&](const supervised::GanRecord& record) {
    run->metrics->log(record.step, record_metrics(record));
    spdlog::info("step {}: discriminator loss {:.4f}, generator loss {:.4f}, samples mean {:.3f} std {:.3f}, {} swaps",
                 record.step, record.discriminator_loss, record.generator_loss, record.sample_mean, record.sample_std,
                 record.swaps);
  };
  callbacks.on_samples = [&](int64_t step, const torch::Tensor& samples) {
    core::write_png(grid_path(run->run_dir, step), core::tile_images(samples, kGridColumns));
  };
  callbacks.on_checkpoint = [&](int64_t step, const core::Checkpoint& state) {
    save_fit_checkpoint(*run, state, {{"task", "gan"}, {"steps", step}, {"model", gan.model}});
  };

  // SIGINT/SIGTERM end the run at its next record step, checkpointed, as they end `concord fit`.
  std::optional<supervised::GanResult> trained;
  int stop_signal = 0;
  {
    SignalStop signals;
    callbacks.should_stop = [&signals] { return signals.requested(); };
    const core::Checkpoint* resume_from = resume.state ? &*resume.state : nullptr;
    try {
      trained.emplace(
          communicator ? supervised::train_gan_pair(gan, data.train, *communicator, callbacks, judge.get(), resume_from)
                       : supervised::train_gans_with_threads(gan, data.train, callbacks, judge.get(), resume_from));
    } catch (const core::CheckpointError& error) {
      if (resume.run_dir.empty()) throw;
      throw error.with_path(checkpoint_path(resume.run_dir));
    }
    stop_signal = signals.signal();
  }
  const supervised::GanResult& result = *trained;
  if (!leader) {
    if (stop_signal != 0) throw ExitStatus{signal_exit_status(stop_signal)};
    return;
  }
  if (progress) progress->finish();
  if (stop_signal != 0) spdlog::warn("stopped by signal at step {}; checkpoint saved", result.final.step);

  const supervised::GanRecord& last = result.final;
  std::printf("\n%-22s %d %s GAN pairs, %s\n", "fitted", gan.pairs, gan.model.c_str(),
              gan.swapping() ? ("GAP, swap every " + std::to_string(gan.swap_every)).c_str() : "no swaps");
  std::printf("%-22s %lld (%lld swaps)\n", "updates per pair", static_cast<long long>(last.step),
              static_cast<long long>(last.swaps));
  std::printf("%-22s %.4f / %.4f\n", "D / G loss", last.discriminator_loss, last.generator_loss);
  std::printf("%-22s mean %.3f std %.3f (data: %.3f, %.3f)\n", "samples", last.sample_mean, last.sample_std,
              result.data_mean, result.data_std);
  if (!result.quality.empty()) {
    std::map<std::string, double> quality_metrics;
    for (size_t pair = 0; pair < result.quality.size(); ++pair) {
      std::printf("%-22s inception-style score %.3f, %lld of 10 classes covered\n",
                  ("pair " + std::to_string(pair)).c_str(), result.quality[pair].inception_score,
                  static_cast<long long>(result.quality[pair].covered_classes));
      quality_metrics["quality/inception_score_pair" + std::to_string(pair)] = result.quality[pair].inception_score;
      quality_metrics["quality/covered_classes_pair" + std::to_string(pair)] =
          static_cast<double>(result.quality[pair].covered_classes);
    }
    run->metrics->log(last.step, quality_metrics);
  }
  std::printf("%-22s %.1f s\n", "wall time", last.seconds);
  std::printf("%-22s %s\n", "run directory", run->run_dir.string().c_str());
  if (stop_signal != 0) {
    std::printf("%-22s %s%s fit --resume %s\n", "continue with", launcher_for_hints(program_for_hints()).c_str(),
                program_for_hints().c_str(), run->run_dir.string().c_str());
    std::fflush(stdout);
    throw ExitStatus{signal_exit_status(stop_signal)};
  }
}

}  // namespace concord::cli
