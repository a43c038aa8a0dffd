#include "concord/cli/trained_agent.h"

#include <utility>

#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/envs/registry.h"

namespace concord::cli {

TrainedCheckpoint read_trained_checkpoint(const std::filesystem::path& run_dir_or_file) {
  TrainedCheckpoint trained{resolve_checkpoint(run_dir_or_file), {}, core::Config(concord_schema()), 0};
  trained.checkpoint = core::load_checkpoint(trained.file);
  trained.config = checkpoint_config(trained.checkpoint, trained.file);
  trained.global_step = checked_training_state(trained.checkpoint, trained.config, trained.file).global_step;
  return trained;
}

TrainedAgent restore_trained_agent(const TrainedCheckpoint& trained) {
  const envs::VectorEnvConfig env_config = vector_env_config(trained.config);
  TrainedAgent agent{envs::make_env(env_config.env_id, env_config.options)->spec(), nullptr};
  agent.learner = algos::make_learner(trained.config.get_string("train.algo"), trained.config,
                                      agent.spec.observation_space, agent.spec.action_space);
  try {
    agent.learner->load(trained.checkpoint);
  } catch (const core::CheckpointError& error) {
    throw error.with_path(trained.file);
  }
  return agent;
}

EvaluationReport evaluate_trained_checkpoint(const std::filesystem::path& run_dir_or_file,
                                             std::optional<int64_t> episodes, std::optional<uint64_t> seed,
                                             bool stochastic, int step_limit) {
  const TrainedCheckpoint trained = read_trained_checkpoint(run_dir_or_file);
  const core::Config& config = trained.config;
  EvaluationReport report;
  report.algo = config.get_string("train.algo");
  report.env_id = config.get_string("env.id");
  report.global_step = trained.global_step;
  report.episodes = episodes.value_or(config.get_int("eval.episodes"));
  report.seed = seed.value_or(evaluation_seed(config));
  report.stochastic = stochastic;
  torch::manual_seed(report.seed);
  set_torch_threads(config);
  const TrainedAgent agent = restore_trained_agent(trained);
  envs::VectorEnvConfig env_config = vector_env_config(config);
  env_config.seed = report.seed;
  policies::runtime::Evaluation evaluation =
      policies::runtime::evaluate(*agent.learner, env_config, report.episodes, stochastic, step_limit);
  report.returns = std::move(evaluation.returns);
  report.cut_at_limit = evaluation.cut_at_limit;
  report.step_limit = evaluation.step_limit;
  report.summary = policies::runtime::summarize_returns(report.returns);
  return report;
}

}  // namespace concord::cli
