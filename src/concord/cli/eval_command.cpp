// concord eval: runs a trained policy deterministically (the distribution's mode) and prints the
// mean and standard deviation of the return over K episodes.
#include <cstdio>
#include <memory>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/commands.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/core/checkpoint.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/evaluation.h"

namespace concord::cli {
namespace {

struct EvalFlags {
  std::string path;
  int64_t episodes = 0;
  int64_t seed = -1;
  bool stochastic = false;
};

void run_eval(const EvalFlags& flags) {
  const std::filesystem::path checkpoint_file = resolve_checkpoint(flags.path);
  const core::Checkpoint checkpoint = core::load_checkpoint(checkpoint_file);
  if (!checkpoint.metadata.contains("config")) {
    throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, checkpoint_file,
                                "holds no training config (not written by concord train)");
  }
  core::Config config(concord_schema());
  config.merge_toml(checkpoint.metadata.at("config").get<std::string>(), "'" + checkpoint_file.string() + "'");
  const int64_t episodes = flags.episodes > 0 ? flags.episodes : config.get_int("eval.episodes");
  const uint64_t seed =
      static_cast<uint64_t>(flags.seed >= 0 ? flags.seed : config.get_int("run.seed") + policies::kEvalSeedOffset);
  torch::manual_seed(seed);
  torch::set_num_threads(static_cast<int>(config.get_int("run.torch_threads")));

  envs::VectorEnv probe(vector_env_config(config));
  std::unique_ptr<algos::Learner> learner = algos::make_learner(
      config.get_string("train.algo"), config, probe.spec().observation_space, probe.spec().action_space);
  learner->load(checkpoint);

  envs::VectorEnvConfig env_config = vector_env_config(config);
  env_config.seed = seed;
  const policies::ReturnSummary returns = policies::summarize_returns(
      policies::evaluate_episodes(learner->model(), env_config, episodes, flags.stochastic));
  std::printf("%s %s after %lld steps: return %.2f +- %.2f over %lld episodes (%s)\n",
              config.get_string("train.algo").c_str(), config.get_string("env.id").c_str(),
              static_cast<long long>(checkpoint.metadata.value("global_step", int64_t{0})), returns.mean, returns.std,
              static_cast<long long>(episodes), flags.stochastic ? "stochastic" : "deterministic");
}

}  // namespace

void add_eval_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("eval", "Evaluate a trained policy: mean +- std return over K episodes");
  auto flags = std::make_shared<EvalFlags>();
  command->add_option("path", flags->path, "A run directory or a checkpoint file")->required();
  command->add_option("--episodes", flags->episodes, "Episodes to run (eval.episodes)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}));
  command->add_option("--seed", flags->seed, "Seed of the evaluation environments")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 62));
  command->add_flag("--stochastic", flags->stochastic, "Sample actions instead of taking the mode");
  command->callback([flags] { run_eval(*flags); });
}

}  // namespace concord::cli
