#include "concord/policies/runtime/evaluation.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "concord/algos/actor_critic_actor.h"
#include "concord/policies/runtime/collector.h"
#include "concord/policies/runtime/experience_sink.h"

namespace concord::policies::runtime {

namespace {

// The first episode of each env, in env order: what an evaluation reports.
class FirstEpisodes final : public runtime::ExperienceSink {
 public:
  explicit FirstEpisodes(Evaluation& evaluation, int64_t episodes)
      : evaluation_(evaluation), done_(static_cast<size_t>(episodes), false), remaining_(episodes) {
    evaluation_.returns.assign(static_cast<size_t>(episodes), 0.0);
  }
  void record(const runtime::CollectedStep& step) override {
    const envs::Batch& batch = step.batch;
    for (size_t row = 0; row < done_.size(); ++row) {
      if (done_[row] || !batch.has_final[row]) continue;
      evaluation_.returns[row] = batch.episode_returns[row];
      done_[row] = true;
      --remaining_;
      if (evaluation_.step_limit > 0 && batch.truncated[row] && batch.episode_lengths[row] == evaluation_.step_limit) {
        ++evaluation_.cut_at_limit;
      }
    }
  }
  bool finished() const { return remaining_ == 0; }

 private:
  Evaluation& evaluation_;
  std::vector<bool> done_;
  int64_t remaining_;
};

Evaluation evaluate_actor(algos::Actor& actor, torch::Device device, envs::VectorEnvConfig env_config, int64_t episodes,
                          bool stochastic, int step_limit, const envs::Registry& registry) {
  if (episodes < 1) {
    throw std::invalid_argument("evaluate_episodes: episodes must be >= 1, got " + std::to_string(episodes));
  }
  if (step_limit < 1) {
    throw std::invalid_argument("evaluate_episodes: the step limit must be >= 1, got " + std::to_string(step_limit));
  }
  Evaluation evaluation;
  if (!env_config.options.max_episode_steps &&
      registry.make(env_config.env_id, env_config.options)->spec().max_episode_steps == 0) {
    env_config.options.max_episode_steps = step_limit;
    evaluation.step_limit = step_limit;
  }
  env_config.num_envs = static_cast<int>(episodes);
  env_config.batch_size = 0;
  envs::VectorEnv env(env_config, registry);
  runtime::Collector collector(env, device);
  FirstEpisodes first_episodes(evaluation, episodes);
  algos::ActingContext acting;  // global_step < 0: after training
  acting.deterministic = !stochastic;
  while (!first_episodes.finished()) collector.step(actor, acting, first_episodes, nullptr);
  return evaluation;
}

torch::Device device_of(torch::nn::Module& module) {
  const auto parameters = module.parameters();
  return parameters.empty() ? torch::Device(torch::kCPU) : parameters.front().device();
}

}  // namespace

Evaluation evaluate(algos::Learner& learner, envs::VectorEnvConfig env_config, int64_t episodes, bool stochastic,
                    int step_limit, const envs::Registry& registry) {
  return evaluate_actor(learner.actor(), device_of(learner.network()), std::move(env_config), episodes, stochastic,
                        step_limit, registry);
}

std::vector<double> evaluate_episodes(algos::Learner& learner, envs::VectorEnvConfig env_config, int64_t episodes,
                                      bool stochastic, const envs::Registry& registry) {
  return evaluate(learner, std::move(env_config), episodes, stochastic, kEvaluationStepLimit, registry).returns;
}

Evaluation evaluate(nn::ActorCritic model, envs::VectorEnvConfig env_config, int64_t episodes, bool stochastic,
                    int step_limit, const envs::Registry& registry) {
  algos::ActorCriticActor actor(model);
  return evaluate_actor(actor, device_of(*model), std::move(env_config), episodes, stochastic, step_limit, registry);
}

std::vector<double> evaluate_episodes(nn::ActorCritic model, envs::VectorEnvConfig env_config, int64_t episodes,
                                      bool stochastic, const envs::Registry& registry) {
  return evaluate(std::move(model), std::move(env_config), episodes, stochastic, kEvaluationStepLimit, registry)
      .returns;
}

ReturnSummary summarize_returns(const std::vector<double>& returns) {
  ReturnSummary summary;
  summary.count = static_cast<int64_t>(returns.size());
  if (returns.empty()) return summary;
  for (double r : returns) summary.mean += r;
  summary.mean /= static_cast<double>(returns.size());
  double variance = 0.0;
  for (double r : returns) variance += (r - summary.mean) * (r - summary.mean);
  summary.std = std::sqrt(variance / static_cast<double>(returns.size()));
  return summary;
}

}  // namespace concord::policies::runtime
