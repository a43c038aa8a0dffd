// concord eval: runs a trained policy deterministically (the distribution's mode) and prints the
// mean and standard deviation of the return over K episodes; with --video FILE it films one episode instead.
#include <cstdio>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/episode_video.h"
#include "concord/cli/run_config.h"
#include "concord/cli/trained_agent.h"

namespace concord::cli {
namespace {

struct EvalFlags {
  std::string path;
  int64_t episodes = 0;
  int64_t seed = -1;
  bool stochastic = false;
  int step_limit = policies::runtime::kEvaluationStepLimit;
  std::string video;
};

void run_video(const EvalFlags& flags) {
  const TrainedCheckpoint trained = read_trained_checkpoint(flags.path);
  const uint64_t seed = flags.seed >= 0 ? static_cast<uint64_t>(flags.seed) : evaluation_seed(trained.config);
  const EpisodeVideo video = record_episode_video(trained, flags.video, seed, flags.stochastic, flags.step_limit);
  std::printf("video %s: %lld frames of one episode (return %.2f%s), written in %.2f s\n", video.file.string().c_str(),
              static_cast<long long>(video.frames), video.episode_return,
              video.cut_at_limit ? ", cut at the step limit" : "", video.seconds);
}

void run_eval(const EvalFlags& flags) {
  if (!flags.video.empty()) {
    run_video(flags);
    return;
  }
  const EvaluationReport report = evaluate_trained_checkpoint(
      flags.path, flags.episodes > 0 ? std::optional<int64_t>(flags.episodes) : std::nullopt,
      flags.seed >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(flags.seed)) : std::nullopt, flags.stochastic,
      flags.step_limit);
  std::printf("%s %s after %lld steps: return %.2f +- %.2f over %lld episodes (%s)", report.algo.c_str(),
              report.env_id.c_str(), static_cast<long long>(report.global_step), report.summary.mean,
              report.summary.std, static_cast<long long>(report.episodes),
              report.stochastic ? "stochastic" : "deterministic");
  if (report.cut_at_limit > 0) {
    // Said on the result's own line, so that a mean over cut episodes is never read as a full one.
    std::printf("; %lld of them cut at %d steps, the env having no time limit (--max-episode-steps)",
                static_cast<long long>(report.cut_at_limit), report.step_limit);
  }
  std::printf("\n");
}

}  // namespace

void add_eval_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("eval", "Evaluate a trained policy: mean +- std return over K episodes");
  auto flags = std::make_shared<EvalFlags>();
  command->add_option("path", flags->path, "A run directory or a checkpoint file")->required();
  command->add_option("--episodes", flags->episodes, "Episodes to run (eval.episodes)")
      ->transform(count_between(1, 10000));
  command->add_option("--seed", flags->seed, "Seed of the evaluation environments")
      ->transform(count_between(0, int64_t{1} << 62));
  command->add_flag("--stochastic", flags->stochastic, "Sample actions instead of taking the mode");
  command
      ->add_option("--max-episode-steps", flags->step_limit,
                   "Truncate episodes after this many steps where the env has no time limit (default 108000)")
      ->transform(count_between(1, 1'000'000'000));
  command->add_option("--video", flags->video,
                      "Film one episode to FILE.mp4 or FILE.gif (classic control and MinAtar) instead of evaluating");
  command->callback([flags] { run_eval(*flags); });
}

}  // namespace concord::cli
