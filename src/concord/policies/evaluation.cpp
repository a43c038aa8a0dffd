#include "concord/policies/evaluation.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "concord/policies/env_actions.h"
#include "concord/policies/observation_rows.h"

namespace concord::policies {

std::vector<double> evaluate_episodes(nn::ActorCritic model, envs::VectorEnvConfig env_config, int64_t episodes,
                                      bool stochastic, const envs::Registry& registry) {
  if (episodes < 1) {
    throw std::invalid_argument("evaluate_episodes: episodes must be >= 1, got " + std::to_string(episodes));
  }
  env_config.num_envs = static_cast<int>(episodes);
  env_config.batch_size = 0;
  envs::VectorEnv env(env_config, registry);
  const envs::Space& action_space = env.spec().action_space;
  const auto device = model->parameters().front().device();
  const EnvActions env_actions(action_space, device);
  std::vector<double> returns(episodes, 0.0);
  std::vector<bool> done(episodes, false);
  int64_t remaining = episodes;
  envs::Batch batch = env.reset();
  torch::NoGradGuard no_grad;
  while (remaining > 0) {
    const auto observations = observation_view(env, batch.observations, episodes).to(device);
    batch = env_actions.step(env, model->act(observations, /*deterministic=*/!stochastic).action);
    for (int64_t row = 0; row < episodes; ++row) {
      if (!done[row] && batch.has_final[row]) {
        returns[row] = batch.episode_returns[row];
        done[row] = true;
        --remaining;
      }
    }
  }
  return returns;
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

}  // namespace concord::policies
